"""Exercise 2's probes: rebuild each graph the grader sent (a description) and return what the
learner's dump_nodes makes of it, or the graph merge returns. They run beside the learner's code
and hold no graphs or expected values: those are made and judged in checks.py.
"""

import operator

import torch
import torch.nn as nn

from grader.safegrade.graph_data import Vocabulary, linear_arguments
from grader.safegrade.probing import learner

# What this exercise's graphs may use, on both sides (checks.py reads it from here). Made when
# this file runs: in the sandbox, before any learner's cell.
GRAPHS = Vocabulary(
    functions=(operator.add, operator.mul, torch.special.expit, torch.add, torch.cat, torch.neg),
    methods=("relu", "sum", "to"),
    modules={nn.Linear: linear_arguments, nn.ReLU: None, nn.Sigmoid: None, nn.Tanh: None},
)


def dumps(namespace: dict, inputs: dict) -> dict:
    dump_nodes = learner(namespace, "dump_nodes")
    return {name: dump_nodes(GRAPHS.build(graph, codegen=True)) for name, graph in inputs.items()}


def test_merge(namespace: dict, inputs: dict) -> dict:
    """merge's graph for each case, as a description (with its code and its graph's code)."""
    merge = learner(namespace, "merge")
    return {
        name: GRAPHS.describe(
            merge(GRAPHS.build(case["graph"], codegen=True), case["a"], case["b"])
        )
        for name, case in inputs.items()
    }


test_records = test_targets = test_arguments = test_users = test_refers_to = dumps
