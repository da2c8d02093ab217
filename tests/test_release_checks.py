"""`make release` refuses a test cell whose grade_id has no probe or no check (grader/
release_checks.py): found when the exercise is released, not on every submission while grading."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from grader import exercises, instructor
from grader.course import Course
from grader.release_checks import refuse_untested, top_names

EX1 = "ex1_sigmoid_to_tanh"


def test_top_names_reads_functions_assignments_and_imports(tmp_path):
    module = tmp_path / "probes.py"
    module.write_text(
        "from m import a as test_b\nimport os\n\ndef test_c(): pass\n"
        "test_d = test_e = test_c\n\nif True:\n    def test_hidden(): pass\n"
    )
    assert top_names(module) == {"test_b", "os", "test_c", "test_d", "test_e"}
    assert top_names(tmp_path / "absent.py") == set()


def test_each_part_a_test_cell_lacks_is_named(tmp_path):
    (tmp_path / "probes.py").write_text("def test_one(ns, inputs): pass\n")
    (tmp_path / "checks.py").write_text("def test_two(data, inputs): pass\n")
    cells = [
        nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade_id": g, "grade": True}})
        for g in ("test_one", "test_two", "test_three")
    ]
    with pytest.raises(ValueError) as refused:
        refuse_untested("ex9", tmp_path, cells)
    message = str(refused.value)
    assert "test_one (no check in checks.py)" in message
    assert "test_two (no probe in probes.py)" in message
    assert "test_three (no probe in probes.py, no check in checks.py)" in message
    (tmp_path / "probes.py").write_text("test_one = test_two = test_three = print\n")
    (tmp_path / "checks.py").write_text("test_one = test_two = test_three = print\n")
    refuse_untested("ex9", tmp_path, cells)  # each has both: nothing refused


def test_make_release_refuses_an_exercise_with_a_test_without_its_check(tmp_path, capfd):
    course = Course.configured(instructor.copy_course(tmp_path / "course", [EX1]))
    checks = course.source / EX1 / "checks.py"
    grade_id = next(
        cell.metadata.nbgrader["grade_id"]
        for cell in nbformat.read(course.source / EX1 / f"{EX1}.ipynb", 4).cells
        if exercises.is_test_cell(cell)
    )
    text, count = re.subn(
        rf"^def {grade_id}\(", "def renamed_away(", checks.read_text(), flags=re.M
    )
    assert count == 1, f"checks.py of {EX1} defines {grade_id} once"
    checks.write_text(text)
    with pytest.raises(SystemExit):
        instructor.release(course)
    said = "".join(capfd.readouterr())
    assert f"{grade_id} (no check in checks.py)" in said, said[-3000:]
    assert not (course.release / EX1 / f"{EX1}.ipynb").exists()


def test_every_exercise_of_the_course_passes_the_check():
    for exercise in Course.configured().exercises:
        folder = Path(Course.configured().source / exercise)
        nb = nbformat.read(folder / f"{exercise}.ipynb", 4)
        refuse_untested(exercise, folder, [c for c in nb.cells if exercises.is_test_cell(c)])
