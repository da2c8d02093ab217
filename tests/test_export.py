"""The gradebook export (grades.csv and grades_by_test.csv) and late work.

The export test fills a released course's real nbgrader gradebook through nbgrader's API (no
grading needed to read it back); the late-work test grades three notebooks for real with
`nbgrader autograde` and the course's configuration (due date, timestamp.txt, late penalty plugin).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import nbformat
import pytest
from released_course import copy_of
from submissions.build import fill, reference_solutions, write_submission

from grader import exercises, instructor
from grader.course import Course

ASSIGNMENTS = Course.configured().exercises  # this repository's

ROOT = Path(__file__).resolve().parents[1]

EX1, EX2, EX3 = ASSIGNMENTS
FORMULA = '=HYPERLINK("http://example.invalid")'
pytestmark = pytest.mark.xdist_group("gintake_export")


def graded_cells(assignment: str) -> list[tuple[str, float]]:
    """(grade id, points) of the source notebook's graded cells, in order."""
    path = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    cells = nbformat.read(path, as_version=4).cells
    meta = [cell.metadata.get("nbgrader", {}) for cell in cells]
    return [(m["grade_id"], m["points"]) for m in meta if m.get("grade")]


@pytest.fixture(scope="module")
def released(released_course) -> Path:
    """A copy of the course's sources and grader configuration, released (gradebook entries):
    shared, never changed."""
    return released_course


@pytest.fixture
def course(released: Path, tmp_path: Path) -> Path:
    return copy_of(released, tmp_path / "course")


def gradebook(course: Path):
    from nbgrader.api import Gradebook

    course = Course.configured(course)
    return Gradebook(course.gradebook_url, course.course_id)


def record(course: Path, student: str, assignment: str, points: dict[str, float], penalty=0.0):
    """A graded submission in the gradebook, as autograde leaves one."""
    with gradebook(course) as book:
        book.update_or_create_student(student)
        with book.db.no_autoflush:  # add_submission links rows before adding them (SAWarning)
            submission = book.add_submission(assignment, student)
        for notebook in submission.notebooks:
            notebook.late_submission_penalty = penalty or None
            for grade in notebook.grades:
                grade.auto_score = points[grade.name]
        book.db.commit()


def read_csv(path: Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], {row[0]: dict(zip(rows[0][1:], row[1:], strict=True)) for row in rows[1:]}


def test_export_tells_missing_work_from_a_zero_and_lists_every_test(course: Path):
    full = {a: dict(graded_cells(a)) for a in ASSIGNMENTS}
    for assignment in ASSIGNMENTS:
        record(course, "ada", assignment, full[assignment])
    record(course, "zed", EX1, dict.fromkeys(full[EX1], 0.0))  # submitted, scored 0
    first, *rest = graded_cells(EX3)
    record(course, "pat", EX1, full[EX1], penalty=2.0)  # late
    record(course, "pat", EX3, {first[0]: first[1]} | {name: 0.0 for name, _ in rest})
    with gradebook(course) as book:
        book.update_or_create_student("nil")  # on the roster, handed in nothing
    record(course, FORMULA, EX1, full[EX1])  # a student id a spreadsheet would run
    ungraded = {("uma", EX2): "error", ("pat", EX3): "grader-error", ("vic", EX3): "grader-error"}
    for (student, assignment), status in ungraded.items():  # make autograde's result files
        folder = Course.configured(course).results / assignment
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{student}.json").write_text(json.dumps({"status": status}))

    header, grades = read_csv(instructor.export(course))
    assert header == ["student_id", *ASSIGNMENTS, "total"]
    assert grades == {
        "ada": {EX1: "10", EX2: "10", EX3: "10", "total": "30"},
        "nil": {EX1: "", EX2: "", EX3: "", "total": ""},
        # pat's grade in the gradebook (a later plain nbgrader autograde) wins over the old file
        "pat": {EX1: "8", EX2: "", EX3: f"{first[1]:g}", "total": f"{8 + first[1]:g}"},
        "uma": {EX1: "", EX2: "could not grade", EX3: "", "total": ""},
        "vic": {EX1: "", EX2: "", EX3: "grader failed", "total": ""},
        "zed": {EX1: "0", EX2: "", EX3: "", "total": "0"},
        "'" + FORMULA: {EX1: "10", EX2: "", EX3: "", "total": "10"},
    }

    header, by_test = read_csv(Course.configured(course).exports / "grades_by_test.csv")
    expected_columns = [f"{a}:{name}" for a in ASSIGNMENTS for name in [*full[a], "late_penalty"]]
    assert header == ["student_id", *expected_columns]
    assert set(by_test["nil"].values()) == {""}
    assert by_test["zed"][f"{EX1}:{next(iter(full[EX1]))}"] == "0"
    assert by_test["zed"][f"{EX2}:{next(iter(full[EX2]))}"] == ""
    assert by_test["pat"][f"{EX1}:late_penalty"] == "2"
    for student, row in by_test.items():  # the cells, less the penalty, give grades.csv
        for assignment in ASSIGNMENTS:
            values = [row[f"{assignment}:{name}"] for name in full[assignment]]
            if grades[student][assignment] in ("could not grade", "grader failed"):
                assert set(values) == {grades[student][assignment]}, (student, assignment)
                continue
            if grades[student][assignment] == "":
                assert values == [""] * len(values) and row[f"{assignment}:late_penalty"] == ""
                continue
            net = sum(map(float, values)) - float(row[f"{assignment}:late_penalty"])
            assert net == float(grades[student][assignment]), (student, assignment)


def test_a_submission_in_another_language_is_its_exercises_grade(course: Path, class_languages):
    """The Chinese assignment of an exercise (grader/exercises.py) has its own gradebook entries;
    the export counts a learner's graded submission of it in the exercise's column, and their
    newest graded submission when they handed in both languages."""
    zh, full = exercises.translated(EX1, "zh"), dict(graded_cells(EX1))
    # The class gets Chinese learners: that one assignment generated as make release would.
    exercises.write_translation(class_languages(course, "en", "zh"), EX1, "zh")
    generate = [sys.executable, "-m", "grader.exercises", "generate", "--log-level=30", zh]
    subprocess.run(generate, cwd=course, check=True, capture_output=True, timeout=600)
    first, *rest = graded_cells(EX1)
    record(course, "lin", zh, {first[0]: first[1]} | {name: 0.0 for name, _ in rest})
    record(course, "bo", EX1, dict.fromkeys(full, 0.0))
    record(course, "bo", zh, full)  # later than the English one: the grade
    with gradebook(course) as book:
        late = book.find_submission(zh, "bo")
        late.timestamp = book.find_submission(EX1, "bo").timestamp or datetime(2030, 1, 2)
        late.timestamp += timedelta(days=1)
        book.db.commit()
    header, grades = read_csv(instructor.export(course))
    assert header == ["student_id", *ASSIGNMENTS, "total"]
    assert grades["lin"][EX1] == f"{first[1]:g}" and grades["bo"][EX1] == "10"
    header, by_test = read_csv(Course.configured(course).exports / "grades_by_test.csv")
    assert by_test["lin"][f"{EX1}:{first[0]}"] == f"{first[1]:g}"


def configured_penalty(course: Path, score: float, seconds_late: float) -> float:
    """The penalty the course's configured late-submission plugin gives."""
    from nbgrader.preprocessors import AssignLatePenalties
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    plugin = AssignLatePenalties(config=config).plugin_class(config=config)
    return plugin.late_submission_penalty("someone", score, seconds_late)


def upload(folder: Path, student: str, nb: nbformat.NotebookNode, when: datetime) -> Path:
    """A submission as nbgrader's exchange delivers it: the notebook and timestamp.txt."""
    path = write_submission(folder, student, EX1, nb)
    (path.parent / "timestamp.txt").write_text(f"{when:%Y-%m-%d %H:%M:%S.%f} UTC")
    return folder


def test_late_work_is_penalised_and_a_resubmission_is_graded_again(course: Path, tmp_path: Path):
    due = datetime(2025, 3, 1, 12, 0)
    with gradebook(course) as book:
        book.update_or_create_assignment(EX1, duedate=due)
    student_version = nbformat.read(
        Course.configured(course).release / EX1 / f"{EX1}.ipynb", as_version=4
    )
    source = nbformat.read(course / "solutions" / EX1 / f"{EX1}.ipynb", as_version=4)
    answered = fill(student_version, reference_solutions(source))
    first = upload(tmp_path / "first", "punctual", answered, due - timedelta(hours=1))
    upload(first, "tardy", student_version, due - timedelta(hours=2))  # on time, unanswered
    assert not instructor.collect(first, course).refused
    assert instructor.nbgrader(course, "autograde", EX1, "--force") == 0
    _, grades = read_csv(instructor.export(course))
    assert (grades["punctual"][EX1], grades["tardy"][EX1]) == ("10", "0")

    late = due + timedelta(days=1, hours=1)  # into the second day after the due date
    second = upload(tmp_path / "second", "tardy", answered, late)
    assert instructor.collect(second, course).collected == [("tardy", EX1)]
    assert instructor.nbgrader(course, "autograde", EX1, "--force", "--student=tardy") == 0
    penalty = configured_penalty(course, 10.0, (late - due).total_seconds())
    assert penalty > 0, "the course configures no penalty for late work"
    _, grades = read_csv(instructor.export(course))
    _, by_test = read_csv(Course.configured(course).exports / "grades_by_test.csv")
    assert float(grades["tardy"][EX1]) == 10 - penalty
    assert float(by_test["tardy"][f"{EX1}:late_penalty"]) == penalty
    assert (grades["punctual"][EX1], by_test["punctual"][f"{EX1}:late_penalty"]) == ("10", "0")
    with gradebook(course) as book:
        assert book.find_submission(EX1, "tardy").timestamp == late


def grader_command(course: Path, *args: str) -> subprocess.CompletedProcess:
    """course_grader.py as a hub terminal runs it: the venv's python by path, not on PATH."""
    script = ROOT / "grader" / "course_grader.py"
    env = {**os.environ, "PATH": os.pathsep.join(["/usr/bin", "/bin"])}
    command = [sys.executable, str(script), "--course", str(course), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_export_autograde_and_feedback_refuse_typos_and_empty_inputs(tmp_path, class_languages):
    # no gradebook yet: nbgrader makes one; a class with Chinese learners: translations are named
    fresh = class_languages(instructor.copy_course(tmp_path / "fresh"), "en", "zh")
    empty = grader_command(fresh, "export")
    assert empty.returncode == 1, empty.stderr
    assert "nothing to export" in empty.stderr and "Traceback" not in empty.stderr
    assert Course.configured(
        fresh
    ).gradebook.exists()  # made with the venv's alembic although not on PATH
    for command in (["export", "ex1"], ["submitted", "ex9_typo"]):
        typo = grader_command(fresh, *command)
        assert typo.returncode == 2, typo.stderr
        known = exercises.assignments_of(fresh)  # each exercise, then its Chinese one
        assert f"the assignments are {', '.join(known)}" in typo.stderr
        assert set(ASSIGNMENTS) < set(known)
    nothing = grader_command(fresh, "submitted", EX2)
    assert nothing.returncode == 1 and f"holds no submission of {EX2}" in nothing.stderr
    nothing_at_all = grader_command(fresh, "submitted")  # make autograde's check before grading
    assert nothing_at_all.returncode == 1 and "nothing to grade" in nothing_at_all.stderr
    before_grading = grader_command(fresh, "feedback")
    assert before_grading.returncode == 1, before_grading.stderr
    assert "nothing autograded yet" in before_grading.stderr
    one_typo = grader_command(fresh, "feedback", "--assignment", "ex9")
    assert one_typo.returncode == 2 and EX2 in one_typo.stderr
    assert "ERROR" not in before_grading.stderr and "Traceback" not in before_grading.stderr


def test_feedback_names_the_uploads_make_autograde_could_not_grade(tmp_path: Path, capsys):
    """Their typed results say why there is no feedback for them (nbgrader has none to render)."""
    (tmp_path / "solutions" / EX1).mkdir(parents=True)  # the course's exercise: its source
    (tmp_path / "solutions" / EX1 / f"{EX1}.ipynb").write_text("{}")
    results = Course.configured(tmp_path).results
    why = {"uma": ("error", "0: the grader could not grade this submission: NotJSONError")}
    why |= {"vic": ("grader-error", "not graded: the grader failed, not the submission; rerun")}
    why |= {"ada": ("graded", "10/10: all 3 tests passed")}
    for student, (status, reason) in why.items():
        (results / EX1).mkdir(parents=True, exist_ok=True)
        (results / EX1 / f"{student}.json").write_text(
            json.dumps({"status": status, "score": None, "reason": reason})
        )
    assert instructor.feedback(tmp_path) == 1  # nothing autograded: no nbgrader run
    err = capsys.readouterr().err
    assert f"none for uma/{EX1}: 0: the grader could not grade" in err
    assert f"none for vic/{EX1}: not graded: the grader failed" in err
    assert "ada" not in err
    assert instructor.feedback(tmp_path, ["ada"]) == 1
    assert "none for" not in capsys.readouterr().err
