"""Lists users in the order node.users holds them: the order the uses were made, not graph order.

assignment: ex2_node_dump
expected: 9
why: only the users cell (1) fails, on its hidden graph edited after tracing.
"""

import torch


# %% cell: dump_nodes
def dump_nodes(gm: torch.fx.GraphModule) -> list[dict]:
    rows = []
    for node in gm.graph.nodes:
        rows.append(
            {
                "name": node.name,
                "op": node.op,
                "target": torch.fx.Node._pretty_print_target(node.target),
                "args": torch.fx.node.map_arg(node.args, lambda n: n.name),
                "kwargs": torch.fx.node.map_arg(node.kwargs, lambda n: n.name),
                "users": [user.name for user in node.users],
            }
        )
    return rows
