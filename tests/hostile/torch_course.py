"""A small torch.fx assignment for the one real torch-based case of the grader's tests.

``relu_to_sigmoid(gm)`` turns every ``torch.relu`` node of a traced module into ``torch.sigmoid``.
Tests: the graph (3 points), the outputs (3 points), hidden checks on a second model (4 points).
"""

from __future__ import annotations

from tiny_course import cell

ASSIGNMENT = "fxmini"

SETUP = """import torch
import torch.fx


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2
"""

SOLUTION = """def relu_to_sigmoid(gm):
    ### BEGIN SOLUTION
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.relu:
            node.target = torch.sigmoid
    gm.recompile()
    return gm
    ### END SOLUTION
"""

TEST_GRAPH = """gm = relu_to_sigmoid(torch.fx.symbolic_trace(Net()))
assert isinstance(gm, torch.fx.GraphModule), "return the GraphModule"
targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
assert torch.relu not in targets, "a relu is left"
assert targets.count(torch.sigmoid) == 1, f"want one sigmoid, got {targets}"
"""

TEST_OUTPUT = """net = Net()
gm = relu_to_sigmoid(torch.fx.symbolic_trace(net))
x = torch.randn(3, 4)
torch.testing.assert_close(gm(x), torch.sigmoid(net.lin(x)) * 2)
"""

TEST_HIDDEN = """x = torch.randn(2, 4)
### BEGIN HIDDEN TESTS
class Two(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + torch.relu(-x)


two = relu_to_sigmoid(torch.fx.symbolic_trace(Two()))
assert torch.allclose(two(x), torch.sigmoid(x) + torch.sigmoid(-x)), "second model"
assert torch.equal(two(x), torch.sigmoid(x) + torch.sigmoid(-x)), "second model, exactly"
### END HIDDEN TESTS
"""


def source_notebook() -> dict:
    cells = [
        cell("markdown", "# fxmini\nReplace `torch.relu` by `torch.sigmoid` in a traced graph."),
        cell("code", SETUP, grade=False, solution=False, locked=True, grade_id="setup"),
        cell("code", SOLUTION, grade=False, solution=True, locked=False, grade_id="answer"),
        cell(
            "code",
            TEST_GRAPH,
            grade=True,
            solution=False,
            locked=True,
            points=3,
            grade_id="t_graph",
        ),
        cell(
            "code", TEST_OUTPUT, grade=True, solution=False, locked=True, points=3, grade_id="t_out"
        ),
        cell(
            "code", TEST_HIDDEN, grade=True, solution=False, locked=True, points=4, grade_id="t_hid"
        ),
    ]
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "fx-course", "display_name": "Python 3 (fx-course)"}},
        "cells": cells,
    }


CORRECT = SOLUTION.replace("    ### BEGIN SOLUTION\n", "").replace("    ### END SOLUTION\n", "")

# A correct answer that warns (torch-style) and writes to stderr: warnings never cost points.
NOISY = "import sys, warnings\n\n\n" + CORRECT.replace(
    "    gm.recompile()\n",
    "    warnings.warn('relu_to_sigmoid is deprecated', FutureWarning)\n"
    "    print('working...', file=sys.stderr)\n    gm.recompile()\n",
)

# Leaves the graph alone and returns a module whose outputs are tensors that claim to be close
# to anything (a tensor subclass overriding __torch_function__).
TENSOR_LIAR = """class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


class Wrapper(torch.nn.Module):
    def __init__(self, gm):
        super().__init__()
        self.gm = gm
        self.graph = gm.graph

    def forward(self, x):
        return self.gm(x).as_subclass(Liar)


def relu_to_sigmoid(gm):
    return Wrapper(gm)
"""

# Leaves the graph alone and patches torch's comparison functions.
TORCH_PATCHER = """import torch.testing


def relu_to_sigmoid(gm):
    return gm


torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
"""
