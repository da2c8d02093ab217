"""A correct answer that writes tanh in the other spellings: F.tanh for the functions, the
method torch.Tensor.tanh as a function node for x.sigmoid(), F.tanh in place of nn.Sigmoid.

assignment: ex1_sigmoid_to_tanh
expected: 10
why: F.tanh, torch.Tensor.tanh and torch.tanh compute the same tanh; the tests accept each.
"""

import torch
import torch.nn.functional as F
from torch import nn


# %% cell: replace_sigmoid_with_tanh
def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    functions = {torch.sigmoid, F.sigmoid, torch.special.expit}
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in functions:
            node.target = F.tanh
        elif node.op == "call_method" and node.target == "sigmoid":
            node.op, node.target = "call_function", torch.Tensor.tanh
        elif node.op == "call_method" and node.target == "sigmoid_":
            node.target = "tanh_"
        elif node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Sigmoid):
            node.op, node.target = "call_function", F.tanh
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return gm
