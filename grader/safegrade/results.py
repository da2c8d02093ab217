"""A submission's result file, ``<autograded>/.safegrade/<assignment>/<student>.json``: typed
per-test results (like PrairieLearn's results.json) and the submission's status, which tells
"graded" (the score is what the tests earned, 0 included) from "error" (the submission could not
be graded: nbgrader could not read it, or it has no graded cell; nbgrader scores it 0) and
"grader-error" (the grader failed, not the submission: no score is recorded). The export, the
class report and `make autograde`'s summary read it through ``load``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .data import clean_text
from .limits import LIMITS
from .wording import prefix

GRADED, NOT_GRADABLE, GRADER_FAILED = "graded", "error", "grader-error"
PASSED, FAILED, NOT_RUN = "passed", "failed", "not-run"  # a test's status


@dataclass(frozen=True)
class TestResult:
    """One graded cell: its points (of max_points), and why it earned less."""

    name: str  # nbgrader's grade_id
    points: float
    max_points: float
    status: str  # PASSED, FAILED (it ran and earned less), NOT_RUN (the submission stopped first)
    message: str = ""  # the error it printed, when it did not pass


@dataclass(frozen=True)
class SubmissionResult:
    student: str
    assignment: str
    status: str  # GRADED, NOT_GRADABLE or GRADER_FAILED
    score: float | None  # None when the grader failed
    max_score: float
    reason: str  # one line, as make autograde prints it
    tests: list[TestResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    key: str = ""  # what was graded: sources, submission and limits (batch.submission_key)
    detail: str = ""  # for an upload that could not be graded: the error nbgrader raised

    def as_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


def load(path: Path) -> SubmissionResult | None:
    """The result file at path, or None when there is none or it is not one."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or found.get("status") not in (
        GRADED, NOT_GRADABLE, GRADER_FAILED
    ):  # fmt: skip
        return None
    known = SubmissionResult.__dataclass_fields__
    given = {name: value for name, value in found.items() if name in known and name != "tests"}
    given = {"student": path.stem, "assignment": path.parent.name} | given
    given = {"score": None, "max_score": 0.0, "reason": ""} | given
    try:
        tests = [TestResult(**test) for test in found.get("tests", [])]
        return SubmissionResult(**given, tests=tests)
    except TypeError:  # written by another version of the grader
        return None


def not_graded(folder: Path, assignments) -> list[SubmissionResult]:
    """The results under folder (<assignment>/<student>.json) of the uploads the last make
    autograde could not grade or failed on: nbgrader has no grade, notebook or feedback of them."""
    found = (load(path) for a in assignments for path in sorted((folder / a).glob("*.json")))
    return [result for result in found if result is not None and result.status != GRADED]


def save(result: SubmissionResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_text(result.as_json())
    os.replace(path.with_suffix(".tmp"), path)  # atomic: never half a result


def read_result(
    course, student: str, assignment: str, errors: list[str], notes: list[str]
) -> SubmissionResult:
    """The typed result, from the autograded notebooks nbgrader wrote and its errors."""
    tests = read_tests(Path(course.format_path(course.autograded_directory, student, assignment)))
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


def read_tests(folder: Path) -> list[TestResult]:
    """Each graded code cell of the autograded notebooks, as nbgrader scores it."""
    import nbformat
    from nbgrader import utils

    cells = [
        cell for path in sorted(folder.glob("*.ipynb")) for cell in nbformat.read(path, 4).cells
    ]
    tests, openings = [], not_run_openings(folder.name)
    for cell in (c for c in cells if utils.is_grade(c) and c.cell_type == "code"):
        got, top = utils.determine_grade(cell)
        message = first_error(cell)
        status = PASSED if got == top else NOT_RUN if is_not_run(cell, openings) else FAILED
        name = cell.metadata.nbgrader["grade_id"]
        tests.append(TestResult(name, float(got or 0), float(top), status, message))
    return tests


def is_not_run(cell, openings: tuple[str, ...] = ("not run",)) -> bool:
    """Whether the submission stopped before this test ran (verdicts.stopped wrote why)."""
    return any(
        o.output_type == "error" and str(o.get("evalue", "")).startswith(openings)
        for o in cell.outputs
    )


def not_run_openings(assignment: str) -> tuple[str, ...]:
    """How a message saying a test was not run begins, in English and in the assignment's
    language (the grader's messages are told in it: preprocessors.in_language_of)."""
    from grader.exercises import split

    language, lookup = split(assignment)[1], {}
    if language:
        from fxcourse.i18n import lookup_of

        lookup = lookup_of("safegrade", language)
    said = (prefix(template, lookup) for template in lookup if template.startswith("not run"))
    return ("not run", *said)


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


def result_path(course, student: str, assignment: str) -> Path:
    root = Path(course.format_path(course.autograded_directory, ".", ".")).resolve()
    return root / ".safegrade" / assignment / f"{student}.json"
