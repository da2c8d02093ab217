"""Lists users in the order node.users holds them: the order the uses were made, not graph order.

assignment: ex2_node_dump
expected: 9
why: only the users cell (1) fails, on `edited` (a node inserted after tracing) and, hidden, on a
graph after a merge.
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
                "refers_to": refers_to(gm, node),
            }
        )
    return rows


def refers_to(gm, node):
    """What a call_module or get_attr target stands for."""
    if node.op == "call_module":
        return type(gm.get_submodule(node.target)).__name__
    if node.op == "get_attr":
        *path, name = node.target.split(".")
        tensor = getattr(gm.get_submodule(".".join(path)), name)
        return (tensor.dtype, tuple(tensor.shape))
    return None
