# Generated from solutions/ex2_node_dump/ex2_node_dump.ipynb by `make chapters`; course
# maintainers: edit that file, not this one.
"""The reference solution of ex2_node_dump: its notebook's solution cells."""

import torch
import torch.fx


def dump_nodes(gm: torch.fx.GraphModule) -> list[dict]:
    """One dict per node, in graph order: name, op, target, args, kwargs, users, refers_to."""
    import operator

    position = {node: i for i, node in enumerate(gm.graph.nodes)}

    def text(target):
        if isinstance(target, str):
            return target
        module = {"_operator": "operator"}.get(target.__module__, target.__module__)
        return f"{module}.{target.__name__}"

    def names(value):
        return torch.fx.node.map_arg(value, lambda node: node.name)

    def refers_to(node):
        if node.op == "call_module":
            return type(gm.get_submodule(node.target)).__name__
        if node.op == "get_attr":
            tensor = operator.attrgetter(node.target)(gm)
            return (tensor.dtype, tuple(tensor.shape))
        return None

    return [
        {
            "name": node.name,
            "op": node.op,
            "target": text(node.target),
            "args": names(node.args),
            "kwargs": names(node.kwargs),
            "users": [user.name for user in sorted(node.users, key=position.__getitem__)],
            "refers_to": refers_to(node),
        }
        for node in gm.graph.nodes
    ]
    ### END SOLUTION


def merge(gm: torch.fx.GraphModule, a: str, b: str) -> torch.fx.GraphModule:
    """Keep the first of the equal nodes a and b, its users and the other's reading it."""
    nodes = list(gm.graph.nodes)
    keep, drop = sorted((node for node in nodes if node.name in (a, b)), key=nodes.index)
    drop.replace_all_uses_with(keep)
    gm.graph.erase_node(drop)
    gm.recompile()
    return gm
    ### END SOLUTION
