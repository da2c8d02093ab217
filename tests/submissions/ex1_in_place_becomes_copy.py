"""Turns x.sigmoid_() into x.tanh(): right value, but the tensor is no longer changed in place.

assignment: ex1_sigmoid_to_tanh
expected: 9
why: the in-place cell (1) fails its hidden test, where only the in-place change is used.
"""

import torch
import torch.nn.functional as F
from torch import nn


# %% cell: replace_sigmoid_with_tanh
def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    functions = {torch.sigmoid, F.sigmoid, torch.special.expit}
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in functions:
            node.target = torch.tanh
        elif node.op == "call_method" and node.target in ("sigmoid", "sigmoid_"):
            node.target = "tanh"
        elif node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Sigmoid):
            parent, _, name = node.target.rpartition(".")
            setattr(gm.get_submodule(parent), name, nn.Tanh())
    gm.graph.lint()
    gm.recompile()
    return gm
