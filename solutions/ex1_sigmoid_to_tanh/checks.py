"""Exercise 1's checks: judge the data probes.py returned. They run only in the grader (or in
the kernel under plain nbgrader), never in the sandbox; the expected outputs come from the same
models written with tanh, computed here. Each check covers its test cell's visible asserts too,
so a cell's sandboxed verdict and its verdict under plain nbgrader agree.
"""

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from grader.safegrade.data import Ref
from grader.safegrade.probing import describe, sibling, target_name

probes = sibling(__file__, "probes")
Wrap, Deep = probes.Wrap, probes.Deep

# For each model a probe rewrites, the same model written with tanh.
TANH_MODELS = {
    "x.sigmoid()": lambda: Wrap(lambda t: t.tanh()),
    "nn.Sigmoid()": lambda: Wrap(nn.Tanh()),
    "nn.Sigmoid nested three levels deep": lambda: Deep(nn.Tanh),
    "torch.special.expit": lambda: Wrap(torch.tanh),
    "a call_function node of F.sigmoid": lambda: lambda t: torch.tanh(t) * 2.0,
    "a chain": lambda: Wrap(lambda t: torch.tanh(torch.tanh(torch.tanh(t))).tanh()),
    "x.sigmoid_()": lambda: Wrap(lambda t: t.tanh_()),
    "x.sigmoid_() with its result ignored": lambda: Wrap(probes.tanh_in_place),
    "torch.sigmoid": lambda: Wrap(torch.tanh),
    "a model without a sigmoid": lambda: Wrap(torch.relu),
}


SIGMOIDS = {
    ("call_function", name)
    for name in map(target_name, (torch.sigmoid, F.sigmoid, torch.special.expit))
} | {("call_method", "sigmoid"), ("call_method", "sigmoid_")}


def check_graph_module(graph: dict) -> None:
    assert graph.get("type") == "GraphModule", f"return a GraphModule, not {graph.get('type')}"


def sigmoids_left(graph: dict) -> list[str]:
    """The nodes of the rewritten graph that still compute a sigmoid."""
    sigmoid_module = f"{nn.Sigmoid.__module__}.{nn.Sigmoid.__qualname__}"
    return [
        node["name"]
        for node in graph["nodes"]
        if (node["op"], node["target"]) in SIGMOIDS or node.get("module") == sigmoid_module
    ]


def check_outputs(runs: dict) -> None:
    """Every rewritten model gives exactly what the model written with tanh gives."""
    for what, run in runs.items():
        if what not in TANH_MODELS:
            continue
        check_graph_module(run["graph"])
        left = sigmoids_left(run["graph"])
        assert not left, f"{what}: the rewritten graph still computes a sigmoid in {left}"
        with torch.no_grad():
            expected = TANH_MODELS[what]()(probes.sample())
        got = run["output"]
        same = isinstance(got, torch.Tensor) and got.shape == expected.shape
        assert same and torch.equal(got, expected), (
            f"{what}: the output differs from the tanh model's"
        )


def layout(graph: dict) -> list[tuple]:
    return [(n["op"], n["target"], n["args"], n["kwargs"]) for n in graph["nodes"]]


def test_torch_sigmoid(data):
    graph = data["graph"]
    check_graph_module(graph)
    calls = [node for node in graph["nodes"] if node["op"] == "call_function"]
    targets = [node["target"] for node in calls]
    assert target_name(torch.sigmoid) not in targets, "a torch.sigmoid node is still in the graph"
    tanh = target_name(torch.tanh)
    assert targets.count(tanh) == 1, f"expected one torch.tanh node, found targets {targets}"
    names = [
        graph["nodes"][a.position]["name"] if isinstance(a, Ref) else str(a)
        for a in calls[targets.index(tanh)]["args"]
    ]
    assert names == ["lin"], "the tanh must read what the sigmoid read"


def test_method_and_module(data):
    check_outputs(data)


def test_functional_spellings(data):
    check_outputs(data)


def test_in_place(data):
    check_outputs(data)


def test_graph_hygiene(data):
    graph = data["torch.sigmoid"]["graph"]
    check_graph_module(graph)
    assert graph["lint"] is None, f"gm.graph.lint() fails: {graph['lint']}"
    stale = graph["code"] != graph["graph_code"]
    assert not stale, "gm.code does not match the graph: call gm.recompile() after editing it"
    check_outputs(data)
    before, after = (
        layout(describe(torch.fx.symbolic_trace(probes.Mixed()))),
        layout(data["Mixed"]["graph"]),
    )
    assert len(after) == len(before), "the pass added or removed nodes"
    sigmoids = (target_name(torch.sigmoid), "sigmoid", "act")
    for old, new in zip(before, after, strict=True):
        if old[1] not in sigmoids:
            assert new == old, f"a node that is not a sigmoid changed: {old} became {new}"
    plain = layout(describe(torch.fx.symbolic_trace(Wrap(torch.relu))))
    assert layout(data["a model without a sigmoid"]["graph"]) == plain, (
        "a sigmoid-free graph changed"
    )
