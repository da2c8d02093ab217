# Generated from solutions/ex1_sigmoid_to_tanh/verify.py by `make release`; course maintainers:
# edit that file, not this one.
"""The checks of Exercise 1's test cells, and their model, Wrap. The cells call them on the models
they build; the grader calls the very same functions on the graph your pass returned for its own
hidden models. Each raises an AssertionError that says what to fix.
"""

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

SIGMOID_FUNCTIONS = (torch.sigmoid, F.sigmoid, torch.special.expit)
SIGMOID_METHODS = ("sigmoid", "sigmoid_")
# Every spelling of tanh as a function node: the same computation, so all are accepted.
TANH_FUNCTIONS = (torch.tanh, F.tanh, torch.Tensor.tanh)


class Wrap(nn.Module):
    """A linear layer, then `activation` (the spelling under test), then * 2. Its weights are
    drawn after torch.manual_seed(0): the same whatever the activation."""

    def __init__(self, activation, width: int = 4):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(width, width)
        self.activation = activation

    def forward(self, x):
        return self.activation(self.lin(x)) * 2


def misnamed() -> torch.fx.GraphModule:
    """A graph whose names mislead, as a pass may name the nodes it makes: a ReLU node named
    `sigmoid`, then a sigmoid named `gate`. A rewrite tells nodes apart by op and target."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    relu = graph.create_node("call_function", torch.relu, (x,), name="sigmoid")
    graph.output(graph.create_node("call_function", torch.sigmoid, (relu,), name="gate"))
    return torch.fx.GraphModule(nn.Module(), graph)


def check_returns_module(kind: str) -> None:
    """kind: the type name of what the pass returned."""
    assert kind == "GraphModule", f"return a GraphModule, not {kind}"


def is_sigmoid(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    if node.op == "call_function":
        return any(node.target is f for f in SIGMOID_FUNCTIONS)
    if node.op == "call_method":
        return node.target in SIGMOID_METHODS
    return node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Sigmoid)


def is_tanh(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    """A tanh as a function, a method or a module: one and the same."""
    if node.op == "call_function":
        return any(node.target is f for f in TANH_FUNCTIONS)
    if node.op == "call_method":
        return node.target == "tanh"
    return node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Tanh)


def computes(gm: torch.fx.GraphModule, names: list[str]) -> list[tuple]:
    """What each node of gm computes, in order: (op, target, arguments, submodule type), or
    ("tanh", arguments) for any tanh. A node among the arguments is named after the node at its
    position in `names` (the original graph's): a new node in place of an old one is the same."""
    nodes = list(gm.graph.nodes)
    at = {node: names[i] if i < len(names) else node.name for i, node in enumerate(nodes)}
    found = []
    for node in nodes:
        args = torch.fx.node.map_arg((node.args, node.kwargs), at.__getitem__)
        if is_tanh(gm, node):
            found.append(("tanh", args))
        else:
            module = gm.get_submodule(node.target) if node.op == "call_module" else None
            kind = None if module is None else type(module).__name__
            found.append((node.op, node.target, args, kind))
    return found


def tanh_of(form: tuple) -> tuple:
    """What a sigmoid node must become: x.sigmoid_() an in-place x.tanh_(), the others a tanh."""
    if form[:2] == ("call_method", "sigmoid_"):
        return ("call_method", "tanh_", form[2], None)
    return ("tanh", form[2])


def target_name(target) -> str:
    """A node's target as `print(graph)` names it: a function with its module (torch.tanh,
    math.tanh), so two functions of the same name never read alike."""
    return target if isinstance(target, str) else torch.fx.Node._pretty_print_target(target)


def shown(form: tuple) -> str:
    """A node as computes() gives it, in a message."""
    if form[0] == "tanh":
        call, (args, kwargs) = "a tanh (torch.tanh, F.tanh, x.tanh() or nn.Tanh) of ", form[1]
    else:
        call, (args, kwargs) = f"{form[0]} {target_name(form[1])}", form[2]
    return f"{call}{args}" + (f" {kwargs}" if kwargs else "")


def check_rewrite(original, rewritten, what: str, others_only: bool = False) -> None:
    """rewritten (what the pass made of a copy of original) computes a tanh wherever original
    computes a sigmoid, of the same arguments, and every other node as original does, in the
    same order. With others_only, only the nodes that are not sigmoids are checked."""
    check_returns_module(type(rewritten).__name__)
    left = [node.name for node in rewritten.graph.nodes if is_sigmoid(rewritten, node)]
    assert others_only or not left, (
        f"{what}: the rewritten graph still computes a sigmoid in {left}"
    )
    names = [node.name for node in original.graph.nodes]
    before, after = computes(original, names), computes(rewritten, names)
    assert len(after) == len(before), f"{what}: the pass added or removed nodes"
    for name, node, old, new in zip(names, original.graph.nodes, before, after, strict=True):
        sigmoid = is_sigmoid(original, node)
        if others_only and sigmoid:
            continue
        want = tanh_of(old) if sigmoid else old
        kind = "a sigmoid must become a tanh of the same input:" if sigmoid else "a node changed:"
        assert new == want, f"{what}: {kind} {name} should be {shown(want)}, not {shown(new)}"


def check_same_output(got, expected: torch.Tensor, what: str, hint: str = "") -> None:
    same = isinstance(got, torch.Tensor) and got.dtype == expected.dtype
    assert same and torch.equal(got, expected), (
        f"{what}: the output differs from the tanh model's{hint}"
    )


def check_against(rewritten, tanh_model, x: torch.Tensor, what: str) -> torch.Tensor:
    """The rewritten module gives exactly what the model written with tanh gives on x; returns
    that output. A module whose code is not its graph's hears so with the difference."""
    with torch.no_grad():
        expected = tanh_model(x.clone())
        got = rewritten(x.clone())
    found = hygiene(rewritten) if isinstance(rewritten, torch.fx.GraphModule) else {}
    stale = found.get("code") != found.get("graph_code")
    hint = (
        " (gm.code is not the code of its graph now: was gm.recompile() called?)" if stale else ""
    )
    check_same_output(got, expected, what, hint)
    return expected


def hygiene(gm) -> dict:
    """What check_hygiene reads of a module: why its graph does not lint (None if it does), its
    code, and the code its graph generates now."""
    try:
        gm.graph.lint()
        error = None
    except Exception as exc:  # noqa: BLE001 - reported by check_hygiene
        error = f"{type(exc).__name__}: {exc}"
    return {"lint": error, "code": gm.code, "graph_code": gm.graph.python_code("self").src}


def check_hygiene(found: dict) -> None:
    assert found["lint"] is None, f"gm.graph.lint() fails: {found['lint']}"
    stale = found["code"] != found["graph_code"]
    assert not stale, "gm.code does not match the graph: call gm.recompile() after editing it"


try:
    from fxcourse.results import record_cells
except (ImportError, OSError):
    pass
else:
    record_cells()
