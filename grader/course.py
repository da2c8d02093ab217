"""The course the instructor's tools work on: one `Course`, built once from configuration and
passed to every step (release, intake, grading, export, report, similarity, the hub).

The course's identity and the default place of its class data are in course.json at the course
root; FXCOURSE_CLASSDATA (`make CLASSDATA=...`) moves the class data: a path relative to the
course, or absolute. fxcourse.course_file reads both, for this side and the learner's. Two more
variables move one folder each: FXCOURSE_EXCHANGE the exchange (a hub shares one among its
servers; fxcourse.workspace reads it too; a hub's course folder names it in its course.json
instead) and FXCOURSE_GRADEBOOK_URL the gradebook (a scratch one for the browser test).
`Course.configured` is the one place any of them is read.

The class data is nbgrader's working folders, the exchange, the gradebook and the grading
secret (autograded/.safegrade_secret), in a git-ignored folder of the course's own, outside
every package, so that no install of the code (and no sandbox) carries it along.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fxcourse import course_file
from fxcourse.course_file import SETTINGS, settings  # noqa: F401 (the course's names, as before)
from grader import exercises
from grader.exercises import SOURCE

REPOSITORY = Path(__file__).resolve().parents[1]  # this course: the repository, or a copy of it
STUDENT_VERSIONS = Path("chapters/exercises")  # where learners find the released notebooks
GRADEBOOK_URL_VARIABLE = "FXCOURSE_GRADEBOOK_URL"


@dataclass(frozen=True)
class Course:
    """Where a course's sources and class data are, and who it is to nbgrader."""

    root: Path
    course_id: str
    classdata: Path  # relative to root, or absolute
    shared_exchange: Path | None = None  # an exchange outside the class data, or None
    scratch_gradebook_url: str | None = None  # a gradebook outside the class data, or None

    @classmethod
    def configured(
        cls, root: Path = REPOSITORY, environ: Mapping[str, str] | None = None
    ) -> Course:
        """The course at `root` as its course.json and the environment configure it."""
        environ = os.environ if environ is None else environ
        return cls(
            Path(root).resolve(),
            settings(root)["course_id"],
            course_file.classdata(root, environ),
            course_file.shared_exchange(root, environ),
            environ.get(GRADEBOOK_URL_VARIABLE) or None,
        )

    @classmethod
    def of(cls, course: Course | Path) -> Course:
        """`course`, or the course configured at a folder."""
        return course if isinstance(course, Course) else cls.configured(Path(course))

    def relative(self, path: Path) -> Path:
        """`path` relative to the root when it is inside it (nbgrader's folder settings)."""
        return path.relative_to(self.root) if path.is_relative_to(self.root) else path

    @property
    def data(self) -> Path:
        return self.root / self.classdata

    @property
    def source(self) -> Path:
        return self.root / SOURCE

    @property
    def student_versions(self) -> Path:
        return self.root / STUDENT_VERSIONS

    @property
    def release(self) -> Path:
        return self.data / "release"

    @property
    def submitted(self) -> Path:
        return self.data / "submitted"

    @property
    def autograded(self) -> Path:
        return self.data / "autograded"

    @property
    def feedback(self) -> Path:
        return self.data / "feedback"

    @property
    def results(self) -> Path:
        """The grader's result files: <assignment>/<student>.json (safegrade/result_files.py)."""
        return self.autograded / ".safegrade"

    @property
    def secret(self) -> Path:
        """The grading secret that seeds each submission's test inputs (safegrade/verdicts.py)."""
        return self.autograded / ".safegrade_secret"

    @property
    def gradebook(self) -> Path:
        return self.data / "gradebook.db"

    @property
    def gradebook_url(self) -> str:
        return self.scratch_gradebook_url or f"sqlite:///{self.gradebook}"

    @property
    def exchange(self) -> Path:
        return self.shared_exchange or self.data / "exchange"

    @property
    def downloaded(self) -> Path:
        return self.data / "downloaded"

    @property
    def exports(self) -> Path:
        return self.data / "exports"

    @property
    def reports(self) -> Path:
        return self.data / "reports"

    @property
    def exercises(self) -> tuple[str, ...]:
        """The course's exercises, found in its solutions/ (grader/exercises.py)."""
        return exercises.of_course(self.root)

    @property
    def assignments(self) -> tuple[str, ...]:
        """Every nbgrader assignment of the class: the exercises and their translations."""
        return exercises.assignments_of(self.root)
