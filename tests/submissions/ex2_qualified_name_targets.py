"""Names function targets with torch.fx.node._get_qualified_name: "_operator.add", "getattr".

assignment: ex2_node_dump
expected: 8
why: only the targets cell (2) fails; the other cells compare other keys of the records.
"""

# %% cell: dump_nodes
import torch
from torch.fx.node import _get_qualified_name


def text_of(target) -> str:
    return target if isinstance(target, str) else _get_qualified_name(target)


def dump_nodes(gm: torch.fx.GraphModule) -> list[dict]:
    order = list(gm.graph.nodes)
    return [
        {
            "name": node.name,
            "op": node.op,
            "target": text_of(node.target),
            "args": torch.fx.node.map_arg(node.args, lambda n: n.name),
            "kwargs": torch.fx.node.map_arg(node.kwargs, lambda n: n.name),
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
