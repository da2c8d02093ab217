"""Replaces Nodes only at the top level of args and kwargs: torch.cat([a, b]) keeps Node objects.

assignment: ex2_node_dump
expected: 8
why: only the arguments cell (2) fails (its visible test too: cat's list keeps its Nodes).
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
            "refers_to": refers_to(gm, node),
        }
        for node in gm.graph.nodes
    ]


def refers_to(gm, node):
    """What a call_module or get_attr target stands for."""
    if node.op == "call_module":
        return type(gm.get_submodule(node.target)).__name__
    if node.op == "get_attr":
        *path, name = node.target.split(".")
        tensor = getattr(gm.get_submodule(".".join(path)), name)
        return (tensor.dtype, tuple(tensor.shape))
    return None
