"""Replaces Nodes only at the top level of args and kwargs: torch.cat([a, b]) keeps Node objects.

assignment: ex2_node_dump
expected: 8
why: the arguments cell (2) fails; the table shows Nodes by name anyway, so format_nodes passes.
"""

import torch


# %% cell: dump_nodes
def name_of(value):
    return value.name if isinstance(value, torch.fx.Node) else value


def dump_nodes(gm: torch.fx.GraphModule) -> list[dict]:
    order = list(gm.graph.nodes)
    return [
        {
            "name": node.name,
            "op": node.op,
            "target": torch.fx.Node._pretty_print_target(node.target),
            "args": tuple(name_of(arg) for arg in node.args),
            "kwargs": {key: name_of(value) for key, value in node.kwargs.items()},
            "users": [user.name for user in sorted(node.users, key=order.index)],
        }
        for node in gm.graph.nodes
    ]
