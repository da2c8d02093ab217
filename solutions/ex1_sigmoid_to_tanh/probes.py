"""Exercise 1's probe: rebuild each model the grader sent (a graph description and its weights),
describe it as received, run the learner's replace_sigmoid_with_tanh on it, and describe what came
back, with its output on the grader's sample. It runs beside the learner's code and holds no test
models, cases or expected values: those are made and judged in checks.py, on the trusted side.
"""

import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from grader.safegrade.graph_data import Vocabulary, linear_arguments
from grader.safegrade.probing import learner

# What this exercise's graphs may use, on both sides (checks.py reads it from here): the sigmoids
# the grader's models spell, and the tanh a pass may write for each. Made when this file runs: in
# the sandbox, before any learner's cell.
GRAPHS = Vocabulary(
    functions=(torch.sigmoid, F.sigmoid, torch.special.expit, torch.relu, torch.cat)
    + (torch.tanh, F.tanh, torch.Tensor.tanh, operator.add, operator.mul)
    + (F.hardsigmoid, F.logsigmoid),  # no sigmoids, though their names hold the word
    methods=("sigmoid", "sigmoid_", "tanh", "tanh_", "sum"),
    modules={nn.Linear: linear_arguments, nn.Sigmoid: None, nn.Tanh: None}
    | {nn.Hardsigmoid: None, nn.LogSigmoid: None},  # no sigmoids, though their names end so
)


def rewrite(namespace: dict, case: dict) -> dict:
    gm = GRAPHS.build(case["graph"], codegen=True)
    received = GRAPHS.describe(gm)["nodes"]
    gm = learner(namespace, "replace_sigmoid_with_tanh")(gm)
    graph = GRAPHS.describe(gm)
    with torch.no_grad():  # the pass may edit tensors in place
        output = gm(case["sample"].clone())
    return {"received": received, "graph": graph, "output": output}


def rewrite_all(namespace: dict, inputs: dict) -> dict:
    return {what: rewrite(namespace, case) for what, case in inputs.items()}


test_torch_sigmoid = test_method_and_module = test_functional_spellings = rewrite_all
test_in_place = test_graph_hygiene = rewrite_all
