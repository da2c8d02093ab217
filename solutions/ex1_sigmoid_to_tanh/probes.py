"""Exercise 1's probe: rebuild each model the grader sent (a graph description and its weights),
describe it as received, run the learner's replace_sigmoid_with_tanh on it, and describe what came
back, with its output on the grader's sample. It runs beside the learner's code and holds no test
models, cases or expected values: those are made and judged in checks.py, on the trusted side.
"""

import torch

from grader.safegrade.graphs import build, describe
from grader.safegrade.probing import learner


def rewrite(namespace: dict, case: dict) -> dict:
    gm = build(case["graph"], codegen=True)
    received = describe(gm)["nodes"]
    gm = learner(namespace, "replace_sigmoid_with_tanh")(gm)
    graph = describe(gm)
    with torch.no_grad():  # the pass may edit tensors in place
        output = gm(case["sample"].clone())
    return {"received": received, "graph": graph, "output": output}


def rewrite_all(namespace: dict, inputs: dict) -> dict:
    return {what: rewrite(namespace, case) for what, case in inputs.items()}


test_torch_sigmoid = test_method_and_module = test_functional_spellings = rewrite_all
test_in_place = test_graph_hygiene = rewrite_all
