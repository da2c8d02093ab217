"""A tiny torch-free nbgrader course, built in a temporary folder, for the grader's tests.

The assignment ``tiny`` asks for ``add_all(xs)`` (the sum of a list). Its source notebook has a
read-only setup cell with a helper the visible tests use, one answer cell and three test cells
worth 3 + 3 + 4 points; the hidden part of each calls the probe and check in probes.py and
checks.py, as in the course's exercises: checks.py's `inputs(grade_id, seed)` makes each test's
lists, its probe sums them, its check compares. checks.py holds SECRET_MARK: no learner may ever
see it.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

ASSIGNMENT = "tiny"
NOTEBOOK = "tiny.ipynb"
SECRET_MARK = "SECRET-HIDDEN-CHECK-MARK"
HIDDEN = """### BEGIN HIDDEN TESTS
from grader.safegrade.kernel import run_check

run_check("tiny", "{grade_id}", globals())
### END HIDDEN TESTS
"""
PROBES = """from grader.safegrade.probing import learner


def test_basic(namespace, inputs):
    return learner(namespace, "add_all")(inputs)


test_helper = test_basic


def test_hidden(namespace, inputs):
    add_all = learner(namespace, "add_all")
    return {name: add_all(numbers) for name, numbers in inputs.items()}
"""
CHECKS = f"""import math

# {SECRET_MARK}


def inputs(grade_id, seed):
    if grade_id == "test_hidden":
        return {{"empty": [], "floats": [10, -2, 0.5]}}
    return {{"test_basic": [1, 2], "test_helper": [1, 2, 3]}}[grade_id]


def test_basic(value, numbers):
    assert isinstance(value, (int, float)), "not a number"
    assert value == sum(numbers), f"add_all({{numbers}}) should be {{sum(numbers)}}"


def test_helper(value, numbers):
    assert value == sum(numbers), "check_sum failed"


def test_hidden(data, cases):
    assert data["empty"] == 0, "empty list"
    value = data["floats"]
    assert type(value) is float and math.isclose(value, sum(cases["floats"])), "floats"
"""
CONFIG = """from pathlib import Path

from grader.course import Course
from grader.learner_html import LearnerHTML
from grader.safegrade.preprocessors import configure

c = get_config()
c.CourseDirectory.course_id = "tiny-course"
c.HTMLExporter.preprocessors = [LearnerHTML]  # as the course's: learners' markup cleaned
# a Course whose class data is the root: nbgrader's own layout (autograded/, ... there)
course = Course(Path({root!r}), "tiny-course", Path("."))
c.CourseDirectory.source_directory = str(course.relative(course.source))
configure(c, course)
c.GradingLimits.cell_timeout = {cell_timeout}
c.GradingLimits.budget = {budget}
c.GradingLimits.memory_mb = 1024
c.GradingLimits.tmp_mb = 128
"""
CORRECT = (
    "def add_all(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n"
)


def cell(kind: str, source: str, **nbgrader) -> dict:
    made = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        made.update(outputs=[], execution_count=None)
    if nbgrader:
        made["metadata"]["nbgrader"] = {"schema_version": 3, **nbgrader}
    return made


def test_cell(grade_id: str, points: int, visible: str) -> dict:
    source = visible + HIDDEN.format(grade_id=grade_id)
    flags = {"grade": True, "solution": False, "locked": True}
    return cell("code", source, grade_id=grade_id, points=points, **flags)


def source_notebook() -> dict:
    locked = {"grade": False, "solution": False, "locked": True}
    answer = {"grade": False, "solution": True, "locked": False}
    cells = [
        cell("markdown", "# Tiny\nWrite `add_all(xs)`, the sum of a list of numbers."),
        cell(
            "code",
            "def check_sum(fn):\n    return fn([1, 2, 3]) == 6\n",
            grade_id="setup",
            **locked,
        ),
        cell(
            "code",
            "def add_all(xs):\n    ### BEGIN SOLUTION\n    total = 0\n    for x in xs:\n"
            "        total += x\n    return total\n    ### END SOLUTION\n",
            grade_id="add_all",
            **answer,
        ),
        test_cell("test_basic", 3, "assert add_all([1, 2]) == 3, 'add_all([1, 2]) should be 3'\n"),
        test_cell("test_helper", 3, "assert check_sum(add_all), 'check_sum failed'\n"),
        test_cell("test_hidden", 4, "assert add_all([]) == 0, 'empty list'\n"),
    ]
    kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": kernel, "cells": cells}


def release_notebook() -> dict:
    """The learner's starter: solution replaced by a stub, hidden tests removed."""
    nb = copy.deepcopy(source_notebook())
    for made in nb["cells"]:
        meta = made["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            made["source"] = (
                "def add_all(xs):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
            )
        if meta.get("grade"):
            made["source"] = made["source"].split("### BEGIN HIDDEN TESTS")[0]
    return nb


def with_answer(code: str, nb: dict | None = None) -> dict:
    nb = copy.deepcopy(nb or release_notebook())
    for made in nb["cells"]:
        if made["metadata"].get("nbgrader", {}).get("grade_id") == "add_all":
            made["source"] = code
    return nb


def make_course(root: Path, cell_timeout: float = 2, budget: float = 10) -> Path:
    """The course at root: source notebook, probes and checks, configuration; released."""
    folder = root / "solutions" / ASSIGNMENT  # Course.source
    folder.mkdir(parents=True)
    (folder / NOTEBOOK).write_text(json.dumps(source_notebook(), indent=1))
    (folder / "probes.py").write_text(PROBES)
    (folder / "checks.py").write_text(CHECKS)
    values = {"root": str(root.resolve())}
    config = CONFIG.format(cell_timeout=cell_timeout, budget=budget, **values)
    (root / "nbgrader_config.py").write_text(config)
    nbgrader(root, "generate_assignment", ASSIGNMENT)
    return root


def add_submission(root: Path, student: str, content) -> Path:
    """content: a notebook dict, raw bytes (written as tiny.ipynb), or {relative path: bytes |
    ("symlink", target) | ("fifo",)} (paths as str or bytes)."""
    folder = root / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / "timestamp.txt").write_text("2024-01-01 12:00:00.000000 UTC")
    (folder / "submission_secret.txt").write_text(f"secret of {student}")  # as `nbgrader submit`
    if isinstance(content, dict) and "cells" in content:
        content = {NOTEBOOK: json.dumps(content, indent=1).encode()}
    elif isinstance(content, bytes):
        content = {NOTEBOOK: content}
    for rel, data in content.items():
        path = os.path.join(os.fsencode(folder), os.fsencode(rel))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(data, tuple) and data[0] == "symlink":
            os.symlink(data[1], path)
        elif isinstance(data, tuple) and data[0] == "fifo":
            os.mkfifo(path)
        else:
            with open(path, "wb") as handle:
                handle.write(data)
    return folder


def nbgrader(root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done
