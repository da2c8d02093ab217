"""The sandboxed grader on the course's three real exercises (solutions/<assignment>/).

The guards must never cost a correct answer points: the reference answer of each exercise scores
full marks under the sandbox, and the untouched starter scores 0. `make autograde` uses this grader,
so the realistic wrong answers in tests/submissions/ must earn exactly the partial marks predicted
in their docstrings here too (tests/test_grading.py checks the same under plain nbgrader).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from submissions.build import fill, reference_solutions, snippets, write_submission

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = sorted(p.name for p in (ROOT / "solutions").iterdir() if any(p.glob("*.ipynb")))
STUB = r"\1# YOUR CODE HERE\n\1raise NotImplementedError()\n"
SNIPPETS = snippets()


def starter(source: dict) -> dict:
    """The source notebook with every solution block replaced by nbgrader's stub."""
    nb = json.loads(json.dumps(source))
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("solution"):
            text = "".join(cell["source"])
            cell["source"] = re.sub(
                r"^([ \t]*)### BEGIN SOLUTION.*?### END SOLUTION[^\n]*\n?",
                STUB,
                text,
                flags=re.S | re.M,
            )
    return nb


def test_there_are_exercises():
    assert len(EXERCISES) >= 3, EXERCISES


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    """Every exercise's reference answer and untouched starter, graded in one run."""
    course = tmp_path_factory.mktemp("exercises")
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    for exercise in EXERCISES:
        source_path = next((ROOT / "solutions" / exercise).glob("*.ipynb"))
        source = json.loads(source_path.read_text())
        (course / "source" / exercise).mkdir(parents=True)
        (course / "source" / exercise / source_path.name).write_text(json.dumps(source))
        for student, nb in (("reference", source), ("untouched", starter(source))):
            folder = course / "submitted" / student / exercise
            folder.mkdir(parents=True)
            (folder / source_path.name).write_text(json.dumps(nb))
    _write_snippet_submissions(course / "submitted")
    run = subprocess.run(
        [sys.executable, "-m", "grader.safegrade", "autograde", "*", "--workers=2", "--no-sync"]
        + ["--timeout=30"],  # one snippet loops forever: it waits this out once per test
        cwd=course,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return course / "autograded" / ".safegrade"


def _write_snippet_submissions(submitted: Path) -> None:
    """One student per wrong-answer snippet, built like tests/test_grading.py builds them."""
    for snippet in SNIPPETS:
        student_version = ROOT / "chapters" / "exercises" / f"{snippet.assignment}.ipynb"
        source = ROOT / "solutions" / snippet.assignment / f"{snippet.assignment}.ipynb"
        answers = reference_solutions(nbformat.read(source, as_version=4))
        student = nbformat.read(student_version, as_version=4)
        write_submission(
            submitted, snippet.name, snippet.assignment, fill(student, answers | snippet.cells)
        )


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda snippet: snippet.name)
def test_wrong_answers_earn_the_predicted_partial_marks(graded, snippet):
    result = json.loads((graded / snippet.assignment / f"{snippet.name}.json").read_text())
    assert result["score"] == snippet.expected, f"{snippet.name}: {result['reason']}"


@pytest.mark.parametrize("exercise", EXERCISES)
def test_reference_scores_full_marks_and_starter_zero(graded, exercise):
    reference = json.loads((graded / exercise / "reference.json").read_text())
    untouched = json.loads((graded / exercise / "untouched.json").read_text())
    assert reference["score"] == reference["max_score"] == 10, reference["reason"]
    assert untouched["score"] == 0, untouched["reason"]
    assert "NotImplementedError" in untouched["reason"]
