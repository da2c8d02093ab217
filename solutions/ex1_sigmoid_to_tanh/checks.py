"""Exercise 1's inputs and checks, on the trusted side only (never in the sandbox, never
released). `inputs` makes each test's models from the submission's seed (weights, width, sample)
and sends them as descriptions; each check compares the graph that comes back, node for node,
with the reference rewrite of the graph it sent, and runs both here on the sample. Each check
covers its test cell's visible asserts too, so that the sandboxed verdict and plain nbgrader's
agree.
"""

import operator

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from grader.safegrade.graphs import MODULE_NAMES, build, describe, function_name


class Wrap(nn.Module):
    """A linear layer, then `activation` (the spelling under test), then * 2."""

    def __init__(self, width, activation):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.activation = activation

    def forward(self, x):
        return self.activation(self.lin(x)) * 2


class Deep(nn.Module):
    """nn.Sigmoid three levels deep, inside nn.Sequential and nn.ModuleList."""

    def __init__(self, width):
        super().__init__()
        inner = nn.Sequential(nn.Linear(width, width), nn.Sigmoid())
        self.encoder = nn.Sequential(nn.Linear(width, width), inner)
        self.heads = nn.ModuleList(nn.Sequential(nn.Linear(width, 2), nn.Sigmoid()) for _ in "ab")

    def forward(self, x):
        h = self.encoder(x)
        return torch.cat([head(h) for head in self.heads], dim=1)


class Mixed(nn.Module):
    """Sigmoids among nodes that must stay as they are."""

    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.act = nn.Sigmoid()
        self.register_buffer("scale", torch.full((width,), 0.5))

    def forward(self, x):
        h = torch.relu(self.lin(x)) + self.scale
        gated = self.act(h) * torch.sigmoid(h).sum(dim=1, keepdim=True)
        return torch.cat([gated, h.sigmoid()], dim=1)


def sigmoid_in_place(t):
    t.sigmoid_()
    return t


def by_hand(width) -> torch.fx.GraphModule:
    """sigmoid(x) * 2.0 as a call_function node of F.sigmoid (tracing never makes one)."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(operator.mul, (graph.call_function(F.sigmoid, (x,)), 2.0)))
    return torch.fx.GraphModule(nn.Module(), graph)


def chain(t):
    return torch.special.expit(F.sigmoid(torch.sigmoid(t))).sigmoid()


# The models each test sends: the checks' name for each, and how to make it for a width.
CASES = {
    "test_torch_sigmoid": {"torch.sigmoid": lambda w: Wrap(w, torch.sigmoid)},
    "test_method_and_module": {
        "x.sigmoid()": lambda w: Wrap(w, lambda t: t.sigmoid()),
        "nn.Sigmoid()": lambda w: Wrap(w, nn.Sigmoid()),
        "nn.Sigmoid nested three levels deep": Deep,
    },
    "test_functional_spellings": {
        "torch.special.expit": lambda w: Wrap(w, torch.special.expit),
        "a call_function node of F.sigmoid": by_hand,
        "a chain": lambda w: Wrap(w, chain),
    },
    "test_in_place": {
        "x.sigmoid_()": lambda w: Wrap(w, lambda t: t.sigmoid_()),
        "x.sigmoid_() with its result ignored": lambda w: Wrap(w, sigmoid_in_place),
    },
    "test_graph_hygiene": {
        "torch.sigmoid": lambda w: Wrap(w, torch.sigmoid),
        "a model without a sigmoid": lambda w: Wrap(w, torch.relu),
        "Mixed": Mixed,
    },
}


def inputs(grade_id: str, seed: int) -> dict:
    """Each model of the test, traced, with weights and a sample drawn from the seed."""
    generator = torch.Generator().manual_seed(seed)
    width = 3 + seed % 4
    made = {}
    for what, make in CASES[grade_id].items():
        model = make(width)
        with torch.no_grad():
            for tensor in model.state_dict().values():
                tensor.copy_(torch.randn(tensor.shape, generator=generator))
        gm = model if isinstance(model, torch.fx.GraphModule) else torch.fx.symbolic_trace(model)
        sample = torch.randn(3, width, generator=generator)
        made[what] = {"graph": describe(gm, state=True), "sample": sample}
    return made


def reference(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The rewrite the exercise asks for."""
    functions = {torch.sigmoid: torch.tanh, F.sigmoid: torch.tanh, torch.special.expit: torch.tanh}
    methods = {"sigmoid": "tanh", "sigmoid_": "tanh_"}
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in functions:
            node.target = functions[node.target]
        elif node.op == "call_method" and node.target in methods:
            node.target = methods[node.target]
        elif node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Sigmoid):
            parent, _, name = node.target.rpartition(".")
            setattr(gm.get_submodule(parent), name, nn.Tanh())
    gm.recompile()
    return gm


SIGMOIDS = {("call_function", function_name(f)) for f in (torch.sigmoid, F.sigmoid)} | {
    ("call_function", function_name(torch.special.expit)),
    ("call_method", "sigmoid"),
    ("call_method", "sigmoid_"),
}
TANHS = {("call_function", function_name(torch.tanh)), ("call_method", "tanh")}
SIGMOID_MODULE, TANH_MODULE = MODULE_NAMES[id(nn.Sigmoid)], MODULE_NAMES[id(nn.Tanh)]


def normal(node: dict) -> tuple:
    """What a node computes: a tanh as a function, method or module is one and the same."""
    op, target = node.get("op"), node.get("target")
    if (op, target) in TANHS or (op == "call_module" and node.get("module") == TANH_MODULE):
        return ("tanh", node.get("args"), node.get("kwargs"))
    return (op, target, node.get("args"), node.get("kwargs"), node.get("module"))


def is_sigmoid(node: dict) -> bool:
    return (node["op"], node["target"]) in SIGMOIDS or node.get("module") == SIGMOID_MODULE


def same(got, want) -> bool:
    return isinstance(got, torch.Tensor) and got.dtype == want.dtype and torch.equal(got, want)


def check_case(what: str, case: dict, run: dict, outputs=True, sigmoids=True) -> None:
    """The returned graph is the reference rewrite of the graph sent, node for node (without
    `sigmoids`, the nodes that are not sigmoids only); with `outputs`, it and the module the pass
    returned give the reference's output."""
    graph, sent = run["graph"], case["graph"]
    assert graph.get("type") == "GraphModule", f"return a GraphModule, not {graph.get('type')}"
    received = [normal(node) for node in run["received"]]
    assert received == [normal(node) for node in sent["nodes"]], (
        f"{what}: the graph your pass was given is not the one the grader sent"
    )
    left = [node["name"] for node in graph["nodes"] if is_sigmoid(node)]
    assert not (sigmoids and left), (
        f"{what}: the rewritten graph still computes a sigmoid in {left}"
    )
    expected = reference(build(sent))
    want, got = [normal(n) for n in describe(expected)["nodes"]], list(map(normal, graph["nodes"]))
    assert len(got) == len(want), f"{what}: the pass added or removed nodes"
    for old, new, before in zip(want, got, sent["nodes"], strict=True):
        if not sigmoids and is_sigmoid(before):
            continue
        kind = "a sigmoid must become a tanh of" if is_sigmoid(before) else "a node changed:"
        assert new == old, f"{what}: {kind} {before['name']} should be {old[:3]}, not {new[:3]}"
    if outputs:
        with torch.no_grad():
            want_output = expected(case["sample"].clone())
            rebuilt = build(graph, sent)(case["sample"].clone())
        assert same(rebuilt, want_output) and same(run["output"], want_output), (
            f"{what}: the output differs from the tanh model's"
        )


def check_all(data: dict, cases: dict, outputs: bool = True) -> None:
    for what, case in cases.items():
        check_case(what, case, data[what], outputs=outputs)


def test_torch_sigmoid(data, cases):
    check_all(data, cases, outputs=False)


def test_method_and_module(data, cases):
    check_all(data, cases)


def test_functional_spellings(data, cases):
    check_all(data, cases)


def test_in_place(data, cases):
    check_all(data, cases)


def test_graph_hygiene(data, cases):
    graph = data["torch.sigmoid"]["graph"]
    assert graph.get("type") == "GraphModule", f"return a GraphModule, not {graph.get('type')}"
    assert graph["lint"] is None, f"gm.graph.lint() fails: {graph['lint']}"
    stale = graph["code"] != graph["graph_code"]
    assert not stale, "gm.code does not match the graph: call gm.recompile() after editing it"
    mixed = cases.pop("Mixed")  # its sigmoids are other tests' business: the rest must stay
    check_all(data, cases)
    check_case("Mixed", mixed, data["Mixed"], outputs=False, sigmoids=False)
