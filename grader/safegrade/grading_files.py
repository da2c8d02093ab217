"""The grader's own files in a class's data: the result files and the grading secret.

The Course (grader/course.py) names both (Course.results, Course.secret); the course's nbgrader
configuration hands them to this layer (preprocessors.configure), so the grading process, `make
autograde` and the instructor's steps that read the results all use the same two paths. A
configuration that names neither is refused: this layer never guesses a folder of its own.
"""

from __future__ import annotations

from pathlib import Path

from traitlets import Unicode
from traitlets.config import Configurable


class GradingFiles(Configurable):
    """Where the grader writes each submission's result and keeps the grading secret."""

    results = Unicode("", help="folder of the result files: <assignment>/<student>.json")
    secret = Unicode("", help="file of the secret that seeds each submission's test inputs")
    for trait in (results, secret):
        trait.tag(config=True)
    del trait


def results_folder(config) -> Path:
    """The result files' folder the configuration names (Course.results)."""
    return _configured(config, "results")


def secret_file(config) -> Path:
    """The grading secret's file the configuration names (Course.secret)."""
    return _configured(config, "secret")


def _configured(config, name: str) -> Path:
    value = getattr(GradingFiles(config=config), name)
    if not value:
        raise ValueError(
            f"GradingFiles.{name} is not set: the course's nbgrader configuration sets it from "
            f"the Course (configure(c, course), grader/safegrade/preprocessors.py)"
        )
    return Path(value)
