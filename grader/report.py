"""The class at a glance (`make report`): per exercise, how scores spread, who submitted, who was
late, which test most learners fail and with which message, and each learner's row.

    python -m grader.report [--course DIR] [--out DIR] [--progress JSON|-] [--stdout]

Read from the gradebook (nbgrader's Gradebook API), the grader's result files
(classdata/autograded/.safegrade/<assignment>/<student>.json: graded, could not be graded, grader
failed) and the autograded notebooks (the message each failing test printed, which is what the
learner's feedback shows; the tests' own code, hidden or not, is never read). Writes
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
from pathlib import Path

from grader.course import REPOSITORY, Course
from grader.grades_export import source_order
from grader.report_model import (
    ABSENT,
    GRADED,
    GRADER_FAILED,
    NOT_GRADED,
    STATES,
    WAITING,
    Exercise,
    Submission,
    counts,
    course_tryits,
    own_tryits,
    points,
    test_rows,
    tryit_totals,
)
from grader.report_page import CSP, page
from grader.safegrade.limits import LIMITS
from grader.safegrade.results import GRADED as GRADED_RESULT
from grader.safegrade.results import GRADER_FAILED as GRADER_FAILURE
from grader.safegrade.results import NOT_GRADABLE, load

# the report's public names, wherever they are defined
__all__ = [
    "ABSENT", "CSP", "GRADED", "GRADER_FAILED", "NOT_GRADED", "STATES", "Exercise", "Submission",
    "build", "counts", "inert", "learner_csv", "main", "page", "test_rows", "tests_csv",
    "write_csv",
]  # fmt: skip

# ----------------------------------------------------------------------------- reading


def read_class(course: Course) -> list[Exercise]:
    """Every exercise with every learner the gradebook, the submissions or the results know."""
    from nbgrader.api import Gradebook

    exercises = []
    with Gradebook(course.gradebook_url, course.course_id) as gradebook:
        known = {student.id for student in gradebook.students}
        for assignment in course.assignments:
            tests, points = graded_cells(gradebook, course, assignment)
            # An exercise in another language (grader/exercises.py) lists its own learners only.
            exercise = assignment in course.exercises
            students = (
                (known if exercise else set())
                | folders(course.submitted, assignment)
                | result_files(course, assignment)
            )
            if not students and not exercise:
                continue
            rows = [standing(gradebook, course, assignment, s) for s in sorted(students)]
            exercises.append(Exercise(assignment, tests, points, rows))
    return exercises


def graded_cells(gradebook, course: Course, assignment: str) -> tuple[list[str], dict[str, float]]:
    from nbgrader.api import MissingEntry

    try:
        notebooks = gradebook.find_assignment(assignment).notebooks
    except MissingEntry:
        return [], {}
    points = {cell.name: cell.max_score for nb in notebooks for cell in nb.grade_cells}
    return sorted(points, key=source_order(course.source, assignment)), points


def folders(root: Path, assignment: str) -> set[str]:
    return {path.parent.name for path in root.glob(f"[!.]*/{assignment}") if path.is_dir()}


def result_files(course: Course, assignment: str) -> set[str]:
    return {path.stem for path in (course.results / assignment).glob("*.json")}


# A result file's status (grader/safegrade/results.py) as the report names it.
RESULT_STATES = {GRADED_RESULT: GRADED, NOT_GRADABLE: NOT_GRADED, GRADER_FAILURE: GRADER_FAILED}


def standing(gradebook, course: Course, assignment: str, student: str) -> Submission:
    """What the gradebook and the grader's result file say of one learner's exercise."""
    from nbgrader.api import MissingEntry

    outcome = load(course.results / assignment / f"{student}.json")
    state = RESULT_STATES.get(outcome.status, "") if outcome is not None else ""
    try:
        graded = gradebook.find_submission(assignment, student)
    except MissingEntry:
        graded = None
    reason = outcome.reason if outcome is not None else ""
    if graded is None or state in (NOT_GRADED, GRADER_FAILED):
        submitted = (course.submitted / student / assignment).is_dir()
        state = state or (WAITING if submitted else ABSENT)
        detail = outcome.detail if outcome is not None else ""
        return Submission(
            student, state, reason=reason[: LIMITS.report_message_chars], detail=detail
        )
    penalty = graded.late_submission_penalty or 0.0
    tests = {g.name: g.score for nb in graded.notebooks for g in nb.grades}
    page = course.feedback / student / assignment / f"{assignment}.html"
    return Submission(
        student,
        GRADED,
        score=max(0.0, graded.score - penalty),
        seconds_late=graded.total_seconds_late or 0.0,
        penalty=penalty,
        tests=tests,
        messages=printed_messages(course.autograded / student / assignment),
        # where the page is in the class data (the report links it relative to --link-base)
        feedback=page.relative_to(course.data).as_posix() if page.exists() else None,
    )


def printed_messages(folder: Path) -> dict[str, str]:
    """Failing test -> the error it printed ("AssertionError: ..."), lines joined by " / ": what
    the learner's feedback shows for it (its traceback cut to this); the cell's code is never
    read."""
    import nbformat
    from nbgrader import utils

    found = {}
    for path in sorted(folder.glob("*.ipynb")):
        try:
            cells = nbformat.read(path, as_version=4).cells
        except Exception:  # noqa: BLE001 - an unreadable notebook has no messages to group
            continue
        for cell in cells:
            if not (utils.is_grade(cell) and cell.cell_type == "code"):
                continue
            got, top = utils.determine_grade(cell)
            if got != top:
                found[cell.metadata.nbgrader["grade_id"]] = first_error(cell)
    return found


def first_error(cell) -> str:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            text = ": ".join(filter(None, (output.get("ename"), output.get("evalue"))))
            lines = [" ".join(line.split()) for line in str(text).split("\n")]
            shown = " / ".join(line for line in lines if line)
            if len(shown) > (cap := LIMITS.report_message_chars):
                shown = shown[:cap] + "..."
            return shown or "an error without a message"
    return "no error printed (the test's points were not given)"


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
    head = ["student_id", "state", "score", "max_score", "seconds_late", "late_penalty"]
    rows = [head + exercise.tests + ["tryits_passed", "reason"]]
    for s in exercise.submissions:
        row = [s.student, s.state, points(s.score), points(exercise.max_score)]
        row += [f"{s.seconds_late:.0f}" if s.seconds_late > 0 else "", points(s.penalty or None)]
        row += [points(s.tests.get(test)) if s.state == GRADED else "" for test in exercise.tests]
        rows.append(row + [tryit_totals(progress, s.student), s.reason])
    return rows


def tests_csv(exercise: Exercise) -> list[list[object]]:
    rows = [["test", "points", "graded", "passed", "pass_rate", "mean_points", "message", "count"]]
    for row in test_rows(exercise):
        rate = "" if row["pass_rate"] is None else f"{row['pass_rate']:.3f}"
        mean = "" if row["mean_points"] is None else f"{row['mean_points']:.3f}"
        base = [row["test"], points(row["points"]), row["graded"], row["passed"], rate, mean]
        rows += [base + [message, count] for message, count in row["messages"]] or [base]
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
    parser.add_argument(
        "--course", type=Path, default=REPOSITORY, help="course root (default: repo)"
    )
    parser.add_argument("--out", type=Path, help="folder (default: COURSE/classdata/reports)")
    parser.add_argument("--progress", help="the hub's progress JSON (a file, or - for stdin)")
    parser.add_argument("--stdout", action="store_true", help="print the page, write nothing")
    parser.add_argument("--link-base", default="..", help="URL of classdata/ for feedback links")
    args = parser.parse_args(argv)
    course = Course.configured(args.course.resolve())
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
