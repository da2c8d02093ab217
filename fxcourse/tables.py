"""Tables for notebooks: Markdown in Jupyter, aligned text in a console.

    markdown_table(["capture", "result"], [["symbolic_trace", "TraceError"], ...])
    graph_summary({"symbolic_trace": traced, "torch.export": exported.graph_module})

`graph_summary` compares captures of one model: one row per graph with its node counts per
opcode, the kind of operations it calls, how the parameters reach it and how many values it
returns.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence

import torch.fx

from fxcourse.messages import _

OPCODES = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")


class MarkdownTable:
    """A table that Jupyter shows as Markdown and `print` shows as aligned text."""

    def __init__(self, header: Sequence[str], rows: Sequence[Sequence[object]]):
        self.header = [str(cell) for cell in header]
        self.rows = [[str(cell) for cell in row] for row in rows]
        for row in self.rows:
            if len(row) != len(self.header):
                raise ValueError(f"row {row} has {len(row)} cells, the header {len(self.header)}")

    def _repr_markdown_(self) -> str:
        lines = [self.header, ["---"] * len(self.header), *self.rows]
        return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)

    def __repr__(self) -> str:
        table = [[cell.replace("`", "") for cell in row] for row in (self.header, *self.rows)]
        widths = [max(len(row[i]) for row in table) for i in range(len(self.header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in table]
        return "\n".join(line.rstrip() for line in lines)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> MarkdownTable:
    return MarkdownTable(header, rows)


def operation_kinds(gm: torch.fx.GraphModule) -> str:
    """The kinds of operation a graph calls, e.g. 'ATen ops + `getitem`'."""
    counts = Counter(node.op for node in gm.graph.nodes)
    functions = [node.target for node in gm.graph.nodes if node.op == "call_function"]

    def is_aten(target) -> bool:
        return getattr(target, "namespace", None) == "aten"

    found = {
        _("modules"): counts["call_module"] > 0,
        _("torch functions"): any(not is_aten(f) and f is not operator.getitem for f in functions),
        _("tensor methods"): counts["call_method"] > 0,
        _("ATen ops"): any(is_aten(f) for f in functions),
        "`getitem`": operator.getitem in functions,
    }
    return " + ".join(kind for kind, present in found.items() if present)


def parameter_form(gm: torch.fx.GraphModule, user_inputs: int) -> str:
    """How the weights reach the graph: inside submodules, read by get_attr, or as inputs."""
    counts = Counter(node.op for node in gm.graph.nodes)
    if counts["call_module"]:
        return _("inside `call_module` submodules")
    if counts["get_attr"]:
        return _("{count} `get_attr` nodes").format(count=counts["get_attr"])
    return _("{count} extra placeholders").format(count=counts["placeholder"] - user_inputs)


def returned_values(gm: torch.fx.GraphModule) -> int:
    """How many values the graph's output node returns (a tuple counts its items)."""
    (output,) = gm.graph.find_nodes(op="output")
    value = output.args[0]
    return len(value) if isinstance(value, (tuple, list)) else 1


def graph_summary(graphs: dict[str, torch.fx.GraphModule], user_inputs: int = 1) -> MarkdownTable:
    """One row per capture of the same model (it takes `user_inputs` inputs of its own)."""
    header = [_("capture"), *OPCODES, _("operations"), _("parameters arrive as")]
    header.append(_("values returned"))
    rows = []
    for name, gm in graphs.items():
        counts = Counter(node.op for node in gm.graph.nodes)
        rows.append(
            [
                name,
                *(counts[op] for op in OPCODES),
                operation_kinds(gm),
                parameter_form(gm, user_inputs),
                returned_values(gm),
            ]
        )
    return MarkdownTable(header, rows)
