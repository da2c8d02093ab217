"""Exercise 2's checks: judge the data probes.py returned, against what the graphs hold, read here.
Each check covers its test cell's visible asserts too (same messages where they overlap).
"""

import re

import torch
import torch.fx

from grader.safegrade.probing import sibling

probes = sibling(__file__, "probes")
COLUMNS = probes.COLUMNS


def graph(name: str) -> list[torch.fx.Node]:
    return list(probes.GRAPHS[name]().graph.nodes)


def printed_target(node: torch.fx.Node) -> str:
    """The text after `target=` in node.format_node(); "output" for the output node."""
    if node.op == "output":
        return "output"
    return re.search(r"\[target=(.*?)\](?:\(|$)", node.format_node()).group(1)


def check_rows(rows, name: str) -> dict:
    """One dict per node in graph order with exactly the six keys, names and ops right."""
    assert isinstance(rows, list), f"dump_nodes returns a list, not {type(rows).__name__}"
    nodes = graph(name)
    assert len(rows) == len(nodes), f"want {len(nodes)} dicts, one per node; got {len(rows)}"
    for row, node in zip(rows, nodes, strict=True):
        assert isinstance(row, dict) and set(row) == set(COLUMNS), f"keys must be {COLUMNS}: {row}"
        assert (row["name"], row["op"]) == (node.name, node.op), (
            f"{node.name}: wrong name/op or order"
        )
    return {row["name"]: row for row in rows}


def test_records(data):
    for name in ("example", "rich"):
        check_rows(data[name], name)


def test_targets(data):
    targets = {
        row["name"]: row["target"] for row in check_rows(data["example"], "example").values()
    }
    wanted = {"x": "x", "lin": "lin", "add": "operator.add", "relu": "relu", "cat": "torch.cat"}
    for name, want in (wanted | {"output": "output"}).items():
        assert targets.get(name) == want, (
            f"{name}: want the target {want!r}, got {targets.get(name)!r}"
        )
    rows = check_rows(data["rich"], "rich")
    for node in graph("rich"):
        want, got = printed_target(node), rows[node.name]["target"]
        assert got == want, f"{node.name}: want {want!r}, got {got!r}"


def test_arguments(data):
    rows = check_rows(data["example"], "example")
    assert rows["add"]["args"] == ("lin", 1), f"add: want ('lin', 1), got {rows['add']['args']}"
    cat = rows["cat"]
    assert cat["args"] == (["relu", "x"],), f"cat: want (['relu', 'x'],), got {cat['args']}"
    assert cat["kwargs"] == {"dim": 1}, f"cat: kwargs should be {{'dim': 1}}, got {cat['kwargs']}"
    assert rows["output"]["args"] == ("cat",), (
        f"output: want ('cat',), got {rows['output']['args']}"
    )
    rows = check_rows(data["rich"], "rich")
    for node in graph("rich"):
        for key in ("args", "kwargs"):
            want = torch.fx.node.map_arg(getattr(node, key), lambda n: n.name)
            got = rows[node.name][key]
            assert got == want, f"{node.name}.{key}: want {want}, got {got}"


def test_users(data):
    for name in ("example", "rich", "edited"):
        users = {row["name"]: row["users"] for row in check_rows(data[name], name).values()}
        order = {node: index for index, node in enumerate(graph(name))}
        for node in order:
            want = [user.name for user in sorted(node.users, key=order.__getitem__)]
            got = users[node.name]
            assert got == want, f"{name}: {node.name}: users should be {want}, got {got}"


def test_table(data):
    for name in ("example", "rich"):
        check_table(data[name]["table"], data[name]["cells"])


def check_table(table, cells: list[list[str]]) -> None:
    """`table` lays out the header and the rows' str() values as the task asks."""
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
