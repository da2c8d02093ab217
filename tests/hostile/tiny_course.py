"""A tiny torch-free nbgrader assignment, built in a temporary folder, for the grader's tests.

``tiny`` asks for ``add_all(xs)`` (the sum of a list). It has a read-only setup cell with a helper
the tests use, one answer cell and three test cells worth 3 + 3 + 4 points, the last one with
hidden tests. ``release_notebook()`` is what a learner receives (as nbgrader would release it).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

ASSIGNMENT = "tiny"
NOTEBOOK = "tiny.ipynb"
SECRET_MARK = "SECRET-HIDDEN-TEST-MARK"


def cell(kind: str, source: str, **nbgrader) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(outputs=[], execution_count=None)
    if nbgrader:
        cell["metadata"]["nbgrader"] = {"schema_version": 3, **nbgrader}
    return cell


def source_notebook() -> dict:
    cells = [
        cell("markdown", "# Tiny\nWrite `add_all(xs)`, the sum of a list of numbers."),
        cell(
            "code",
            "import math\n\n\ndef check_sum(fn):\n    return fn([1, 2, 3]) == 6\n",
            grade=False,
            solution=False,
            locked=True,
            grade_id="setup",
        ),
        cell(
            "code",
            "def add_all(xs):\n    ### BEGIN SOLUTION\n    total = 0\n    for x in xs:\n"
            "        total += x\n    return total\n    ### END SOLUTION\n",
            grade=False,
            solution=True,
            locked=False,
            grade_id="add_all",
        ),
        cell(
            "code",
            "result = add_all([1, 2])\nassert isinstance(result, (int, float)), 'not a number'\n"
            "assert result == 3, 'add_all([1, 2]) should be 3'\n",
            grade=True,
            solution=False,
            locked=True,
            points=3,
            grade_id="test_basic",
        ),
        cell(
            "code",
            "assert check_sum(add_all), 'check_sum failed'\n",
            grade=True,
            solution=False,
            locked=True,
            points=3,
            grade_id="test_helper",
        ),
        cell(
            "code",
            "assert add_all([]) == 0, 'empty list'\n### BEGIN HIDDEN TESTS\n"
            f"# {SECRET_MARK}\nvalue = add_all([10, -2, 0.5])\n"
            "assert type(value) is float and math.isclose(value, 8.5), 'floats'\n"
            "### END HIDDEN TESTS\n",
            grade=True,
            solution=False,
            locked=True,
            points=4,
            grade_id="test_hidden",
        ),
    ]
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "cells": cells,
    }


def release_notebook(source: dict | None = None) -> dict:
    """The learner's starter: solution replaced by a stub, hidden tests removed."""
    nb = copy.deepcopy(source or source_notebook())
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            cell["source"] = (
                "def add_all(xs):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"
            )
        if meta.get("grade") and "BEGIN HIDDEN TESTS" in cell["source"]:
            cell["source"] = cell["source"].split("### BEGIN HIDDEN TESTS")[0]
    return nb


def with_answer(code: str, nb: dict | None = None, grade_id: str = "add_all") -> dict:
    nb = copy.deepcopy(nb or release_notebook())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == grade_id:
            cell["source"] = code
    return nb


CORRECT = (
    "def add_all(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n"
)


def make_course(
    root: Path,
    submissions: dict[str, object],
    source: dict | None = None,
    assignment: str = ASSIGNMENT,
) -> Path:
    """Create an nbgrader course at root with a source notebook and the given submissions.

    A submission is a notebook dict, raw bytes (written as <assignment>.ipynb), or a dict of
    {relative path: bytes | ("symlink" | "hardlink", target)} for several files.
    """
    root = Path(root)
    notebook = f"{assignment}.ipynb"
    folder = root / "source" / assignment
    folder.mkdir(parents=True)
    (folder / notebook).write_text(json.dumps(source or source_notebook(), indent=1))
    if not (root / "nbgrader_config.py").exists():
        (root / "nbgrader_config.py").write_text("c = get_config()\n")
    for student, content in submissions.items():
        folder = root / "submitted" / student / assignment
        folder.mkdir(parents=True)
        (folder / "timestamp.txt").write_text("2024-01-01 12:00:00.000000 UTC")
        if isinstance(content, dict) and "cells" in content:
            (folder / notebook).write_text(json.dumps(content, indent=1))
        elif isinstance(content, bytes):
            (folder / notebook).write_bytes(content)
        else:
            for rel, data in content.items():
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                if isinstance(data, tuple) and data[0] == "symlink":
                    (folder / rel).symlink_to(data[1])
                elif isinstance(data, tuple) and data[0] == "hardlink":
                    os.link(data[1], folder / rel)
                else:
                    (folder / rel).write_bytes(data)
    return root
