"""Where nbgrader keeps things: read ``nbgrader_config.py`` the way nbgrader does.

Only the ``CourseDirectory`` settings matter here. They are read with traitlets' loader (importing
nbgrader itself takes seconds because of its server extensions), from the current folder and then
the course root, with nbgrader's defaults, so ``python -m grader.safegrade`` and ``nbgrader`` agree
on every path.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULTS = {
    "root": "",
    "source_directory": "source",
    "submitted_directory": "submitted",
    "autograded_directory": "autograded",
    "feedback_directory": "feedback",
    "release_directory": "release",
    "directory_structure": os.path.join("{nbgrader_step}", "{student_id}", "{assignment_id}"),
    "db_url": "",
    "course_id": "",
}


def _load_config_values(folders: list[Path]) -> dict:
    from traitlets.config import Config
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

    merged = Config()
    for folder in folders:
        try:
            merged.merge(PyFileConfigLoader("nbgrader_config.py", path=str(folder)).load_config())
        except ConfigFileNotFound:
            continue
    section = merged.get("CourseDirectory", {})
    return {key: section[key] for key in DEFAULTS if key in section}


@dataclass
class Course:
    root: Path
    source_directory: str
    submitted_directory: str
    autograded_directory: str
    feedback_directory: str
    release_directory: str
    directory_structure: str
    db_url: str
    course_id: str

    def path(self, step: str, student: str, assignment: str) -> Path:
        relative = self.directory_structure.format(
            nbgrader_step=step, student_id=student, assignment_id=assignment
        )
        return Path(os.path.normpath(os.path.join(self.root, relative)))

    def source(self, assignment: str) -> Path:
        return self.path(self.source_directory, ".", assignment)

    def submitted(self, student: str, assignment: str) -> Path:
        return self.path(self.submitted_directory, student, assignment)

    def autograded(self, student: str, assignment: str) -> Path:
        return self.path(self.autograded_directory, student, assignment)

    def feedback(self, student: str, assignment: str) -> Path:
        return self.path(self.feedback_directory, student, assignment)

    def result_path(self, student: str, assignment: str) -> Path:
        """Where safegrade keeps a submission's result: in the autograded folder, but in a hidden
        folder that nbgrader never copies into the learners' feedback."""
        root = Path(os.path.normpath(os.path.join(self.root, self.autograded_directory)))
        return root / ".safegrade" / assignment / f"{student}.json"

    def students(self, assignment: str) -> list[str]:
        """Students with a submission folder for this assignment."""
        parts = self.path(self.submitted_directory, "*", assignment).parts
        if "*" not in parts:
            return []
        index = parts.index("*")
        pattern = os.path.join(*(p if p == "*" else glob.escape(p) for p in parts))
        found = {Path(m).parts[index] for m in glob.glob(pattern) if os.path.isdir(m)}
        return sorted(s for s in found if not s.startswith("."))

    def gradebook_path(self) -> Path | None:
        if self.db_url.startswith("sqlite:///"):
            return Path(self.db_url[len("sqlite:///") :])
        return None


def load_course(course_dir: str | os.PathLike | None = None, **overrides) -> Course:
    """The course as nbgrader sees it from the current folder (and ``course_dir`` as root)."""
    cwd = Path.cwd()
    values = dict(DEFAULTS)
    values.update(_load_config_values([cwd]))
    if course_dir is not None:
        values["root"] = str(Path(course_dir).resolve())
    root = Path(values["root"] or cwd).resolve()
    if root != cwd:
        values.update(_load_config_values([cwd, root]))
        if course_dir is not None:
            values["root"] = str(root)
    values.update({k: v for k, v in overrides.items() if v is not None})
    values["root"] = Path(values["root"] or cwd).resolve()
    if not values["db_url"]:
        values["db_url"] = f"sqlite:///{values['root'] / 'gradebook.db'}"
    return Course(**values)
