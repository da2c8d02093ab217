"""Committed notebooks carry no outputs or execution counts, and all code passes ruff."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat

from courseware import notebooks

ROOT = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).with_name("ruff")


def _tracked_notebooks() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.ipynb"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).exists()]


def test_notebooks_are_committed_clean():
    dirty = {
        str(path.relative_to(ROOT)): found
        for path in _tracked_notebooks()
        if (found := notebooks.problems(nbformat.read(path, as_version=4)))
    }
    assert not dirty, f"run `make strip`: {dirty}"


def test_strip_keeps_nbgrader_metadata_and_removes_outputs():
    cell = nbformat.v4.new_code_cell("1 + 1", execution_count=3)
    cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"})]
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "t1", "points": 2, "locked": True}
    cell.metadata["execution"] = {"iopub.status.busy": "2026-01-01"}
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert notebooks.problems(nb)
    cleaned = notebooks.clean(nb)
    assert notebooks.problems(cleaned) == []
    assert cleaned.cells[0].metadata == {
        "nbgrader": {"grade": True, "grade_id": "t1", "points": 2, "locked": True}
    }


def test_ruff_lint_and_format_pass_on_code_and_notebooks():
    for command in (["check", "."], ["format", "--check", "."]):
        result = subprocess.run([RUFF, *command], cwd=ROOT, capture_output=True, text=True)
        assert result.returncode == 0, f"ruff {' '.join(command)}:\n{result.stdout}{result.stderr}"


def test_a_course_of_another_tree_gets_its_own_kernel_everywhere(tmp_path):
    """The kernel is read from the course given (its course.json), not from this checkout's at
    import: cleaning, a chapter's kernel check, selfcheck and the site's Sphinx command."""
    from courseware import authoring, website
    from courseware.repository import Repository
    from fxcourse import selfcheck

    kernel = {"name": "other-course", "display_name": "Python 3 (other course)"}
    settings = {"course_id": "other", "classdata": "data", "kernel": kernel}
    (tmp_path / "course.json").write_text(json.dumps(settings))
    other = Repository(tmp_path)
    cleaned = notebooks.clean(nbformat.v4.new_notebook(), tmp_path)
    assert cleaned.metadata.kernelspec["name"] == "other-course"
    assert notebooks.problems(cleaned, tmp_path) == [] and notebooks.problems(cleaned)
    assert "Python 3 (other course)" in authoring.kernel_check("en", other)
    command = website.sphinx_command(tmp_path, tmp_path, tmp_path, "en", other)
    assert "nb_kernel_rgx_aliases..*=other-course" in command
    assert selfcheck.main([], tmp_path) == 0  # a tree without chapters: nothing to run
