"""The top of a learner's feedback page: each graded test's status (passed, failed, not run) and
message as the grader recorded them where the verdict was known (result_files.recorded), so that
a learner tells a test the submission never reached from one that ran and failed. nbgrader's page
below shows the notebook and the gradebook's points, the formgrader's manual grades included.

RecordedTests is a step of GenerateFeedback (preprocessors.configure puts it after nbgrader's
own). The HTML exporter's cleaning of what a learner wrote (grader/learner_html.py) has run
before it, so every string this module puts in the page is escaped here: a test's message
quotes the submission (its exception, its values).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path

from nbformat.v4 import new_markdown_cell
from nbgrader.preprocessors import GetGrades, NbGraderPreprocessor
from traitlets import List, Unicode

from . import result_files
from .assignments import installed_catalogs, split
from .grading_files import results_folder
from .result_files import Outcome, TestResult
from .wording import _

HEADING = _("Your tests, as the grader recorded them")
COLUMNS = (_("test"), _("status"), _("message"))
STATUS_WORDS = {
    Outcome.PASSED: _("passed"),
    Outcome.FAILED: _("failed"),
    Outcome.NOT_RUN: _("not run"),
}
NOT_RUN_NOTE = _("not run: the notebook stopped before this test's cell ran")
SUMMARY_CLASS = "recorded-tests"  # the summary's <div>, for tests and styles
CELL = 'style="padding:0.2em 1.5em 0.2em 0;text-align:left;vertical-align:top"'
MESSAGE_CELL = CELL[:-1] + ';white-space:pre-wrap"'  # a message keeps its lines


def messages_in_language_of(assignment: str, catalogs: str | Path = "") -> Mapping[str, str]:
    """English -> the assignment's language for the grader's own messages (wording.py), from the
    course's catalogs (assignments.catalogs_of; the installed ones when empty); empty for an
    exercise in English."""
    catalogs = Path(catalogs) if catalogs else installed_catalogs()
    language = split(assignment, catalogs)[1]
    if not language:
        return {}
    from courseware.i18n import lookup_of
    from courseware.repository import Repository

    return lookup_of("safegrade", language, Repository(catalogs.parent.parent, catalogs))


def summary_html(tests: list[TestResult], words: Mapping[str, str]) -> str:
    """The summary's markup, on one line (markdown leaves a one-line HTML block untouched), every
    text escaped; `words`: the grader's words in the learner's language (English when empty)."""

    def say(text: str) -> str:
        return html.escape(words.get(text, text), quote=True)

    def row(test: TestResult) -> str:
        message = test.message or (NOT_RUN_NOTE if test.status == Outcome.NOT_RUN else "")
        shown = say(message) if message == NOT_RUN_NOTE else html.escape(message, quote=True)
        return (
            f"<tr><td {CELL}><code>{html.escape(test.name, quote=True)}</code></td>"
            f'<td class="status-{html.escape(test.status.value)}" {CELL}>'
            f"{say(STATUS_WORDS[test.status])}</td>"
            f"<td {MESSAGE_CELL}>{shown.replace(chr(10), '&#10;')}</td></tr>"
        )

    head = "".join(f'<th scope="col" {CELL}>{say(column)}</th>' for column in COLUMNS)
    rows = "".join(row(test) for test in tests)
    return (
        f'<div class="{SUMMARY_CLASS}"><h3>{say(HEADING)}</h3><table>'
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>"
    ).replace("\r", "")


class RecordedTests(NbGraderPreprocessor):
    """GenerateFeedback's step that puts the grader's record of each test at the top of the
    page: its status and its message (none when the grader recorded nothing of the submission:
    then the page is nbgrader's alone)."""

    # The feedback exporter configures this for every preprocessor (as nbgrader's GetGrades has).
    display_data_priority = List(GetGrades.class_traits()["display_data_priority"].default())
    display_data_priority.tag(config=True)
    catalogs = Unicode(
        "", help="The course's translation catalogs (assignments.catalogs_of; default: installed)"
    ).tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        found = result_files.recorded(
            results_folder(self.config), info["student"], info["assignment"]
        )
        if found is None or found.status != result_files.GRADED or not found.tests:
            return nb, resources
        words = messages_in_language_of(info["assignment"], self.catalogs)
        nb.cells.insert(0, new_markdown_cell(summary_html(found.tests, words)))
        return nb, resources
