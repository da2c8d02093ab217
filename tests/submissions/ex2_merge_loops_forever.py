"""Looks for the first of the two nodes in a while loop that never moves on: merge never returns.

assignment: ex2_node_dump
expected: 8
why: the merge cell (2) runs into the cell timeout and fails; the kernel is interrupted and the
notebook is still graded.
"""

import torch


# %% cell: merge
def merge(gm: torch.fx.GraphModule, a: str, b: str) -> torch.fx.GraphModule:
    node, steps = next(iter(gm.graph.nodes)), 0
    while node.name not in (a, b):
        steps += 1  # meant node = node.next as well: the loop never advances
    keep = node
    drop = next(n for n in gm.graph.nodes if n.name in (a, b) and n is not keep)
    drop.replace_all_uses_with(keep)
    gm.graph.erase_node(drop)
    gm.recompile()
    return gm
