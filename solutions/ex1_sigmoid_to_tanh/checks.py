"""Exercise 1's inputs and checks, on the trusted side only (never in the sandbox, never
released). `inputs` makes each test's models from the submission's seed (weights, width, sample)
and sends them as descriptions; each check rebuilds the graph that comes back and calls on it
the functions of verify.py that the test cells call on their own models (node for node against
the graph sent), then compares outputs with the reference rewrite's here, on the sample.
"""

import operator
import re

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from grader.safegrade.probing import sibling

verify = sibling(__file__, "verify")  # the instructor's copy: the checks the test cells call
GRAPHS = sibling(__file__, "probes").GRAPHS  # what this exercise's graphs may use
Wrap = verify.Wrap  # the test cells' model: a linear layer, the activation under test, * 2
# The rewrite the exercise asks for: the notebook's solution (solution.py, by `make chapters`).
reference = sibling(__file__, "solution").replace_sigmoid_with_tanh


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


def lookalikes() -> nn.Sequential:
    """Two modules whose class names end in "igmoid" and that compute no sigmoid."""
    return nn.Sequential(nn.Hardsigmoid(), nn.LogSigmoid())


def function_lookalikes(t):
    """The functions of the two lookalikes: their names hold "sigmoid" (red team redQ7: a pass
    that matched function names turned them into tanh and passed)."""
    return F.logsigmoid(F.hardsigmoid(t))


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
    "test_torch_sigmoid": {"torch.sigmoid": lambda w: Wrap(torch.sigmoid, w)},
    "test_method_and_module": {
        "x.sigmoid()": lambda w: Wrap(lambda t: t.sigmoid(), w),
        "nn.Sigmoid()": lambda w: Wrap(nn.Sigmoid(), w),
        "nn.Sigmoid nested three levels deep": Deep,
    },
    "test_functional_spellings": {
        "torch.special.expit": lambda w: Wrap(torch.special.expit, w),
        "a call_function node of F.sigmoid": by_hand,
        "a chain": lambda w: Wrap(chain, w),
    },
    "test_in_place": {
        "x.sigmoid_()": lambda w: Wrap(lambda t: t.sigmoid_(), w),
        "x.sigmoid_() with its result ignored": lambda w: Wrap(sigmoid_in_place, w),
    },
    "test_graph_hygiene": {
        "torch.sigmoid": lambda w: Wrap(torch.sigmoid, w),
        "a model without a sigmoid": lambda w: Wrap(torch.relu, w),
        "nn.Hardsigmoid and nn.LogSigmoid, no sigmoids": lambda w: Wrap(lookalikes(), w),
        "F.hardsigmoid and F.logsigmoid, no sigmoids": lambda w: Wrap(function_lookalikes, w),
        "Mixed": Mixed,
        "misnamed nodes": lambda w: verify.misnamed(),
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
        made[what] = {"graph": GRAPHS.describe(gm, state=True), "sample": sample}
    return made


def same_nodes(received: list, sent: list) -> bool:
    """The graph the pass was given (described where it ran) is the one sent."""
    keys = ("op", "target", "args", "kwargs", "module")
    return [[n.get(k) for k in keys] for n in received] == [[n.get(k) for k in keys] for n in sent]


# How the description names a call of a function no vocabulary holds
# (grader/safegrade/graph_data.py), here one of in-place tanh: torch.tanh_, torch.Tensor.tanh_,
# torch.ops.aten.tanh_.default.
IN_PLACE_TANH = re.compile(r"<not allowed: ((?:[\w.]+\.)?tanh_(?:\.\w+)?)>")


def check_no_in_place_tanh(graph: dict, sent: dict, what: str) -> None:
    """A function node of in-place tanh gets a reason, before the builder refuses it as a function
    the grader never runs: where the model computed a sigmoid out of place, torch.tanh_ would
    overwrite the sigmoid's input, which other nodes and the caller may still read (the sigmoid
    left it as it was); for x.sigmoid_() the task asks for the method x.tanh_()."""
    nodes, sent_nodes = graph.get("nodes"), sent.get("nodes", [])
    for index, node in enumerate(nodes if isinstance(nodes, list) else []):
        target = node.get("target") if isinstance(node, dict) else None
        found = IN_PLACE_TANH.fullmatch(target) if isinstance(target, str) else None
        if not found or node.get("op") != "call_function":
            continue
        was = sent_nodes[index] if index < len(sent_nodes) else {}
        if (was.get("op"), was.get("target")) == ("call_method", "sigmoid_"):
            why = (
                "the exercise turns x.sigmoid_() into the method x.tanh_() (the task's table), "
                "the one in-place tanh the grader runs"
            )
        else:
            why = (
                "an in-place tanh is no replacement for a sigmoid that computes a new tensor: "
                "it overwrites its input, which the sigmoid left as it was, so every other node "
                "(and the caller) reading that input would get its tanh instead; use torch.tanh, "
                "F.tanh, x.tanh() or nn.Tanh"
            )
        raise AssertionError(f"{what}: node {node.get('name')} calls {found[1]}: {why}")


def check_case(what: str, case: dict, run: dict, outputs=True, others_only=False) -> None:
    """verify's checks on the graph that came back, rebuilt here, against the graph sent; with
    `outputs`, the rebuilt graph and the module the pass returned (its output, a claim) give the
    reference rewrite's output on the sample."""
    graph, sent = run["graph"], case["graph"]
    verify.check_returns_module(graph.get("type"))
    assert same_nodes(run["received"], sent["nodes"]), (
        f"{what}: the graph your pass was given is not the one the grader sent"
    )
    check_no_in_place_tanh(graph, sent, what)
    rewritten = GRAPHS.build(graph, sent)
    verify.check_rewrite(GRAPHS.build(sent), rewritten, what, others_only=others_only)
    if outputs:
        reference_output = reference(GRAPHS.build(sent))
        expected = verify.check_against(rewritten, reference_output, case["sample"], what)
        verify.check_same_output(run["output"], expected, what)


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
    verify.check_returns_module(graph.get("type"))
    verify.check_hygiene(graph)
    mixed = cases.pop("Mixed")  # its sigmoids are other tests' business: the rest must stay
    check_all(data, cases)
    check_case("Mixed", mixed, data["Mixed"], outputs=False, others_only=True)
