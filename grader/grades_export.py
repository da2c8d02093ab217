"""`make export`: grades.csv (a column per exercise) and grades_by_test.csv (a column per graded
cell), from nbgrader's gradebook and the typed results make autograde wrote
(grader/safegrade/result_files.py), which say which uploads could not be graded and where the grader
itself failed. Where the course keeps what is passed in (``Where``): course_grader.py.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader import exercises
from grader.safegrade.data import spreadsheet_cell
from grader.safegrade.result_files import GRADED, load


@dataclass(frozen=True)
class Where:
    """Where a course keeps what the export reads."""

    gradebook_url: str
    course_id: str
    assignments: tuple[str, ...]  # every exercise of the course
    results: Path  # make autograde's result files: <results>/<assignment>/<student>.json
    sources: Path  # <sources>/<assignment>/<assignment>.ipynb

    def of(self, exercise: str) -> tuple[str, ...]:
        """The exercise's assignments: itself and its translations (grader/exercises.py). A
        learner's submission of any is their grade of the exercise (the newest, if several)."""
        return (exercise, *exercises.translations_of(exercise))


@dataclass(frozen=True)
class Result:
    """One student's graded submission of one exercise."""

    score: float  # after the late penalty
    late_penalty: float
    cells: dict[str, float | None]  # grade cell id -> points


def results(where: Where) -> tuple[dict[str, dict[str, Result | None]], dict[str, list]]:
    """(student id -> {assignment: Result, or None when nothing was submitted}, for every student
    the gradebook knows; assignment -> its graded cell ids, in the source notebook's order)."""
    from nbgrader.api import Gradebook, MissingEntry

    table, cells = {}, {}
    with Gradebook(where.gradebook_url, where.course_id) as gradebook:
        for assignment in where.assignments:
            try:
                notebooks = gradebook.find_assignment(assignment).notebooks
            except MissingEntry:
                notebooks = []
            names = [cell.name for notebook in notebooks for cell in notebook.grade_cells]
            cells[assignment] = sorted(names, key=source_order(where.sources, assignment))
        for student in gradebook.students:
            row = table[student.id] = {}
            for assignment in where.assignments:
                submission = newest_submission(gradebook, where.of(assignment), student.id)
                if submission is None:
                    row[assignment] = None
                    continue
                penalty = submission.late_submission_penalty or 0.0
                points = {g.name: g.score for nb in submission.notebooks for g in nb.grades}
                row[assignment] = Result(max(0.0, submission.score - penalty), penalty, points)
    return table, cells


def newest_submission(gradebook, assignments: Sequence[str], student: str):
    """The student's newest graded submission of any of `assignments` (an exercise in its
    languages), or None."""
    from nbgrader.api import MissingEntry

    found = []
    for assignment in assignments:
        try:
            found.append(gradebook.find_submission(assignment, student))
        except MissingEntry:
            pass
    return max(found, key=lambda s: (s.timestamp is not None, s.timestamp or 0), default=None)


def scores(where: Where) -> dict[str, dict[str, float | None]]:
    """student id -> {assignment: score after any late penalty, None when not submitted}."""
    table, _ = results(where)
    return {
        student: {a: None if result is None else result.score for a, result in row.items()}
        for student, row in table.items()
    }


def source_order(sources: Path, assignment: str):
    """A sort key: graded cells in the order of the source notebook, unknown ones after."""
    import nbformat
    from nbgrader.utils import is_grade

    path = sources / assignment / f"{assignment}.ipynb"
    cells = nbformat.read(path, as_version=4).cells if path.exists() else []
    order = [cell.metadata.nbgrader["grade_id"] for cell in cells if is_grade(cell)]
    return lambda name: (order.index(name), "") if name in order else (len(order), name)


def ungraded(where: Where, table: dict) -> dict[tuple[str, str], str]:
    """(student, assignment) -> "could not grade" or "grader failed", for each upload that
    make autograde's last run could not grade (its typed result says so) and that the gradebook
    holds no grade of; such students get a row in `table`."""
    found = {}
    for assignment, one in ((a, o) for a in where.assignments for o in where.of(a)):
        for path in sorted((where.results / one).glob("*.json")):
            result = load(path)
            if result is None:
                continue
            row = table.setdefault(path.stem, dict.fromkeys(where.assignments))
            if result.status != GRADED and row[assignment] is None:
                found[(path.stem, assignment)] = result.status.cell
    return found


def anything_to_export(where: Where, chosen: Sequence[str]) -> bool:
    table, _ = results(where)
    graded = any(row[a] is not None for row in table.values() for a in chosen)
    return graded or bool(ungraded(where, table))


def write(where: Where, out: Path, chosen: Sequence[str]) -> Path:
    """Write out (grades.csv): student_id, one column per exercise of `chosen` (after any late
    penalty), total; and beside it grades_by_test.csv: one column per graded cell, then the
    exercise's late penalty. An empty cell means nothing was submitted; 0 means submitted and
    scored 0; "could not grade" / "grader failed" an upload the last make autograde could not
    grade (see the reason it printed). No cell can start a spreadsheet formula."""
    table, cells = results(where)
    failed = ungraded(where, table)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as handle, by_test_path(out).open("w", newline="") as tests:
        grades, per_test = csv.writer(handle), csv.writer(tests)
        write_row(grades, ["student_id", *chosen, "total"])
        columns = [(a, name) for a in chosen for name in [*cells[a], "late_penalty"]]
        write_row(per_test, ["student_id", *(f"{a}:{name}" for a, name in columns)])
        for student, row in sorted(table.items()):
            points = [None if row[a] is None else row[a].score for a in chosen]
            done = [p for p in points if p is not None]
            total = _points(sum(done)) if done else ""
            pairs = zip(chosen, points, strict=True)
            write_row(
                grades,
                [student, *(failed.get((student, a)) or _points(p) for a, p in pairs), total],
            )
            by_test = [
                failed.get((student, a)) or _points(_cell(row[a], name)) for a, name in columns
            ]
            write_row(per_test, [student, *by_test])
    return out


def write_row(writer, cells: list[str]) -> None:
    writer.writerow([spreadsheet_cell(cell) for cell in cells])


def by_test_path(grades_csv: Path) -> Path:
    return grades_csv.with_name(f"{grades_csv.stem}_by_test{grades_csv.suffix}")


def _points(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _cell(result: Result | None, name: str) -> float | None:
    if result is None:
        return None
    return result.late_penalty if name == "late_penalty" else result.cells.get(name)
