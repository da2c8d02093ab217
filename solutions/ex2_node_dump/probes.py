"""Exercise 2's probes: rebuild each graph the grader sent (a description) and return what the
learner's dump_nodes makes of it, or the graph merge returns. They run beside the learner's code
and hold no graphs or expected values: those are made and judged in checks.py.
"""

from grader.safegrade.graphs import build, describe
from grader.safegrade.probing import learner


def dumps(namespace: dict, inputs: dict) -> dict:
    dump_nodes = learner(namespace, "dump_nodes")
    return {name: dump_nodes(build(graph, codegen=True)) for name, graph in inputs.items()}


def test_merge(namespace: dict, inputs: dict) -> dict:
    """merge's graph for each case, as a description (with its code and its graph's code)."""
    merge = learner(namespace, "merge")
    return {
        name: describe(merge(build(case["graph"], codegen=True), case["a"], case["b"]))
        for name, case in inputs.items()
    }


test_records = test_targets = test_arguments = test_users = test_refers_to = dumps
