"""`make export`: grades.csv (a column per exercise) and grades_by_test.csv (a column per graded
cell), from the typed records of grader/standings.py: each learner's grade (the gradebook's, the
formgrader's manual grades included) and the grader's verdict, which says which uploads could not
be graded and where the grader itself failed. Where the course keeps what is passed in
(``Where``): course_grader.py.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader import exercises
from grader.safegrade.data import spreadsheet_cell
from grader.safegrade.result_files import State
from grader.standings import ClassBook, Grade


@dataclass(frozen=True)
class Where:
    """Where a course keeps what the export reads."""

    gradebook_url: str
    course_id: str
    assignments: tuple[str, ...]  # every exercise of the course
    results: Path  # make autograde's result files: <results>/<assignment>/<student>.json
    sources: Path  # <sources>/<assignment>/<assignment>.ipynb
    catalogs: Path | None = None  # the course's translation catalogs (assignments.catalogs_of)

    def of(self, exercise: str) -> tuple[str, ...]:
        """The exercise's assignments: itself and its translations (grader/exercises.py). A
        learner's submission of any is their grade of the exercise (the newest, if several)."""
        return (exercise, *exercises.translations_of(exercise, self.catalogs))


def results(where: Where) -> tuple[dict[str, dict[str, Grade | None]], dict[str, list]]:
    """(student id -> {exercise: its newest Grade in any of its languages, or None when nothing
    was submitted}, for every student the gradebook knows; exercise -> its graded cell ids, in
    the source notebook's order)."""
    with book(where) as records:
        cells = {a: list(records.graded_cells(a)) for a in where.assignments}
        table = {
            student: {a: records.newest_grade(where.of(a), student) for a in where.assignments}
            for student in records.students()
        }
    return table, cells


def book(where: Where) -> ClassBook:
    return ClassBook(where.gradebook_url, where.course_id, where.results, where.sources)


def scores(where: Where) -> dict[str, dict[str, float | None]]:
    """student id -> {assignment: score after any late penalty, None when not submitted}."""
    table, _ = results(where)
    return {
        student: {a: None if grade is None else grade.score for a, grade in row.items()}
        for student, row in table.items()
    }


def ungraded(where: Where, table: dict) -> dict[tuple[str, str], str]:
    """(student, exercise) -> "could not grade" or "grader failed", for each upload that
    make autograde's last run could not grade (the grader's record says so) and that the
    gradebook holds no grade of; such students get a row in `table`."""
    found = {}
    with book(where) as records:
        for assignment, one in ((a, o) for a in where.assignments for o in where.of(a)):
            for student in sorted(records.recorded_students(one)):
                said = records.standing(one, student).recorded_state
                if said is None:
                    continue
                row = table.setdefault(student, dict.fromkeys(where.assignments))
                if said != State.GRADED and row[assignment] is None:
                    found[(student, assignment)] = said.cell
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


def _cell(grade: Grade | None, name: str) -> float | None:
    if grade is None:
        return None
    return grade.penalty if name == "late_penalty" else grade.tests.get(name)
