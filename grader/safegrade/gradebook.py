"""Clearing an earlier grade: no grade, autograded notebook or feedback of an earlier upload may
outlive a submission that could not be graded.
"""

from __future__ import annotations

import os
import re
import shutil


def clear_earlier(course, student: str, assignment: str) -> None:
    """Remove an earlier grade of this submission: gradebook entry, autograded and feedback."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.db_url, course.course_id) as gradebook:
        try:
            gradebook.remove_submission(assignment, student)
        except MissingEntry:
            pass
    for folder in (course.autograded_directory, course.feedback_directory):
        shutil.rmtree(course.format_path(folder, student, assignment), ignore_errors=True)


class ClearUnreadableUpload:
    """Autograde's pre-convert hook (also under plain `nbgrader autograde` and the formgrader's
    button): before a submission whose notebooks cannot be read is graded (and fails), its
    earlier grade, autograded notebook and feedback are removed, so that no grade of an earlier
    upload outlives it (nbgrader's own failure handling removes only the autograded folder)."""

    def __init__(self, config):
        self.config = config

    def __call__(self, assignment: str, student: str, notebooks: list[str]) -> None:
        import nbformat
        from nbgrader.coursedir import CourseDirectory

        course = CourseDirectory(config=self.config)
        # nbgrader passes the command line's ids ("*" for every student): each notebook's folder
        # says whose it is
        folder = course.format_path(
            course.submitted_directory, "(?P<s>[^/]+)", "(?P<a>[^/]+)", escape=True
        )
        for path in notebooks:
            try:
                nbformat.read(path, as_version=4)
            except Exception:  # noqa: BLE001 - whatever makes a learner's file unreadable
                if found := re.fullmatch(folder, os.path.dirname(os.path.abspath(path))):
                    clear_earlier(course, found["s"], found["a"])
