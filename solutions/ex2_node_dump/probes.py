"""Exercise 2's probe: rebuild each graph the grader sent (a description) and return what the
learner's dump_nodes (and, for the table, format_nodes) make of it. It runs beside the learner's
code and holds no graphs or expected values: those are made and judged in checks.py.
"""

from grader.safegrade.graphs import build
from grader.safegrade.probing import learner


def dumps(namespace: dict, inputs: dict) -> dict:
    dump_nodes = learner(namespace, "dump_nodes")
    return {name: dump_nodes(build(graph)) for name, graph in inputs.items()}


def test_table(namespace: dict, inputs: dict) -> dict:
    """format_nodes's table and the records dump_nodes returns (what the table lays out)."""
    format_nodes = learner(namespace, "format_nodes")
    rows = dumps(namespace, inputs)
    return {
        name: {"table": format_nodes(build(graph)), "rows": rows[name]}
        for name, graph in inputs.items()
    }


test_records = test_targets = test_arguments = test_users = dumps
