"""A submission's result file, ``<autograded>/.safegrade/<assignment>/<student>.json``: typed
per-test results (like PrairieLearn's results.json) and the submission's state, which tells
"graded" (the score is what the tests earned, 0 included) from "error" (the submission could not
be graded: nbgrader could not read it, or it has no graded cell; nbgrader scores it 0) and
"grader-error" (the grader failed, not the submission: no score is recorded). The export, the
class report and `make autograde`'s summary read it through ``load``; the report reads a test's
message from it, never from a notebook.

Each test's status and message are recorded where the verdict is known: the grading process's
Execute step (preprocessors.py), from the outputs it made of the sandbox's records and the checks'
verdicts, writes them to ``<autograded>/.safegrade/.tests/<assignment>/<student>.json``
(``save_tests``), before nbgrader scores the cells; ``read_result`` builds the result file from
that record and nbgrader's errors. A test is "not run" when its cell has no record (the
submission stopped first), never because of what its message says.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from .data import clean_text
from .grading_limits import LIMITS


class State(StrEnum):
    """What one learner's submission of an exercise came to: the one vocabulary of the result
    file (its values), the export and the class report (their words: ``label``, ``cell``)."""

    GRADED = "graded"  # the only state with a score
    NOT_GRADABLE = "error"
    GRADER_FAILED = "grader-error"
    WAITING = "waiting"  # submitted, no result yet (the report's; never in a result file)
    ABSENT = "absent"  # nothing submitted (the report's; never in a result file)

    @property
    def label(self) -> str:
        """The state in the class report's words."""
        return _LABELS[self]

    @property
    def cell(self) -> str:
        """What a cell of the grades export says of a submission in this state, graded or not."""
        return _CELLS[self]


_LABELS = {
    State.GRADED: "graded", State.NOT_GRADABLE: "could not be graded",
    State.GRADER_FAILED: "grader failed", State.WAITING: "not graded yet",
    State.ABSENT: "not submitted",
}  # fmt: skip
_CELLS = {State.NOT_GRADABLE: "could not grade", State.GRADER_FAILED: "grader failed"}
RESULT_STATES = (State.GRADED, State.NOT_GRADABLE, State.GRADER_FAILED)  # a result file's
GRADED, NOT_GRADABLE, GRADER_FAILED = State.GRADED, State.NOT_GRADABLE, State.GRADER_FAILED


class Outcome(StrEnum):
    """What one test came to."""

    PASSED = "passed"
    FAILED = "failed"  # it ran and earned less than its points
    NOT_RUN = "not-run"  # the submission stopped before its cell (the cell has no record)


PASSED, FAILED, NOT_RUN = Outcome.PASSED, Outcome.FAILED, Outcome.NOT_RUN


@dataclass(frozen=True)
class TestResult:
    """One graded cell: its points (of max_points), and why it earned less."""

    __test__ = False  # not a pytest class

    name: str  # nbgrader's grade_id
    points: float
    max_points: float
    status: Outcome
    message: str = ""  # the error it printed, when it did not pass

    @classmethod
    def of(cls, data: dict) -> TestResult:
        """A test from its JSON (TypeError or ValueError when it is not one)."""
        found = cls(**data)
        status = Outcome(found.status)
        if not isinstance(found.name, str) or not isinstance(found.message, str):
            raise TypeError("a test's name and message are text")
        return cls(found.name, float(found.points), float(found.max_points), status, found.message)


@dataclass(frozen=True)
class SubmissionResult:
    student: str
    assignment: str
    status: State  # GRADED, NOT_GRADABLE or GRADER_FAILED
    score: float | None  # None when the grader failed
    max_score: float
    reason: str  # one line, as make autograde prints it
    tests: list[TestResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    key: str = ""  # what was graded: sources, submission and limits (batch.submission_key)
    detail: str = ""  # for an upload that could not be graded: the error nbgrader raised

    def as_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    def messages(self) -> dict[str, str]:
        """Each test that did not pass -> the message its learner read."""
        return {t.name: t.message for t in self.tests if t.status != PASSED}


def load(path: Path) -> SubmissionResult | None:
    """The result file at path, or None when there is none or it is not one."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or found.get("status") not in RESULT_STATES:
        return None
    known = SubmissionResult.__dataclass_fields__
    given = {name: value for name, value in found.items() if name in known and name != "tests"}
    given = {"student": path.stem, "assignment": path.parent.name} | given
    given = {"score": None, "max_score": 0.0, "reason": ""} | given
    try:
        tests = [TestResult.of(test) for test in found.get("tests", [])]
        return SubmissionResult(**given | {"status": State(found["status"])}, tests=tests)
    except (TypeError, ValueError):  # written by another version of the grader
        return None


def not_graded(folder: Path, assignments) -> list[SubmissionResult]:
    """The results under folder (<assignment>/<student>.json) of the uploads the last make
    autograde could not grade or failed on: nbgrader has no grade, notebook or feedback of them."""
    paths = (path for a in assignments for path in sorted((folder / a).glob("*.json")))
    found = (load(path) for path in paths if not regraded_since(path))
    return [result for result in found if result is not None and result.status != GRADED]


def regraded_since(result_file: Path) -> bool:
    """Whether the submission was graded again after its result file was written: make
    autograde writes the tests' record before the result file, so a newer record is a later
    grading that wrote no result file (the formgrader's button, plain nbgrader)."""
    try:
        return tests_record(result_file).stat().st_mtime_ns > result_file.stat().st_mtime_ns
    except OSError:
        return False


def save(result: SubmissionResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_text(result.as_json())
    os.replace(path.with_suffix(".tmp"), path)  # atomic: never half a result


def read_result(
    results: Path, student: str, assignment: str, errors: list[str], notes: list[str]
) -> SubmissionResult:
    """The typed result, from the tests' record the grading process wrote (``save_tests``)
    and the errors nbgrader raised (with errors, nbgrader recorded no grade: no test counts)."""
    recorded = [] if errors else load_tests(tests_path(results, student, assignment))
    tests = recorded or []
    score, most = sum(t.points for t in tests), sum(t.max_points for t in tests)
    failed = [f"{t.name}: {t.message}" for t in tests if t.status != PASSED]
    detail = telling_line(errors) if errors else "no graded cell in the autograded notebook"
    if errors or not tests:
        reason = f"could not be graded: {what_to_do(detail, notes)}"
    elif failed:
        reason = (
            f"{score:g}/{most:g}: {len(failed)} of {len(tests)} tests failed: {'; '.join(failed)}"
        )
    else:
        reason = f"{score:g}/{most:g}: all {len(tests)} tests passed"
    reason = " ".join((reason + "".join(f" (note: {note})" for note in notes)).split())
    status = NOT_GRADABLE if errors or not tests else GRADED
    reason = clean_text(reason, LIMITS.reason_chars)
    detail = clean_text(detail, LIMITS.reason_chars) if status == NOT_GRADABLE else ""
    return SubmissionResult(
        student, assignment, status, score, most, reason, tests, notes, "", detail
    )


# What an error nbgrader raised on an upload says to an instructor, and what to do about it.
PLAIN_REASONS = (
    (("NotJSONError", "JSONDecodeError", "not JSON", "Unterminated", "Expecting"),
     "the notebook is cut off or corrupt: ask for a new upload"),
    (("ValidationError", "is not valid under", "required property", "expected key"),
     "the notebook's structure is damaged (nbformat refuses it): ask for a new upload"),
    (("No notebooks were matched",), "the upload holds no notebook of this exercise: ask for it"),
    (("no graded cell",),
     "the notebook has none of the exercise's test cells (another notebook?): ask for it"),
)  # fmt: skip


def what_to_do(detail: str, notes: list[str]) -> str:
    """The plain reason an upload could not be graded (the error itself is the result's
    detail): a notebook staging left out says why; known errors say what happened."""
    left_out = [note.split(" was left out: ", 1) for note in notes if " was left out: " in note]
    if left_out and "No notebooks were matched" in detail:
        name, why = left_out[0]
        return f"{name} was left out ({why}): ask for a smaller notebook"
    for marks, plain in PLAIN_REASONS:
        if any(mark in detail for mark in marks):
            return plain
    return "nbgrader could not read it (see the detail): ask for a new upload"


def grader_failed(result: SubmissionResult, errors: list[str]) -> SubmissionResult:
    """The result of a submission the grader failed on: no score, the tests' maxima kept."""
    reason = f"not graded: the grader failed, not the submission ({last_line(errors)}); rerun"
    tests = [
        TestResult(t.name, 0.0, t.max_points, NOT_RUN, "the grader failed") for t in result.tests
    ]
    reason = clean_text(reason, LIMITS.reason_chars)
    return SubmissionResult(
        result.student, result.assignment, GRADER_FAILED, None, result.max_score, reason, tests,
        result.notes,
    )  # fmt: skip


def tested(cell, ran: bool) -> TestResult:
    """A graded cell's result, as nbgrader will score the outputs the grading process gave it:
    not run when the submission stopped before it (``ran`` is False: its cell has no record)."""
    from nbgrader import utils

    got, top = utils.determine_grade(cell)
    status = NOT_RUN if not ran else PASSED if got == top else FAILED
    name = cell.metadata.nbgrader["grade_id"]
    return TestResult(name, float(got or 0), float(top), status, first_error(cell))


def save_tests(results: Path, student: str, assignment: str, tests: list[TestResult]) -> None:
    """The tests' record of a submission, written by the grading process that computed it."""
    text = json.dumps([asdict(test) for test in tests], indent=1)
    path = tests_path(results, student, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_text(text)
    os.replace(path.with_suffix(".tmp"), path)


def load_tests(path: Path) -> list[TestResult] | None:
    """The tests' record at path; None when there is none or it is not one."""
    try:
        return [TestResult.of(test) for test in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        return None


def first_error(cell) -> str:
    errors = [
        ": ".join(filter(None, (o.ename, o.evalue)))
        for o in cell.outputs
        if o.output_type == "error"
    ]
    return errors[0] if errors else ""


def telling_line(errors: list[str]) -> str:
    """The line of nbgrader's errors that says what went wrong: the first with an error this
    module knows (nbgrader's later lines guess at other folders), else the last."""
    lines = [line for text in errors for line in text.strip().split("\n") if line[:1].strip()]
    known = [line for line in lines for marks, _ in PLAIN_REASONS if any(m in line for m in marks)]
    return known[0] if known else last_line(errors)


def last_line(errors: list[str]) -> str:
    lines = [line for text in errors for line in text.strip().split("\n") if line.strip()]
    useful = [line for line in lines if not line.startswith(("There was an error", "Please see"))]
    return (useful or lines or ["unknown error"])[-1]


def result_path(results: Path, student: str, assignment: str) -> Path:
    """A submission's result file in the results folder (Course.results, grading_files.py)."""
    return results / assignment / f"{student}.json"


def tests_path(results: Path, student: str, assignment: str) -> Path:
    return tests_record(result_path(results, student, assignment))


def tests_record(result_file: Path) -> Path:
    """Where the grading process records the tests of the submission whose result file is
    <results>/<assignment>/<student>.json: <results>/.tests/ (a folder no assignment has)."""
    return result_file.parent.parent / ".tests" / result_file.parent.name / result_file.name


def recorded(results: Path, student: str, assignment: str) -> SubmissionResult | None:
    """What the grader recorded of a submission (results: <autograded>/.safegrade): its result
    file, its tests as the process that graded it last recorded them (the formgrader's button
    and plain nbgrader write no result file: a result file older than that record is stale), or
    None."""
    result_file = result_path(results, student, assignment)
    found = None if regraded_since(result_file) else load(result_file)
    tests = load_tests(tests_record(result_file))
    if tests is None or (found is not None and found.status != GRADED):
        return found
    if found is not None:
        return replace(found, tests=tests)
    score, most = sum(t.points for t in tests), sum(t.max_points for t in tests)
    return SubmissionResult(student, assignment, GRADED, score, most, "", tests)
