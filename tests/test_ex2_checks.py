"""Exercise 2's checks (solutions/ex2_node_dump/verify.py, which the visible cells and the grader
share): a record that holds Node objects instead of names was told "want ['lin', 'add_1'], got
[lin, add_1]", the two alike but for the quotes (red team redE; message fixed by redG, the check
itself unchanged)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from grader.safegrade import probing

VERIFY = Path(__file__).resolve().parents[1] / "solutions" / "ex2_node_dump" / "verify.py"


@pytest.fixture(scope="module")
def verify():
    return probing.load(VERIFY)


def test_users_given_as_nodes_are_named_as_nodes(verify):
    gm = torch.fx.symbolic_trace(verify.Example())
    x = next(iter(gm.graph.nodes))
    rows = [{"name": "x", "users": list(x.users)}]
    with pytest.raises(AssertionError, match="Node objects") as refused:
        verify.check_values(rows, "users", {"x": [user.name for user in x.users]})
    assert "node.name" in str(refused.value)


def test_names_still_pass_and_other_mistakes_say_nothing_of_nodes(verify):
    verify.check_values([{"name": "x", "users": ["lin"]}], "users", {"x": ["lin"]})
    with pytest.raises(AssertionError) as refused:
        verify.check_values([{"name": "x", "users": ["add"]}], "users", {"x": ["lin"]})
    assert "Node objects" not in str(refused.value)
    gm = torch.fx.symbolic_trace(verify.Example())
    cat = next(node for node in gm.graph.nodes if node.name == "cat")
    assert verify.holds_nodes({"key": slice(None, cat)}) and not verify.holds_nodes(("cat", 1))


def test_the_visible_merge_cell_reads_verifys_kind_of_not_a_learners(tmp_path):
    """The setup cell imported verify's kind_of before the solution cells, so a learner's own
    helper kind_of (for refers_to, say) replaced it and the right merge was told "merge returns
    the GraphModule, not Example" (red team redQ). The visible cells run here with the reference
    solution and such a helper."""
    import nbformat

    folder = VERIFY.parents[2] / "chapters" / "exercises" / "ex2_node_dump"
    notebook = nbformat.read(folder / "ex2_node_dump.ipynb", as_version=4)
    solution = (VERIFY.parent / "solution.py").read_text()
    helper = "\ndef kind_of(value):\n    return type(value).__name__\n"
    namespace: dict = {"__name__": "learner"}
    import sys

    sys.path.insert(0, str(folder))
    try:
        sys.modules.pop("verify", None)
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            if cell.cell_type != "code" or grade_id == "merge":
                continue
            source = solution + helper if grade_id == "dump_nodes" else cell.source
            exec(compile(source, grade_id or "cell", "exec"), namespace)  # noqa: S102
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("verify", None)
    assert namespace["kind_of"](namespace["merged"]) != "GraphModule"  # the learner's own


def merge_keeping(choose):
    """A merge that keeps the node `choose(a, b)` names (the red team's, redQ7: by the names'
    order or length), its users reading that node."""

    def merge(gm, a, b):
        keep = choose(a, b)
        nodes = {node.name: node for node in gm.graph.nodes}
        drop = nodes[b if keep == a else a]
        drop.replace_all_uses_with(nodes[keep])
        gm.graph.erase_node(drop)
        gm.recompile()
        return gm

    return merge


@pytest.mark.parametrize("seed", [1, 2])
def test_the_hidden_merge_test_keeps_the_graphs_first_node_not_the_names(seed):
    """Every hidden pair used to sort by name as in the graph: a merge that kept the name that
    sorts first, or the shorter one, passed. A graph whose earlier node has the longer name that
    sorts last now refuses both; the reference still passes."""
    checks, probes, solution = (
        probing.load(VERIFY.with_name(name)) for name in ("checks.py", "probes.py", "solution.py")
    )
    cases = checks.inputs("test_merge", seed)
    checks.test_merge(probes.test_merge({"merge": solution.merge}, cases), cases)
    for choose in (lambda a, b: min(a, b), lambda a, b: min(a, b, key=len)):
        data = probes.test_merge({"merge": merge_keeping(choose)}, cases)
        with pytest.raises(AssertionError):
            checks.test_merge(data, cases)
