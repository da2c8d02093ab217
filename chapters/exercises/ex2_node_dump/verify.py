# Generated from solutions/ex2_node_dump/verify.py by `make release`; course maintainers: edit
# that file, not this one.
"""The checks of Exercise 2's test cells. The cells call them on the graphs they build; the
grader calls the very same functions on what your code made of its own hidden graphs, with the
expected values it works out for those. Each raises an AssertionError that says what to fix.
"""

import torch
import torch.fx
import torch.nn as nn

KEYS = ("name", "op", "target", "args", "kwargs", "users", "refers_to")


class Example(nn.Module):
    """The test cells' example (the grader's hidden ones add another constant)."""

    def __init__(self, constant: int = 1):
        super().__init__()
        self.lin, self.constant = nn.Linear(3, 3), constant
        self.scale = nn.Parameter(torch.ones(3, dtype=torch.float32))
        self.register_buffer("shift", torch.zeros(1, 3, dtype=torch.float64))

    def forward(self, x):
        h = self.lin(x) * self.scale + self.constant
        return torch.cat([h.relu(), x + self.shift, h.relu()], dim=1)


def records(rows) -> dict[str, dict]:
    """What dump_nodes returned, by node name."""
    assert isinstance(rows, list), f"dump_nodes returns a list, not {type(rows).__name__}"
    for row in rows:
        assert isinstance(row, dict), f"each record is a dict, not {type(row).__name__}"
        assert "name" in row, f"a record without a 'name': {row!r}"
    return {row["name"]: row for row in rows}


def check_records(rows, nodes: list[tuple[str, str, int]]) -> None:
    """nodes: (name, op, how many users) of every node, in graph order."""
    records(rows)
    assert len(rows) == len(nodes), f"want {len(nodes)} dicts, one per node; got {len(rows)}"
    for row, (name, op, used) in zip(rows, nodes, strict=True):
        assert set(row) == set(KEYS), f"{name}: the keys must be {KEYS}, got {tuple(row)}"
        got = (row["name"], row["op"])
        assert got == (name, op), f"want the node {name} ({op}) here, in graph order; got {got}"
        users = row["users"]
        assert isinstance(users, list) and len(users) == used, (
            f"{name}: {used} node(s) use it, so its 'users' is a list of {used} name(s); "
            f"got {users!r}"
        )


def check_values(rows, key: str, want: dict) -> None:
    """The records of the nodes named in `want` hold want[name] under `key`."""
    found = records(rows)
    for name, value in want.items():
        assert name in found, f"no record for the node {name!r}"
        assert key in found[name], f"{name}: the record has no {key!r}"
        got = found[name][key]
        nodes = " (Node objects, which print as their names: give node.name)" * holds_nodes(got)
        assert got == value, f"{name}: want the {key} {value!r}, got {got!r}{nodes}"


def holds_nodes(value) -> bool:
    """Whether `value` holds a torch.fx.Node at any depth: a Node prints as its name, so a
    message that shows it looks like the names it should hold."""
    if isinstance(value, torch.fx.Node):
        return True
    if isinstance(value, dict):
        return any(holds_nodes(key) or holds_nodes(item) for key, item in value.items())
    if isinstance(value, slice):
        value = (value.start, value.stop, value.step)
    return isinstance(value, list | tuple | set) and any(holds_nodes(item) for item in value)


def kind_of(value) -> str:
    """ "GraphModule" for any GraphModule (tracing names its class after the model's), else the
    name of value's type."""
    return "GraphModule" if isinstance(value, torch.fx.GraphModule) else type(value).__name__


def check_returns_graph_module(kind: str) -> None:
    """kind: kind_of(what merge returned)."""
    assert kind == "GraphModule", f"merge returns the GraphModule, not {kind}"


def check_merge(before: torch.fx.GraphModule, after: torch.fx.GraphModule, a: str, b: str):
    """`after` is `before` with the later of the nodes a and b erased and its users reading
    the earlier one instead; nothing else changed."""
    order = [node.name for node in before.graph.nodes]
    keep, drop = sorted((a, b), key=order.index)
    names = [node.name for node in after.graph.nodes]
    want = [name for name in order if name != drop]
    message = f"keep {keep} (it comes first), erase {drop}: want the nodes {want}, got {names}"
    assert names == want, message
    reads = {node.name: inputs(node, {drop: keep}) for node in before.graph.nodes}
    for node in after.graph.nodes:
        want, got = reads[node.name], inputs(node, {})
        assert got == want, f"{node.name}: want it to read {want}, got {got}"


def inputs(node: torch.fx.Node, renamed: dict) -> list[str]:
    """The names of the nodes `node` reads, once each, renamed as `renamed` says."""
    names = (renamed.get(other.name, other.name) for other in node.all_input_nodes)
    return list(dict.fromkeys(names))


def check_recompiled(code: str, graph_code: str) -> None:
    """code: the GraphModule's code; graph_code: the code its graph makes now."""
    assert code == graph_code, "gm.code still runs the graph as it was: call gm.recompile()"


try:
    from fxcourse.results import record_cells
except (ImportError, OSError):
    pass
else:
    record_cells()
