"""Rewrites every spelling in the graph but never calls recompile(): forward still runs sigmoid.

assignment: ex1_sigmoid_to_tanh
expected: 3
why: only the torch.sigmoid cell (3), which inspects the graph alone, passes; every cell that runs
the module sees the old code.
"""

import torch
import torch.nn.functional as F
from torch import nn


# %% cell: replace_sigmoid_with_tanh
def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    functions = {torch.sigmoid: torch.tanh, F.sigmoid: torch.tanh, torch.special.expit: torch.tanh}
    methods = {"sigmoid": "tanh", "sigmoid_": "tanh_"}
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in functions:
            node.target = functions[node.target]
        elif node.op == "call_method" and node.target in methods:
            node.target = methods[node.target]
        elif node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Sigmoid):
            node.op, node.target = "call_function", torch.tanh
    gm.graph.lint()
    return gm
