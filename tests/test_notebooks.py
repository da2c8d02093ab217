"""Every exercise starter runs headless, top to bottom, and fails its visible tests (as a learner
pressing Validate before answering sees it).

The exercises' sources run in test_grading.py: their reference answers, with every hidden test,
are graded by plain nbgrader in a kernel (and in the sandbox), and must score full marks. The
chapters are run by test_tryits.py (learner chapter and source, with their checkpoints).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from notebook_runner import is_graded_student_version

from grader import exercises

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [
    path
    for path in sorted((ROOT / "chapters" / "exercises").glob("*/*.ipynb"))
    if path.stem == path.parent.name
]


def test_there_are_exercise_notebooks():
    """A starter for each exercise the course finds in solutions/, and none other."""
    found = [path.parent.name for path in NOTEBOOKS]
    assert found == list(exercises.names(ROOT)) and found, found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_starter_runs_and_fails_its_visible_tests(path: Path, record_property):
    nb = nbformat.read(path, as_version=4)
    assert is_graded_student_version(path, nb, ROOT), f"{path.name} has no graded cells"
    record_property("notebook_seconds", _check_student_version_fails(path))


def _check_student_version_fails(path: Path) -> float:
    """The unanswered starter must fail its visible tests (nbgrader validate --invert), run
    where chapters/exercises/nbgrader_config.py applies the course's settings."""
    start = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbgrader",
            "validate",
            "--invert",
            f"{path.parent.name}/{path.name}",
        ],
        cwd=path.parent.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = result.stdout + result.stderr
    assert "Success!" in output, f"{path.name}: starter version passes a test?\n{output[-3000:]}"
    return time.perf_counter() - start
