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
