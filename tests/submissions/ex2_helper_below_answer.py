"""dump_nodes calls a helper the learner defined in a cell of their own, below the answer.

assignment: ex2_node_dump
expected: 10
why: the helper cell runs before any test cell calls dump_nodes, as in nbgrader's run.
"""

import torch


def text_of(target) -> str:  # defined in the learner's own cell below
    raise NotImplementedError


def refers_to(gm, node):  # defined in the learner's own cell below
    raise NotImplementedError


# %% cell: dump_nodes
def dump_nodes(gm: torch.fx.GraphModule) -> list[dict]:
    return [
        {
            "name": node.name,
            "op": node.op,
            "target": text_of(node.target),
            "args": torch.fx.node.map_arg(node.args, lambda n: n.name),
            "kwargs": torch.fx.node.map_arg(node.kwargs, lambda n: n.name),
            "users": sorted((user.name for user in node.users), key=lambda n: order_of(gm, n)),
            "refers_to": refers_to(gm, node),
        }
        for node in gm.graph.nodes
    ]


# %% before: merge
def text_of(target) -> str:  # noqa: F811
    if isinstance(target, str):
        return target
    module = "operator" if target.__module__ == "_operator" else target.__module__
    return f"{module}.{target.__name__}"


def order_of(gm, name: str) -> int:
    return [node.name for node in gm.graph.nodes].index(name)


def refers_to(gm, node):  # noqa: F811
    """What a call_module or get_attr target stands for."""
    if node.op == "call_module":
        return type(gm.get_submodule(node.target)).__name__
    if node.op == "get_attr":
        *path, name = node.target.split(".")
        tensor = getattr(gm.get_submodule(".".join(path)), name)
        return (tensor.dtype, tuple(tensor.shape))
    return None
