"""The class at a glance (`make report`): per exercise, how scores spread, who submitted, who was
late, which test most learners fail and with which message, and each learner's row.

    python -m grader.report [--course DIR] [--out DIR] [--progress JSON|-] [--stdout]

Read from the typed records of grader/standings.py, one per learner and exercise: the gradebook's
grade and the grader's own record (grader/safegrade/result_files.py:
classdata/autograded/.safegrade/<assignment>/<student>.json, the state (graded, could not be
graded, grader failed) and each test's status and the message its learner's feedback shows,
recorded by the process that graded it; no notebook is read, and the tests' own code, hidden or
not, never). Writes
classdata/reports/report.html and, per exercise, <assignment>.csv (a row per learner) and
<assignment>_tests.csv (a row per test). `--progress` adds each learner's try-it progress: the
JSON the class hub's progress page gathers ({account: {"tryits": {chapter: {id: passed}}}}).

Everything a learner could have shaped (ids, messages that echo their output) is HTML-escaped in
the page and made inert in the CSV (a cell that starts like a formula gets a leading quote).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from grader.course import Course
from grader.report_model import (
    ABSENT,
    GRADED,
    GRADER_FAILED,
    NOT_GRADABLE,
    STATES,
    WAITING,
    Exercise,
    Row,
    Submission,
    counts,
    course_tryits,
    learner_columns,
    own_tryits,
    test_columns,
    test_rows,
)
from grader.report_page import CSP, page
from grader.safegrade.grading_limits import LIMITS
from grader.standings import ClassBook, Standing

# the report's public names, wherever they are defined
__all__ = [
    "ABSENT", "CSP", "GRADED", "GRADER_FAILED", "NOT_GRADABLE", "STATES", "Exercise", "Submission",
    "WAITING", "build", "counts", "inert", "learner_csv", "main", "page", "test_rows",
    "tests_csv", "write_csv",
]  # fmt: skip

# ----------------------------------------------------------------------------- reading


def read_class(course: Course) -> list[Exercise]:
    """Every exercise with every learner the gradebook, the submissions or the results know."""
    exercises = []
    with ClassBook.of(course) as records:
        known = records.students()
        for assignment in course.assignments:
            points = records.graded_cells(assignment)
            # An exercise in another language (grader/exercises.py) lists its own learners only.
            exercise = assignment in course.exercises
            students = (
                (known if exercise else set())
                | folders(course.submitted, assignment)
                | records.recorded_students(assignment)
            )
            if not students and not exercise:
                continue
            rows = [submission(course, records.standing(assignment, s)) for s in sorted(students)]
            exercises.append(Exercise(assignment, list(points), points, rows))
    return exercises


def folders(root: Path, assignment: str) -> set[str]:
    return {path.parent.name for path in root.glob(f"[!.]*/{assignment}") if path.is_dir()}


def submission(course: Course, standing: Standing) -> Submission:
    """One learner's row of an exercise, from its record (grader/standings.py): the state and
    reason of the result, each failing test's message."""
    student, assignment, grade = standing.student, standing.assignment, standing.grade
    if grade is None or standing.state is not GRADED:  # GRADED without a grade: a stray record
        reason = standing.reason[: LIMITS.report_message_chars]
        return Submission(student, standing.state, reason=reason, detail=standing.detail)
    page = course.feedback / student / assignment / f"{assignment}.html"
    return Submission(
        student,
        GRADED,
        score=grade.score,
        seconds_late=grade.seconds_late,
        penalty=grade.penalty,
        tests=grade.tests,
        messages={test: shown(message) for test, message in standing.messages().items()},
        # where the page is in the class data (the report links it relative to --link-base)
        feedback=page.relative_to(course.data).as_posix() if page.exists() else None,
    )


def shown(message: str) -> str:
    """A failing test's message ("AssertionError: ..."), its lines joined by " / " and cut: what
    the learner's feedback shows of it."""
    if not message:
        return "no error printed (the test's points were not given)"
    lines = [" ".join(line.split()) for line in message.split("\n")]
    text = " / ".join(line for line in lines if line)
    if len(text) > (cap := LIMITS.report_message_chars):
        text = text[:cap] + "..."
    return text or "an error without a message"


def read_progress(source: str | None) -> dict[str, dict]:
    """{account: {chapter: {try-it id: passed}}}, from the hub progress page's JSON (learners'
    claims): only the course's own try-it ids, each in its own chapter; accounts whose progress
    could not be read (a string in place of the data) are left out."""
    if not source:
        return {}
    text = sys.stdin.read() if source == "-" else Path(source).read_text()
    claim, known = json.loads(text), course_tryits()
    progress = {}
    for account, row in claim.items() if isinstance(claim, dict) else ():
        tryits = row.get("tryits") if isinstance(row, dict) else None
        if isinstance(tryits, dict):
            progress[str(account)] = {
                str(chapter): own_tryits(str(chapter), marks, known)
                for chapter, marks in tryits.items()
                if isinstance(marks, dict)
            }
    return progress


# ----------------------------------------------------------------------------- CSV


def inert(value: object) -> str:
    """A CSV cell no spreadsheet runs: text that starts like a formula gets a leading quote."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def write_csv(path: Path, rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        for row in rows:
            writer.writerow([inert(cell) for cell in row])
    return path


def learner_csv(exercise: Exercise, progress: dict[str, dict]) -> list[list[object]]:
    """A row per learner, in the columns of LEARNER_COLUMNS the CSV shows."""
    columns = learner_columns(exercise, False, progress)
    rows = [[column.name for column in columns]]
    for s in exercise.submissions:
        rows.append([c.text(Row(exercise, s, progress, c.test)) for c in columns])
    return rows


def tests_csv(exercise: Exercise) -> list[list[object]]:
    """A row per test, in the columns of TEST_COLUMNS the CSV shows; a test that failed with
    several messages has a row per message, its numbers repeated."""
    columns = test_columns(page=False)
    rows = [[column.name for column in columns]]
    for row in test_rows(exercise):
        each = [replace(row, message=m, count=n) for m, n in row.messages] or [row]
        rows += [[column.text(one) for column in columns] for one in each]
    return rows


# ----------------------------------------------------------------------------- command


def build(
    course: Course, out: Path, progress: dict[str, dict], link_base: str = ".."
) -> list[Path]:
    """Write the page and the CSV files into `out`; returns their paths."""
    exercises = read_class(course)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.html"]
    written[0].write_text(page(exercises, progress, link_base), encoding="utf-8")
    for exercise in exercises:
        written.append(write_csv(out / f"{exercise.name}.csv", learner_csv(exercise, progress)))
        written.append(write_csv(out / f"{exercise.name}_tests.csv", tests_csv(exercise)))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--course", type=Path, help="course root (default: this repository)")
    parser.add_argument("--out", type=Path, help="folder (default: COURSE/classdata/reports)")
    parser.add_argument("--progress", help="the hub's progress JSON (a file, or - for stdin)")
    parser.add_argument("--stdout", action="store_true", help="print the page, write nothing")
    parser.add_argument("--link-base", default="..", help="URL of classdata/ for feedback links")
    args = parser.parse_args(argv)
    course = Course.configured(args.course.resolve()) if args.course else Course.configured()
    if not course.gradebook.exists():
        print(
            f"report: no gradebook at {course.gradebook}: run make autograde first",
            file=sys.stderr,
        )
        return 1
    progress = read_progress(args.progress)
    if args.stdout:
        sys.stdout.write(page(read_class(course), progress, args.link_base))
        return 0
    for path in build(course, args.out or course.reports, progress, args.link_base):
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
