"""Pads table cells in a while loop that never grows the text: format_nodes never returns.

assignment: ex2_node_dump
expected: 8
why: the table cell (2) runs into the cell timeout and fails; the kernel is interrupted and the
notebook is still graded.
"""

COLUMNS = ("name", "op", "target", "args", "kwargs", "users")


def dump_nodes(gm):  # provided by the reference cell in the notebook
    raise NotImplementedError


# %% cell: format_nodes
def format_nodes(gm) -> str:
    table = [list(COLUMNS)] + [[str(row[key]) for key in COLUMNS] for row in dump_nodes(gm)]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    lines = []
    for line in table:
        padded = []
        for text, width in zip(line, widths, strict=True):
            while len(text) < width:
                text.ljust(width)
            padded.append(text)
        lines.append("  ".join(padded).rstrip())
    return "\n".join(lines)
