"""A learner's feedback page begins with the grader's record of each test (its status: passed,
failed or not run, and its message), read from the record the grading process wrote
(grader/safegrade/feedback_summary.py), every learner string escaped.

The page is made by the course's own `make feedback` (nbgrader's generate_feedback, with the
course's configuration) on a released copy of the course; the submission's grade and its tests'
record are written as autograde leaves them, so nothing is graded here.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from released_course import copy_of

from fxcourse.languages import assignment
from grader import instructor
from grader.course import Course
from grader.safegrade.assignments import catalogs_of
from grader.safegrade.feedback_summary import (
    SUMMARY_CLASS,
    messages_in_language_of,
    summary_html,
)
from grader.safegrade.result_files import FAILED, NOT_RUN, PASSED, TestResult, save_tests

ROOT = Path(__file__).resolve().parents[1]
EX1 = Course.configured().exercises[0]
STUDENT = "learner"
EVIL = "<script>alert('pwned')</script><img src=x onerror=alert(1)>"
pytestmark = pytest.mark.xdist_group("gintake_export")


def graded_cells(course: Course, assignment: str) -> list[tuple[str, float]]:
    path = course.source / assignment / f"{assignment}.ipynb"
    meta = [cell.metadata.get("nbgrader", {}) for cell in nbformat.read(path, 4).cells]
    return [(m["grade_id"], float(m["points"])) for m in meta if m.get("grade")]


def autograded(course: Course, student: str, assignment: str, points: dict[str, float]) -> None:
    """A submission as make autograde leaves it: the gradebook's grade and the autograded
    notebook (the released one: its outputs do not matter here)."""
    from nbgrader.api import Gradebook

    with Gradebook(course.gradebook_url, course.course_id) as book:
        book.update_or_create_student(student)
        with book.db.no_autoflush:
            submission = book.add_submission(assignment, student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                grade.auto_score = points[grade.name]
        book.db.commit()
    folder = course.autograded / student / assignment
    folder.mkdir(parents=True)
    shutil.copy(course.release / assignment / f"{assignment}.ipynb", folder)
    (folder / "timestamp.txt").write_text("2025-01-01 12:00:00.000000 UTC")


def summary_rows(page: str) -> dict[str, tuple[str, str]]:
    """test -> (status, message) as a reader sees the page's summary table."""
    found = re.search(rf'<div class="{SUMMARY_CLASS}">(.*?)</div>', page, re.S)
    assert found, "the feedback page has no summary of the recorded tests"
    cells = r"<tr><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td></tr>"
    rows = re.findall(cells, found[1], re.S)
    seen = lambda cell: html.unescape(re.sub(r"<[^>]+>", "", cell))  # noqa: E731
    return {seen(name): (seen(status), seen(message)) for name, status, message in rows}


def test_feedback_page_says_which_test_failed_and_which_did_not_run(released_course, tmp_path):
    course = Course.configured(copy_of(released_course, tmp_path / "course"))
    cells = graded_cells(course, EX1)
    (failed, most), (stopped, _), *others = cells
    autograded(course, STUDENT, EX1, {name: 0.0 for name, _ in cells})
    tests = [
        TestResult(failed, 0.0, most, FAILED, f"ValueError: {EVIL}\nsecond line"),
        TestResult(stopped, 0.0, most, NOT_RUN, ""),
        *(TestResult(name, points, points, PASSED) for name, points in others),
    ]
    save_tests(course.results, STUDENT, EX1, tests)

    assert instructor.feedback(course, [STUDENT], [EX1]) == 0
    page = (course.feedback / STUDENT / EX1 / f"{EX1}.html").read_text()
    rows = summary_rows(page)
    assert rows[failed] == ("failed", f"ValueError: {EVIL}\nsecond line")
    assert rows[stopped][0] == "not run" and "stopped before" in rows[stopped][1]
    assert all(rows[name] == ("passed", "") for name, _ in others)
    assert "<script>alert" not in page and "<img src=x" not in page
    first_cell = re.search(r'class="[^"]*\btext_cell_render\b[^"]*">\s*<div class="([^"]*)"', page)
    assert first_cell[1] == SUMMARY_CLASS  # at the top, before the notebook's cells


def test_a_learners_markup_in_a_message_is_text():
    tests = [TestResult("t1", 0.0, 1.0, FAILED, EVIL), TestResult('t"2<', 0.0, 1.0, NOT_RUN, "")]
    shown = summary_html(tests, {})
    assert "<script" not in shown and "<img" not in shown and 't"2<' not in shown
    assert "&lt;script&gt;" in shown and "\n" not in shown


def test_the_summary_of_a_translated_exercise_is_in_its_language():
    words = messages_in_language_of(assignment(EX1, "zh"), catalogs_of(ROOT))
    shown = summary_html([TestResult("t1", 0.0, 1.0, FAILED, "x")], words)
    assert "未通过" in shown and "信息" in shown and ">failed<" not in shown
    assert messages_in_language_of(EX1, catalogs_of(ROOT)) == {}  # English: as written


def test_no_summary_without_a_record(released_course, tmp_path):
    """Plain nbgrader graded it (no record of the tests): the page is nbgrader's alone."""
    course = Course.configured(copy_of(released_course, tmp_path / "course"))
    autograded(course, STUDENT, EX1, {name: 0.0 for name, _ in graded_cells(course, EX1)})
    assert instructor.feedback(course, [STUDENT], [EX1]) == 0
    page = (course.feedback / STUDENT / EX1 / f"{EX1}.html").read_text()
    assert SUMMARY_CLASS not in page
