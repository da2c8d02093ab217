"""Exercise 1's probes: call the learner's replace_sigmoid_with_tanh on the tests' models and
return what came back as data (a graph description, outputs). They run beside the learner's code
(in the sandbox, or in the kernel under plain nbgrader), so they hold no expected values: those
are in checks.py, which only the grader runs. One function per graded cell, named by grade_id.
"""

import operator

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from grader.safegrade.probing import describe, learner


class Wrap(nn.Module):
    """A linear layer, then `activation` (the spelling under test), then * 2."""

    def __init__(self, activation):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)
        self.activation = activation

    def forward(self, x):
        return self.activation(self.lin(x)) * 2


class Deep(nn.Module):
    """`activation()` three levels deep, inside nn.Sequential and nn.ModuleList."""

    def __init__(self, activation):
        super().__init__()
        torch.manual_seed(0)
        self.encoder = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), activation()))
        self.heads = nn.ModuleList(nn.Sequential(nn.Linear(4, 2), activation()) for _ in range(2))

    def forward(self, x):
        h = self.encoder(x)
        return torch.cat([head(h) for head in self.heads], dim=1)


class Mixed(nn.Module):
    """Sigmoids among nodes that must stay as they are."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)
        self.act = nn.Sigmoid()
        self.register_buffer("scale", torch.full((4,), 0.5))

    def forward(self, x):
        h = torch.relu(self.lin(x)) + self.scale
        gated = self.act(h) * torch.sigmoid(h).sum(dim=1, keepdim=True)
        return torch.cat([gated, h.sigmoid()], dim=1)


def sigmoid_in_place(t):
    t.sigmoid_()
    return t


def tanh_in_place(t):
    t.tanh_()
    return t


def by_hand() -> torch.fx.GraphModule:
    """sigmoid(x) * 2.0 as a call_function node of F.sigmoid (tracing never makes one)."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(operator.mul, (graph.call_function(F.sigmoid, (x,)), 2.0)))
    return torch.fx.GraphModule(nn.Module(), graph)


def sample() -> torch.Tensor:
    return torch.randn(3, 4, generator=torch.Generator().manual_seed(0))


# The models each test rewrites: what the learner's pass gets, and the checks' name for it.
CASES = {
    "test_method_and_module": {
        "x.sigmoid()": lambda: Wrap(lambda t: t.sigmoid()),
        "nn.Sigmoid()": lambda: Wrap(nn.Sigmoid()),
        "nn.Sigmoid nested three levels deep": lambda: Deep(nn.Sigmoid),
    },
    "test_functional_spellings": {
        "torch.special.expit": lambda: Wrap(torch.special.expit),
        "a call_function node of F.sigmoid": by_hand,
        "a chain": lambda: Wrap(
            lambda t: torch.special.expit(F.sigmoid(torch.sigmoid(t))).sigmoid()
        ),
    },
    "test_in_place": {
        "x.sigmoid_()": lambda: Wrap(lambda t: t.sigmoid_()),
        "x.sigmoid_() with its result ignored": lambda: Wrap(sigmoid_in_place),
    },
    "test_graph_hygiene": {
        "torch.sigmoid": lambda: Wrap(torch.sigmoid),
        "a model without a sigmoid": lambda: Wrap(torch.relu),
        "Mixed": Mixed,
    },
}


def rewrite(namespace: dict, model) -> dict:
    """The learner's pass on a traced (or hand-built) model: the graph, and the output on
    sample() computed without gradients (the pass may edit tensors in place)."""
    gm = model if isinstance(model, torch.fx.GraphModule) else torch.fx.symbolic_trace(model)
    gm = learner(namespace, "replace_sigmoid_with_tanh")(gm)
    with torch.no_grad():
        return {"graph": describe(gm), "output": gm(sample())}


def test_torch_sigmoid(namespace):
    gm = torch.fx.symbolic_trace(Wrap(torch.sigmoid))
    return {"graph": describe(learner(namespace, "replace_sigmoid_with_tanh")(gm))}


def test_method_and_module(namespace):
    return {
        what: rewrite(namespace, make()) for what, make in CASES["test_method_and_module"].items()
    }


def test_functional_spellings(namespace):
    return {
        what: rewrite(namespace, make())
        for what, make in CASES["test_functional_spellings"].items()
    }


def test_in_place(namespace):
    return {what: rewrite(namespace, make()) for what, make in CASES["test_in_place"].items()}


def test_graph_hygiene(namespace):
    return {what: rewrite(namespace, make()) for what, make in CASES["test_graph_hygiene"].items()}
