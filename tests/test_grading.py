"""The three graded exercises and the instructor's nbgrader pipeline (grader/course_grader.py).

The pipeline runs for real on a temporary copy of the course (the repository's grader/ folders are
never touched): release, then one autograde batch over the reference answers, the untouched
student versions and the wrong answers of tests/submissions/ (each names its expected score),
then export and feedback.
"""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from submissions.build import Snippet, fill, reference_solutions, snippets, write_submission

from fxcourse.notebooks import problems

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "grader"))
import course_grader  # noqa: E402
from course_grader import ASSIGNMENTS, RELEASE  # noqa: E402

SNIPPETS = snippets()
# Per cell: enough to import torch on a busy machine. The endless-loop answer waits this out once.
CELL_TIMEOUT_S = 30
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def source_notebook(course: Path, assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(course / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)


@pytest.fixture(scope="session")
def released(tmp_path_factory) -> Path:
    """A copy of the course's sources and grader configuration, released."""
    course = tmp_path_factory.mktemp("released")
    skip = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    shutil.copytree(ROOT / "solutions", course / "solutions", ignore=skip)
    (course / "grader").mkdir()
    for path in (ROOT / "grader").glob("*.py"):
        shutil.copy(path, course / "grader")
    shutil.copy(ROOT / "nbgrader_config.py", course)
    course_grader.release(course, publish_to=course / "published")
    return course


@pytest.fixture(scope="session")
def graded(released: Path, tmp_path_factory) -> dict[str, Path]:
    """assignment -> a copy of the released course that autograded that assignment's test
    submissions (the reference answer, the untouched student version, the snippets) in one batch.
    The three batches run side by side, each with its own gradebook."""
    courses = {}
    for assignment in ASSIGNMENTS:
        course = tmp_path_factory.mktemp(f"course_{assignment}")
        shutil.copytree(released, course, dirs_exist_ok=True)
        submissions = tmp_path_factory.mktemp(f"submissions_{assignment}")
        student = nbformat.read(course / RELEASE / assignment / f"{assignment}.ipynb", 4)
        answers = reference_solutions(source_notebook(course, assignment))
        write_submission(submissions, "reference", assignment, fill(student, answers))
        write_submission(submissions, "untouched", assignment, student)
        for snippet in (s for s in SNIPPETS if s.assignment == assignment):
            submission = fill(student, answers | snippet.cells)
            write_submission(submissions, snippet.name, assignment, submission)
        course_grader.collect(submissions, course)
        courses[assignment] = course
    args = [f"--Execute.timeout={CELL_TIMEOUT_S}"]
    with ThreadPoolExecutor(len(courses)) as pool:
        statuses = pool.map(lambda course: course_grader.autograde(course, args), courses.values())
    failed = [name for name, status in zip(courses, statuses, strict=True) if status]
    assert not failed, f"nbgrader could not grade some submission of {failed}: see its log"
    return courses


def cell_scores(course: Path, student: str, assignment: str) -> dict[str, float]:
    """grade cell -> points the autograder gave, for failure messages."""
    from nbgrader.api import Gradebook

    url = f"sqlite:///{course / course_grader.GRADEBOOK}"
    with Gradebook(url, course_grader.COURSE_ID) as gradebook:
        notebook = gradebook.find_submission_notebook(assignment, assignment, student)
        return {grade.name: grade.score for grade in notebook.grades}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_submission_is_graded(graded: dict[str, Path], assignment: str):
    expected = {"reference", "untouched"} | {s.name for s in SNIPPETS if s.assignment == assignment}
    assert set(course_grader.scores(graded[assignment])) == expected


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_reference_answers_score_full_marks(graded: dict[str, Path], assignment: str):
    score = course_grader.scores(graded[assignment])["reference"][assignment]
    assert score == 10, cell_scores(graded[assignment], "reference", assignment)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_student_versions_score_zero(graded: dict[str, Path], assignment: str):
    score = course_grader.scores(graded[assignment])["untouched"][assignment]
    assert score == 0, cell_scores(graded[assignment], "untouched", assignment)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_wrong_answers_score_what_we_predict(graded: dict[str, Path], snippet: Snippet):
    course = graded[snippet.assignment]
    score = course_grader.scores(course)[snippet.name][snippet.assignment]
    per_cell = cell_scores(course, snippet.name, snippet.assignment)
    assert score == snippet.expected, f"{snippet.name}: got {score}, cells {per_cell}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_export_has_one_column_per_exercise(graded, assignment: str, tmp_path: Path):
    with course_grader.export(graded[assignment], tmp_path / "grades.csv").open() as handle:
        rows = list(csv.reader(handle))
    columns = [*ASSIGNMENTS, "total"]
    assert rows[0] == ["student_id", *columns]
    by_student = {}
    for student, *values in rows[1:]:  # an empty cell: nothing submitted
        points = [float(value) if value else None for value in values]
        by_student[student] = dict(zip(columns, points, strict=True))
    assert list(by_student) == sorted(by_student), "rows sorted by student id"
    reference = {a: 10.0 if a == assignment else None for a in ASSIGNMENTS} | {"total": 10.0}
    assert by_student["reference"] == reference
    assert set(by_student["untouched"].values()) == {0.0, None}
    for snippet in (s for s in SNIPPETS if s.assignment == assignment):
        row = by_student[snippet.name]
        assert row[assignment] == row["total"] == snippet.expected, (snippet.name, row)


def test_feedback_shows_messages_but_not_hidden_tests(graded: dict[str, Path]):
    student, assignment = "ex1_only_torch_sigmoid", "ex1_sigmoid_to_tanh"
    course = graded[assignment]
    assert course_grader.feedback(course, [student]) == 0
    page = course / course_grader.FEEDBACK / student / assignment / f"{assignment}.html"
    text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))  # what a reader sees
    assert "x.sigmoid(): the output differs" in text  # a failing visible test's message
    assert "torch.special.expit: the output differs" in text
    shown = {line.strip() for line in text.splitlines()}
    hidden = hidden_test_lines(source_notebook(course, assignment))
    assert not hidden & shown, f"feedback shows hidden test lines: {sorted(hidden & shown)[:5]}"
    assert not any(marker in text for marker in MARKERS)


def test_feedback_keeps_a_learners_quoted_marker(graded: dict[str, Path]):
    student, assignment = "ex1_quotes_hidden_markers", "ex1_sigmoid_to_tanh"
    course = graded[assignment]
    assert course_grader.feedback(course, [student]) == 0
    page = course / course_grader.FEEDBACK / student / assignment / f"{assignment}.html"
    text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
    assert "the grader keeps a" in text, "the learner's own comment should be shown as written"


def test_student_versions_are_current(released: Path):
    """chapters/exercises holds what `make release` generates now from solutions/."""
    for assignment in ASSIGNMENTS:
        fresh = json.loads((released / "published" / f"{assignment}.ipynb").read_text())
        committed_path = ROOT / course_grader.STUDENT_VERSIONS / f"{assignment}.ipynb"
        committed = json.loads(committed_path.read_text())
        assert committed == fresh, f"{committed_path} is stale: run `make release`"


def region_lines(nb: nbformat.NotebookNode, begin: str, end: str) -> set[str]:
    """Distinctive lines (stripped) between the markers that appear nowhere else in nb."""
    inside, outside = set(), set()
    for cell in nb.cells:
        within = False
        for line in cell.source.split("\n"):
            if begin in line or end in line:
                within = begin in line
                continue
            (inside if within else outside).add(line.strip())
    return {line for line in inside - outside if len(line) >= 12 and not line.startswith("#")}


def hidden_test_lines(nb: nbformat.NotebookNode) -> set[str]:
    return region_lines(nb, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")


def solution_lines(nb: nbformat.NotebookNode) -> set[str]:
    return region_lines(nb, "### BEGIN SOLUTION", "### END SOLUTION")


def test_no_solution_or_hidden_test_in_chapters():
    chapter_files = [p for p in (ROOT / "chapters").rglob("*") if p.is_file()]
    for path in chapter_files:
        text = path.read_text(errors="replace")
        assert not any(marker in text for marker in MARKERS), f"{path} holds a grading marker"
    for assignment in ASSIGNMENTS:
        source = source_notebook(ROOT, assignment)
        secret = solution_lines(source) | hidden_test_lines(source)
        assert len(secret) > 10, "the check found too few lines to compare"
        student_path = ROOT / course_grader.STUDENT_VERSIONS / f"{assignment}.ipynb"
        student = nbformat.read(student_path, as_version=4)
        shown = {line.strip() for cell in student.cells for line in cell.source.split("\n")}
        assert not secret & shown, f"{student_path} shows: {sorted(secret & shown)[:5]}"
        for path in (p for p in chapter_files if p.suffix == ".ipynb"):
            text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
            for block in solution_blocks(source):
                assert block not in text, f"{path} contains a solution of {assignment}"


def solution_blocks(nb: nbformat.NotebookNode) -> list[str]:
    pattern = re.compile(r"### BEGIN SOLUTION\n(.*?)\n\s*### END SOLUTION", re.DOTALL)
    return [block for cell in nb.cells for block in pattern.findall(cell.source)]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exercise_is_ten_points_over_three_or_more_cells(assignment: str):
    source = source_notebook(ROOT, assignment)
    points = [
        cell.metadata["nbgrader"]["points"]
        for cell in source.cells
        if cell.metadata.get("nbgrader", {}).get("grade")
    ]
    assert sum(points) == 10 and len(points) >= 3, points
    student_path = ROOT / course_grader.STUDENT_VERSIONS / f"{assignment}.ipynb"
    for nb_path in (student_path, ROOT / "solutions" / assignment / f"{assignment}.ipynb"):
        assert not problems(nbformat.read(nb_path, as_version=4)), f"{nb_path} is not clean"
