"""Exercise 2's probes: the learner's dump_nodes and format_nodes on the tests' graphs, as data.
They run beside the learner's code and hold no expected values (those are in checks.py).
"""

import torch
import torch.fx
import torch.nn as nn

from grader.safegrade.probing import learner

COLUMNS = ("name", "op", "target", "args", "kwargs", "users")


class Example(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        h = self.lin(x) + 1
        return torch.cat([h.relu(), x], dim=1)


class Rich(nn.Module):
    """Every node kind, kwargs, nested arguments, a slice holding a node, a dict output."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.block = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.register_buffer("offset", torch.ones(4))

    def forward(self, x, y):
        h = self.block(x) + self.offset
        n = h.shape[0]
        z = torch.add(h, other=y, alpha=2)
        both = torch.cat([z, torch.special.expit(h)], dim=-1)
        return {"out": both[:, :n].to(dtype=torch.float64), "sum": (z.sum(dim=1, keepdim=True), n)}


def edited() -> torch.fx.GraphModule:
    """Example with a node inserted before `lin` that also reads x: x's users were added in
    the order lin, neg, but the graph order is neg, lin."""
    gm = torch.fx.symbolic_trace(Example())
    by_name = {node.name: node for node in gm.graph.nodes}
    with gm.graph.inserting_before(by_name["lin"]):
        neg = gm.graph.call_function(torch.neg, (by_name["x"],))
    by_name["cat"].update_arg(0, [by_name["relu"], neg])
    gm.graph.lint()
    return gm


GRAPHS = {
    "example": lambda: torch.fx.symbolic_trace(Example()),
    "rich": lambda: torch.fx.symbolic_trace(Rich()),
    "edited": edited,
}


def dumps(namespace: dict, *names: str) -> dict:
    """What dump_nodes returns for each named graph."""
    dump_nodes = learner(namespace, "dump_nodes")
    return {name: dump_nodes(GRAPHS[name]()) for name in names}


def test_records(namespace):
    return dumps(namespace, "example", "rich")


def test_targets(namespace):
    return dumps(namespace, "example", "rich")


def test_arguments(namespace):
    return dumps(namespace, "example", "rich")


def test_users(namespace):
    return dumps(namespace, "example", "rich", "edited")


def test_table(namespace):
    """format_nodes's table, and str() of every value dump_nodes returns (what the table shows)."""
    dump_nodes, format_nodes = learner(namespace, "dump_nodes"), learner(namespace, "format_nodes")
    tables = {}
    for name in ("example", "rich"):
        rows = dump_nodes(GRAPHS[name]())
        cells = [list(COLUMNS)] + [[str(row[key]) for key in COLUMNS] for row in rows]
        tables[name] = {"table": format_nodes(GRAPHS[name]()), "cells": cells}
    return tables
