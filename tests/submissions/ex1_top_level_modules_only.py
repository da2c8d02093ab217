"""Looks submodules up with getattr(gm, target), which misses dotted paths like "encoder.1.1".

assignment: ex1_sigmoid_to_tanh
expected: 8
why: the method-and-module cell (2) fails on its hidden nested nn.Sigmoid; the rest pass.
"""

import torch
import torch.nn.functional as F
from torch import nn


# %% cell: replace_sigmoid_with_tanh
def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    functions = {torch.sigmoid, F.sigmoid, torch.special.expit}
    methods = {"sigmoid": "tanh", "sigmoid_": "tanh_"}
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in functions:
            node.target = torch.tanh
        elif node.op == "call_method" and node.target in methods:
            node.target = methods[node.target]
        elif node.op == "call_module" and isinstance(getattr(gm, node.target, None), nn.Sigmoid):
            setattr(gm, node.target, nn.Tanh())
    gm.recompile()
    return gm
