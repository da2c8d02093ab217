"""The chapters' "Try it" prompts: blanks in the learner chapters, checkpoints that check the task.

For every chapter source in solutions/ (see fxcourse/authoring.py for the format):
- the learner chapter, run top to bottom in a fresh kernel, reaches its last cell with no error,
  shows one "Not yet" per try-it and passes no checkpoint by itself;
- the source, run top to bottom with the checkpoint also run right after the scaffold and after
  every written-down mistake, says "Not yet" to each of those and passes on the reference answer.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat
import pytest
from notebook_runner import error_outputs, execute

from fxcourse import authoring, messages

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(authoring.SOURCES.glob("[0-9][0-9]_*.ipynb"))
PASSED = re.compile(r"^Checkpoint (\S+) passed\.")
NOT_YET = re.compile(r"^Not yet \(try it (\S+)\)")


def verdict_patterns(language: str) -> tuple[re.Pattern, re.Pattern]:
    """The English patterns above, from the messages as a chapter in `language` shows them."""
    messages.use_language(language)
    try:
        passed = re.escape(messages._("Checkpoint {id} passed."))
        not_yet = messages._("Not yet (try it {id}): {problem}").partition("{problem}")[0]
    finally:
        messages.use_language("en")
    any_id = r"(\S+?)"
    return (
        re.compile("^" + passed.replace(re.escape("{id}"), any_id)),
        re.compile("^" + re.escape(not_yet).replace(re.escape("{id}"), any_id)),
    )


def checkpoint_verdicts(cell: nbformat.NotebookNode, language: str = "en") -> list[tuple[str, str]]:
    """(verdict, try-it id) for each checkpoint result a cell displayed."""
    found = []
    passed, not_yet = (PASSED, NOT_YET) if language == "en" else verdict_patterns(language)
    for output in cell.get("outputs", []):
        text = output.get("data", {}).get("text/plain", "")
        for pattern, verdict in ((passed, "passed"), (not_yet, "not yet")):
            if match := pattern.match(text):
                found.append((verdict, match.group(1)))
    return found


def with_extra_checkpoints(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a source chapter whose checkpoint also runs after the scaffold and each mistake,
    each copy tagged with the role it judges."""
    probe = copy.deepcopy(nb)
    cells = []
    checks = {
        marker[0]: cell
        for cell in nb.cells
        if (marker := authoring.tryit_of(cell)) and marker[1] == "check"
    }
    for cell in probe.cells:
        cells.append(cell)
        marker = authoring.tryit_of(cell)
        if marker and marker[1] in ("scaffold", "mistake"):
            extra = copy.deepcopy(checks[marker[0]])
            extra.metadata["judges"] = marker[1]
            extra["id"] = f"{extra['id']}-{len(cells)}"
            cells.append(extra)
    probe.cells = cells
    return probe


def run_notebook(nb: nbformat.NotebookNode, tmp_path: Path, name: str, record_property):
    """Execute `nb` from the chapters folder (where learners run it), via a scratch copy; its
    wall time goes into pytest's summary of notebook times."""
    path = tmp_path / name
    nbformat.write(nb, path)
    executed, seconds = execute(path, cwd=authoring.CHAPTERS)
    record_property("notebook_seconds", seconds)
    return executed


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_learner_chapter_runs_to_the_end_with_a_not_yet_per_tryit(
    source, tmp_path, record_property
):
    learner = nbformat.read(authoring.CHAPTERS / source.name, as_version=4)
    expected = sorted(authoring.tryits(learner))
    executed = run_notebook(learner, tmp_path, source.name, record_property)
    assert not error_outputs(executed), error_outputs(executed)
    verdicts = [v for cell in executed.cells for v in checkpoint_verdicts(cell)]
    passed = [tryit for verdict, tryit in verdicts if verdict == "passed"]
    assert not passed, f"checkpoints passed with nothing filled in: {passed}"
    assert sorted(tryit for _, tryit in verdicts) == expected


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_checkpoints_reject_scaffold_and_mistakes_and_accept_the_answer(
    source, tmp_path, record_property
):
    nb = nbformat.read(source, as_version=4)
    executed = run_notebook(with_extra_checkpoints(nb), tmp_path, source.name, record_property)
    assert not error_outputs(executed), error_outputs(executed)
    wrong = []
    for index, cell in enumerate(executed.cells):
        marker = authoring.tryit_of(cell)
        if not marker or marker[1] != "check":
            continue
        want = "not yet" if cell.metadata.get("judges") else "passed"
        got = checkpoint_verdicts(cell)
        if got != [(want, marker[0])]:
            judged = cell.metadata.get("judges", "answer")
            wrong.append(f"try it {marker[0]}, cell {index} after the {judged}: {got}")
    assert not wrong, "\n".join(wrong)


def test_a_chinese_learner_chapter_says_not_yet_in_chinese_per_tryit(tmp_path, record_property):
    """One translated chapter (they share code with the English ones, which all run above)."""
    name = "02_fx_ir.ipynb"
    learner = nbformat.read(authoring.CHAPTERS / "zh" / name, as_version=4)
    expected = sorted(authoring.tryits(nbformat.read(authoring.CHAPTERS / name, as_version=4)))
    executed = run_notebook(learner, tmp_path, name, record_property)
    assert not error_outputs(executed), error_outputs(executed)
    verdicts = [v for cell in executed.cells for v in checkpoint_verdicts(cell, "zh")]
    assert verdicts == [("not yet", tryit) for tryit in expected], verdicts
    shown = [
        o for c in executed.cells for o in c.get("outputs", []) if "text/html" in o.get("data", {})
    ]
    boxes = [
        o["data"]["text/html"] for o in shown if "fxcourse-checkpoint" in o["data"]["text/html"]
    ]
    assert len(boxes) == len(expected) and all("还没有通过" in box for box in boxes), boxes[:1]


def test_an_error_in_the_learners_code_points_at_the_learners_line(capsys):
    import torch

    from fxcourse.tryit import checkpoint

    def learners_answer():
        return torch.fx.symbolic_trace(lambda x: x if x.sum() > 0 else -x)  # raises in torch.fx

    with checkpoint("9.9", "a goal"):
        learners_answer()
    shown = capsys.readouterr().out
    assert "TraceError" in shown
    assert "line " in shown and "x if x.sum() > 0 else -x" in shown, shown
