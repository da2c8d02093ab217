"""Every exercise notebook (source and student version) runs headless, top to bottom.

Student versions of graded exercises are expected to fail their tests, and are checked that way.
The chapters are run by test_tryits.py (learner chapter and source, with their checkpoints).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from notebook_runner import error_outputs, execute, is_graded_student_version

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(
    p
    for folder in ("chapters/exercises", "solutions")
    for p in (ROOT / folder).rglob("ex*.ipynb")
    if ".ipynb_checkpoints" not in p.parts
)


def test_there_are_exercise_notebooks():
    assert len(NOTEBOOKS) == 6


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_runs(path: Path, record_property):
    nb = nbformat.read(path, as_version=4)
    if is_graded_student_version(path, nb, ROOT):
        seconds = _check_student_version_fails(path)
    else:
        executed, seconds = execute(path)
        errors = error_outputs(executed)
        assert not errors, f"{path.name} shows errors:\n" + "\n".join(errors)
    record_property("notebook_seconds", seconds)


def _check_student_version_fails(path: Path) -> float:
    """The unanswered starter must fail its visible tests (nbgrader validate --invert)."""
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", "validate", "--invert", path.name],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = result.stdout + result.stderr
    assert "Success!" in output, f"{path.name}: starter version passes a test?\n{output[-3000:]}"
    return time.perf_counter() - start
