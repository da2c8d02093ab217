"""merge keeps the node named first in the call, not the one that comes first in the graph.

assignment: ex2_node_dump
expected: 8
why: the merge cell (2) fails: its visible test names the later node first; when the later node
is kept, the nodes between the two read a value computed after them.
"""

import torch


# %% cell: merge
def merge(gm: torch.fx.GraphModule, a: str, b: str) -> torch.fx.GraphModule:
    nodes = {node.name: node for node in gm.graph.nodes}
    nodes[b].replace_all_uses_with(nodes[a])
    gm.graph.erase_node(nodes[b])
    gm.recompile()
    return gm
