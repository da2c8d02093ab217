"""Exercise 2's inputs and checks, on the trusted side only (never in the sandbox, never
released). `inputs` makes the test graphs from the submission's seed and sends them as
descriptions; the checks compare what dump_nodes returned with the dump computed here for the
same graphs, and lay out format_nodes's table from those records here. Each check covers its
test cell's visible asserts too (same messages where they overlap).
"""

import re

import torch
import torch.fx
import torch.nn as nn

from grader.safegrade.graphs import build, describe

COLUMNS = ("name", "op", "target", "args", "kwargs", "users")


class Example(nn.Module):
    def __init__(self, constant):
        super().__init__()
        self.lin, self.constant = nn.Linear(3, 3), constant

    def forward(self, x):
        h = self.lin(x) + self.constant
        return torch.cat([h.relu(), x], dim=1)


class Rich(nn.Module):
    """Every node kind, kwargs, nested arguments, a slice holding a node, a dict output."""

    def __init__(self, alpha):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.register_buffer("offset", torch.ones(4))
        self.alpha = alpha

    def forward(self, x, y):
        h = self.block(x) + self.offset
        n = h.shape[0]
        z = torch.add(h, other=y, alpha=self.alpha)
        both = torch.cat([z, torch.special.expit(h)], dim=-1)
        return {"out": both[:, :n].to(dtype=torch.float64), "sum": (z.sum(dim=1, keepdim=True), n)}


def edited(constant) -> torch.fx.GraphModule:
    """Example with a node inserted before `lin` that also reads x: x's users were added in
    the order lin, neg, but the graph order is neg, lin."""
    gm = torch.fx.symbolic_trace(Example(constant))
    by_name = {node.name: node for node in gm.graph.nodes}
    with gm.graph.inserting_before(by_name["lin"]):
        neg = gm.graph.call_function(torch.neg, (by_name["x"],))
    by_name["cat"].update_arg(0, [by_name["relu"], neg])
    return gm


def inputs(grade_id: str, seed: int) -> dict:
    constant, alpha = 1 + seed % 7, 2 + seed % 5
    graphs = {"example": torch.fx.symbolic_trace(Example(constant))}
    graphs["rich"] = torch.fx.symbolic_trace(Rich(alpha))
    if grade_id == "test_users":
        graphs["edited"] = edited(constant)
    return {name: describe(gm, state=True) for name, gm in graphs.items()}


def printed_target(node: torch.fx.Node) -> str:
    """The text after `target=` in node.format_node(); "output" for the output node."""
    if node.op == "output":
        return "output"
    return re.search(r"\[target=(.*?)\](?:\(|$)", node.format_node()).group(1)


def reference(graph: dict) -> list[dict]:
    """The dump the exercise asks for, of the graph as the grader sent it."""
    nodes = list(build(graph).graph.nodes)
    order = {node: index for index, node in enumerate(nodes)}
    names = lambda value: torch.fx.node.map_arg(value, lambda n: n.name)  # noqa: E731
    return [
        {
            "name": node.name,
            "op": node.op,
            "target": printed_target(node),
            "args": names(node.args),
            "kwargs": names(node.kwargs),
            "users": [user.name for user in sorted(node.users, key=order.__getitem__)],
        }
        for node in nodes
    ]


def check_rows(rows, want: list[dict]) -> dict:
    """One dict per node in graph order with exactly the six keys, names and ops right."""
    assert isinstance(rows, list), f"dump_nodes returns a list, not {type(rows).__name__}"
    assert len(rows) == len(want), f"want {len(want)} dicts, one per node; got {len(rows)}"
    for row, node in zip(rows, want, strict=True):
        assert isinstance(row, dict) and set(row) == set(COLUMNS), f"keys must be {COLUMNS}: {row}"
        assert (row["name"], row["op"]) == (node["name"], node["op"]), (
            f"{node['name']}: wrong name/op or order"
        )
    return {row["name"]: row for row in rows}


def compare(data: dict, graphs: dict, *keys: str) -> None:
    for name, graph in graphs.items():
        want = reference(graph)
        rows = check_rows(data[name], want)
        for node in want:
            for key in keys:
                got = rows[node["name"]][key]
                assert got == node[key], f"{node['name']}.{key}: want {node[key]!r}, got {got!r}"


def test_records(data, graphs):
    compare(data, graphs)


def test_targets(data, graphs):
    compare(data, graphs, "target")


def test_arguments(data, graphs):
    compare(data, graphs, "args", "kwargs")


def test_users(data, graphs):
    compare(data, graphs, "users")


def test_table(data, graphs):
    for name in graphs:
        rows = data[name]["rows"]
        assert isinstance(rows, list), f"dump_nodes returns a list, not {type(rows).__name__}"
        cells = [list(COLUMNS)] + [[str(row[key]) for key in COLUMNS] for row in rows]
        check_table(data[name]["table"], cells)


def check_table(table, cells: list[list[str]]) -> None:
    """`table` lays out the header and the rows' str() values (made here) as the task asks."""
    assert isinstance(table, str), f"format_nodes returns a str, not {type(table).__name__}"
    lines = table.split("\n")
    assert len(lines) == len(cells), f"want a header and {len(cells) - 1} lines, got {len(lines)}"
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    starts = [sum(widths[:i]) + 2 * i for i in range(len(COLUMNS))] + [None]
    for line, texts in zip(lines, cells, strict=True):
        assert line == line.rstrip(), f"trailing spaces in {line!r}"
        for i, text in enumerate(texts):
            where = f"line {line!r}, column {COLUMNS[i]} (from position {starts[i]})"
            assert line[starts[i] : starts[i + 1]].rstrip() == text, f"{where}: want {text!r}"
