"""Rewrites torch.sigmoid only: the other five spellings stay sigmoids.

assignment: ex1_sigmoid_to_tanh
expected: 5
why: torch.sigmoid (3) and graph hygiene (2) pass; method/module, functional and in-place fail.
"""

import torch


# %% cell: replace_sigmoid_with_tanh
def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.sigmoid:
            node.target = torch.tanh
    gm.recompile()
    return gm
