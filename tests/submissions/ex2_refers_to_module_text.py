"""refers_to gives a call_module's submodule as str(module) ("Linear(in_features=3, ...)") and a
get_attr's tensor as its shape only.

assignment: ex2_node_dump
expected: 8
why: only the refers_to cell (2) fails; the other cells compare other keys of the records.
"""

import torch


# %% cell: dump_nodes
def dump_nodes(gm: torch.fx.GraphModule) -> list[dict]:
    order = list(gm.graph.nodes)
    return [
        {
            "name": node.name,
            "op": node.op,
            "target": torch.fx.Node._pretty_print_target(node.target),
            "args": torch.fx.node.map_arg(node.args, lambda n: n.name),
            "kwargs": torch.fx.node.map_arg(node.kwargs, lambda n: n.name),
            "users": [user.name for user in sorted(node.users, key=order.index)],
            "refers_to": refers_to(gm, node),
        }
        for node in order
    ]


def refers_to(gm, node):
    if node.op == "call_module":
        return str(gm.get_submodule(node.target))
    if node.op == "get_attr":
        *path, name = node.target.split(".")
        return tuple(getattr(gm.get_submodule(".".join(path)), name).shape)
    return None
