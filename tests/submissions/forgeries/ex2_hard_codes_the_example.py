"""Does no work: dump_nodes returns the records of the notebook's `example`, written out by hand,
for any graph, and merge erases the node named relu_1 whatever it is asked.

assignment: ex2_node_dump
expected: 0
why: the grader draws its own graphs for each submission (other sizes, types, constants and the
two names in either order) and works out on its side what each answer should be.
"""

# %% cell: dump_nodes
import torch

ROWS = [
    ("x", "placeholder", "x", (), ["lin", "add_1"], None),
    ("lin", "call_module", "lin", ("x",), ["mul"], "Linear"),
    ("scale", "get_attr", "scale", (), ["mul"], (torch.float32, (3,))),
    ("mul", "call_function", "operator.mul", ("lin", "scale"), ["add"], None),
    ("add", "call_function", "operator.add", ("mul", 1), ["relu", "relu_1"], None),
    ("relu", "call_method", "relu", ("add",), ["cat"], None),
    ("shift", "get_attr", "shift", (), ["add_1"], (torch.float64, (1, 3))),
    ("add_1", "call_function", "operator.add", ("x", "shift"), ["cat"], None),
    ("relu_1", "call_method", "relu", ("add",), ["cat"], None),
    ("cat", "call_function", "torch.cat", (["relu", "add_1", "relu_1"],), ["output"], None),
    ("output", "output", "output", ("cat",), [], None),
]


def dump_nodes(gm):
    keys = ("name", "op", "target", "args", "users", "refers_to")
    rows = [dict(zip(keys, row, strict=True)) for row in ROWS]
    for row in rows:
        row["kwargs"] = {"dim": 1} if row["name"] == "cat" else {}
    return rows


# %% cell: merge
def merge(gm, a, b):
    nodes = {node.name: node for node in gm.graph.nodes}
    nodes["relu_1"].replace_all_uses_with(nodes["relu"])
    gm.graph.erase_node(nodes["relu_1"])
    gm.recompile()
    return gm
