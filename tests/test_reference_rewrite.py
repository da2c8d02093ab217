"""checkpoint.run_reference_as: the reference answer run as a rewrite of its code."""

from __future__ import annotations

import json

import pytest

from fxcourse import reference, tryit


@pytest.fixture
def references(tmp_path, monkeypatch):
    """A references.json whose answer registers a global name, as a custom operator does."""
    table = {"9.3": {"code": "REGISTRY['double'] = 2\nfactor = REGISTRY['double']", "defines": []}}
    path = tmp_path / "references.json"
    path.write_text(json.dumps(table))
    monkeypatch.setattr(reference, "REFERENCES_FILE", path)
    monkeypatch.setattr(reference.load_references, "__defaults__", (path,))
    return table


REGISTRY = {"double": 3}  # the learner's registration, which the reference must not replace
factor = 3


def numbers(make):
    return make.tensor(make.integer(1, 4))


def judge(capsys, rewrite=None) -> tuple[tryit.CheckpointResult, list[str]]:
    seen = []

    def renamed(code: str) -> str:
        seen.append(code)
        return rewrite(code)

    with tryit.checkpoint("9.3", "a factor") as check:
        if rewrite:
            check.run_reference_as(renamed)
        for case in check.cases(numbers, count=5):
            mine, wanted = case.both(lambda answer, x: x * answer.factor)
            check.close(mine, wanted, "another factor")
    capsys.readouterr()
    return check.result, seen


def test_without_a_rewrite_the_reference_replaces_the_learners_global(references, capsys):
    REGISTRY["double"] = 3
    result, _seen = judge(capsys)
    assert not result.passed, "the learner's factor 3 differs from the reference's 2"
    assert REGISTRY["double"] == 2, "the plain reference run wrote into the shared registry"


def test_the_rewritten_reference_runs_once_and_leaves_the_learners_global(references, capsys):
    REGISTRY.clear()
    REGISTRY["double"] = 3
    result, seen = judge(capsys, lambda code: code.replace("'double'", "'reference_double'"))
    assert seen == [references["9.3"]["code"]], "rewrite gets the answer's code, once per run"
    assert REGISTRY == {"double": 3, "reference_double": 2}
    assert not result.passed and result.reference_runs == 1


def test_the_rewrite_replaces_a_reference_already_made(references, capsys, monkeypatch):
    monkeypatch.setitem(REGISTRY, "double", 3)
    with tryit.checkpoint("9.3", "a factor") as check:
        first = check.reference.factor
        check.run_reference_as(lambda code: code.replace("= 2", "= 3"))
        assert (first, check.reference.factor) == (2, 3)
    capsys.readouterr()
