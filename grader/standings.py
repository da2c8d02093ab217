"""One typed record per learner and assignment, built here and nowhere else, from the two things
that know how a submission came out: the grader's record of it (the verdict, written by the
process that graded it: safegrade/result_files.recorded) and nbgrader's gradebook (the score,
the late penalty, and any grade an instructor set in the formgrader, which must reach the
export). The export (grades_export.py) and the class report (report.py) read these records and
the graded cells through a `ClassBook`; neither opens the gradebook itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from grader.course import Course
from grader.safegrade.result_files import State, SubmissionResult, recorded


@dataclass(frozen=True)
class Grade:
    """The gradebook's grade of a submission (the formgrader's manual grades included)."""

    score: float  # after the late penalty
    penalty: float
    seconds_late: float
    tests: dict[str, float | None]  # grade cell id -> points
    timestamp: datetime | None  # the submission's time


@dataclass(frozen=True)
class Standing:
    """One learner's submission of one assignment: its grade and the grader's verdict."""

    student: str
    assignment: str
    grade: Grade | None  # None: the gradebook holds no submission of it
    verdict: SubmissionResult | None  # None: the grader recorded nothing of it
    submitted: bool = False  # it is in the course's submitted folder

    @property
    def state(self) -> State:
        """What it came to: the grader's verdict where it could not grade the submission (the
        gradebook may still hold an older grade), graded where the gradebook has a grade,
        else waiting (submitted) or absent."""
        said = self.verdict.status if self.verdict is not None else None
        if self.grade is None or said in (State.NOT_GRADABLE, State.GRADER_FAILED):
            return said or (State.WAITING if self.submitted else State.ABSENT)
        return State.GRADED

    @property
    def recorded_state(self) -> State | None:
        """The state the grader's own record gives, or None when there is no record."""
        return self.verdict.status if self.verdict is not None else None

    @property
    def reason(self) -> str:
        return self.verdict.reason if self.verdict is not None else ""

    @property
    def detail(self) -> str:
        return self.verdict.detail if self.verdict is not None else ""

    def messages(self) -> dict[str, str]:
        """Each test that did not pass -> the message its learner read (the grader's record)."""
        return self.verdict.messages() if self.verdict is not None else {}


def verdict_of(course: Course, student: str, assignment: str) -> SubmissionResult | None:
    """What the grader recorded of one submission, as a Standing holds it, without the
    gradebook (make similarity asks why a learner has no autograded notebook)."""
    return recorded(course.results, student, assignment)


class ClassBook:
    """A class's gradebook and the grader's records, opened once (a context manager): every
    learner's Standing and each assignment's graded cells."""

    def __init__(
        self,
        gradebook_url: str,
        course_id: str,
        results: Path,
        sources: Path,
        submitted: Path | None = None,
    ):
        self.gradebook_url, self.course_id = gradebook_url, course_id
        self.results, self.sources, self.submitted = results, sources, submitted
        self._gradebook = None

    @classmethod
    def of(cls, course: Course) -> ClassBook:
        return cls(
            course.gradebook_url, course.course_id, course.results, course.source, course.submitted
        )

    def __enter__(self) -> ClassBook:
        from nbgrader.api import Gradebook

        self._gradebook = Gradebook(self.gradebook_url, self.course_id).__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._gradebook.__exit__(*exc)
        self._gradebook = None

    def students(self) -> set[str]:
        """Every student the gradebook knows."""
        return {student.id for student in self._gradebook.students}

    def recorded_students(self, assignment: str) -> set[str]:
        """The students the grader holds a result file of for `assignment`."""
        return {path.stem for path in (self.results / assignment).glob("*.json")}

    def graded_cells(self, assignment: str) -> dict[str, float]:
        """Graded cell id -> its maximum, in the source notebook's order (unknown ones after);
        empty when the gradebook does not know the assignment."""
        from nbgrader.api import MissingEntry

        try:
            notebooks = self._gradebook.find_assignment(assignment).notebooks
        except MissingEntry:
            return {}
        points = {cell.name: cell.max_score for nb in notebooks for cell in nb.grade_cells}
        return {name: points[name] for name in sorted(points, key=self.source_order(assignment))}

    def source_order(self, assignment: str):
        """A sort key: graded cells in the order of the source notebook, unknown ones after."""
        import nbformat
        from nbgrader.utils import is_grade

        path = self.sources / assignment / f"{assignment}.ipynb"
        cells = nbformat.read(path, as_version=4).cells if path.exists() else []
        order = [cell.metadata.nbgrader["grade_id"] for cell in cells if is_grade(cell)]
        return lambda name: (order.index(name), "") if name in order else (len(order), name)

    def standing(self, assignment: str, student: str) -> Standing:
        submitted = self.submitted is not None and (self.submitted / student / assignment).is_dir()
        verdict = recorded(self.results, student, assignment)  # as verdict_of reads it
        return Standing(student, assignment, self.grade(assignment, student), verdict, submitted)

    def grade(self, assignment: str, student: str) -> Grade | None:
        from nbgrader.api import MissingEntry

        try:
            submission = self._gradebook.find_submission(assignment, student)
        except MissingEntry:
            return None
        penalty = submission.late_submission_penalty or 0.0
        return Grade(
            score=max(0.0, submission.score - penalty),
            penalty=penalty,
            seconds_late=submission.total_seconds_late or 0.0,
            tests={g.name: g.score for nb in submission.notebooks for g in nb.grades},
            timestamp=submission.timestamp,
        )

    def scores(self, assignment: str) -> dict[str, float]:
        """Each student with a graded submission of `assignment` -> its score (Grade.score)."""
        grades = {student: self.grade(assignment, student) for student in self.students()}
        return {student: grade.score for student, grade in grades.items() if grade is not None}

    def newest_grade(self, assignments: Sequence[str], student: str) -> Grade | None:
        """The student's newest graded submission of any of `assignments` (an exercise in its
        languages), or None."""
        found = [self.grade(assignment, student) for assignment in assignments]
        graded = [grade for grade in found if grade is not None]
        key = lambda g: (g.timestamp is not None, g.timestamp or 0)  # noqa: E731
        return max(graded, key=key, default=None)
