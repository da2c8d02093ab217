"""The class report's model (grader/report.py reads it, report_page.py shows it): each learner's
standing on each exercise, and the numbers drawn from them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from grader.safegrade.result_files import State

# What a submission of an exercise came to (the result files' vocabulary); GRADED alone has a score.
GRADED, NOT_GRADABLE, GRADER_FAILED = State.GRADED, State.NOT_GRADABLE, State.GRADER_FAILED
WAITING, ABSENT = State.WAITING, State.ABSENT
STATES = tuple(State)


@dataclass
class Submission:
    """One learner's standing on one exercise."""

    student: str
    state: State
    score: float | None = None  # after the late penalty
    seconds_late: float = 0.0
    penalty: float = 0.0
    tests: dict[str, float | None] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)  # failing test -> what it printed
    reason: str = ""  # the grader's one line, for a submission it could not grade
    detail: str = ""  # the error behind it (one click away on the page)
    feedback: str | None = None  # the feedback page, relative to the class data


@dataclass
class Exercise:
    name: str
    tests: list[str]  # graded cells, in the notebook's order
    points: dict[str, float]  # test -> its maximum
    submissions: list[Submission]

    @property
    def max_score(self) -> float:
        return sum(self.points.values())


@dataclass(frozen=True)
class Row:
    """What a cell of a learners' table is drawn from."""

    exercise: Exercise
    s: Submission
    progress: dict[str, dict]
    test: str = ""  # the test of a column per test


@dataclass(frozen=True)
class Column:
    """A column of the report's tables: a table's CSV and the page's table both come from one
    list (LEARNER_COLUMNS: a row per learner; TEST_COLUMNS: a row per test), so a column is one
    row there. `text` reads the table's row (a Row or a TestRow)."""

    name: str  # the CSV's heading ("" : not in the CSV; "{test}": the test's name)
    label: str  # the page's heading ("" : not on the page)
    text: Callable[[Any], str]
    sort: Callable[[Any], object] | None = None  # the page sorts by this number, not the text
    page_text: Callable[[Any], str] | None = None  # the page's text, when not the CSV's
    per_test: bool = False  # one column per test of the exercise
    with_progress: bool = False  # on the page only when the report has try-it progress
    # "heading": the row's heading; "link": a link to the learner's feedback; "messages": the
    # page lists a test's failure messages in one cell
    kind: str = "text"
    per_message: bool = False  # the CSV has a row per failure message, this column its part
    test: str = ""  # the test of one of a column's copies per test

    def of(self, exercise: Exercise) -> list[Column]:
        """This column, or one per test, with its test's name as its headings."""
        if not self.per_test:
            return [self]
        return [replace(self, name=t, label=t, per_test=False, test=t) for t in exercise.tests]


def points_of_test(row: Row) -> float | None:
    return row.s.tests.get(row.test) if row.s.state == GRADED else None


def seconds_late(row: Row) -> str:
    return f"{row.s.seconds_late:.0f}" if row.s.seconds_late > 0 else ""


def tryits(row: Row) -> str:
    return tryit_totals(row.progress, row.s.student)


def tryits_sort(row: Row) -> int:
    return tryits_passed(row.progress, row.s.student) if row.s.student in row.progress else -1


LEARNER_COLUMNS = [
    Column("student_id", "learner", lambda r: r.s.student, kind="heading"),
    Column("state", "state", lambda r: r.s.state.label),
    Column("score", "score", lambda r: points(r.s.score),
           sort=lambda r: r.s.score if r.s.state == GRADED else -1),
    Column("max_score", "", lambda r: points(r.exercise.max_score)),
    Column("seconds_late", "late", seconds_late, sort=lambda r: r.s.seconds_late,
           page_text=lambda r: late_text(r.s.seconds_late)),
    Column("late_penalty", "penalty", lambda r: points(r.s.penalty or None),
           sort=lambda r: r.s.penalty),
    Column("{test}", "{test}", lambda r: points(points_of_test(r)), per_test=True,
           sort=lambda r: -1 if points_of_test(r) is None else points_of_test(r)),
    Column("tryits_passed", "try-its passed", tryits, with_progress=True,
           sort=tryits_sort),
    Column("", "feedback", lambda r: r.s.feedback or "", kind="link"),
    Column("reason", "", lambda r: r.s.reason),
]  # fmt: skip


def learner_columns(exercise: Exercise, page: bool, progress: dict) -> list[Column]:
    """The columns of the CSV (page False) or of the page's table, one per test expanded."""
    shown = (lambda c: c.label and (progress or not c.with_progress)) if page else lambda c: c.name
    kept = [column for column in LEARNER_COLUMNS if shown(column)]
    return [one for column in kept for one in column.of(exercise)]


def graded(exercise: Exercise) -> list[Submission]:
    return [s for s in exercise.submissions if s.state == GRADED]


def counts(exercise: Exercise) -> dict[str, int]:
    found = Counter(s.state for s in exercise.submissions)
    return {state: found[state] for state in STATES}


@dataclass(frozen=True)
class TestRow:
    """A test's numbers over an exercise's graded submissions: what a cell of the tests' tables
    is drawn from (`message` and `count`: one of its failure messages, in a per-message row)."""

    test: str
    points: float  # the test's maximum
    graded: int
    passed: int
    pass_rate: float | None
    mean_points: float | None
    messages: list[tuple[str, int]]  # the failing learners' messages, most frequent first
    message: str = ""
    count: int = 0


def test_rows(exercise: Exercise) -> list[TestRow]:
    """Per test: its points, how many passed, the pass rate, mean points and the messages of
    those who failed, most frequent first."""
    done, rows = graded(exercise), []
    for test in exercise.tests:
        top = exercise.points[test]
        got = [s.tests.get(test) or 0.0 for s in done]
        passed = sum(1 for points in got if points >= top)
        messages = Counter(s.messages[test] for s in done if test in s.messages)
        rate = passed / len(done) if done else None
        mean = sum(got) / len(done) if done else None
        rows.append(TestRow(test, top, len(done), passed, rate, mean, messages.most_common()))
    return rows


def share(value: float | None, form: str) -> str:
    return "" if value is None else format(value, form)


TEST_COLUMNS = [
    Column("test", "test", lambda r: r.test, kind="heading"),
    Column("points", "points", lambda r: points(r.points)),
    Column("graded", "", lambda r: str(r.graded)),
    Column("passed", "passed", lambda r: str(r.passed),
           page_text=lambda r: f"{r.passed}/{r.graded}"),
    Column("pass_rate", "pass rate", lambda r: share(r.pass_rate, ".3f"),
           page_text=lambda r: share(r.pass_rate, ".0%")),
    Column("mean_points", "mean points", lambda r: share(r.mean_points, ".3f"),
           page_text=lambda r: share(r.mean_points, ".2f")),
    Column("message", "failure messages", lambda r: r.message, per_message=True,
           kind="messages"),
    Column("count", "", lambda r: str(r.count), per_message=True),
]  # fmt: skip


def test_columns(page: bool) -> list[Column]:
    """The columns of the tests' CSV (page False) or of the page's tests table."""
    return [column for column in TEST_COLUMNS if (column.label if page else column.name)]


def tryits_passed(progress: dict[str, dict], student: str) -> int:
    return sum(ok for chapter in progress.get(student, {}).values() for ok in chapter.values())


def tryit_totals(progress: dict[str, dict], student: str) -> str:
    """ "passed/all": out of the course's try-its, so a learner whose saved chapter is missing
    reads as not having passed its try-its, not as having fewer of them."""
    if student not in progress:
        return ""
    return f"{tryits_passed(progress, student)}/{len(course_tryits())}"


def stalled_tryits(progress: dict[str, dict]) -> list[tuple[str, int, int]]:
    """(try-it id, learners who passed it, learners whose progress was read), fewest passes
    first: a learner whose saved chapter is missing counts as not having passed its try-its."""
    passed = Counter()
    for chapters in progress.values():
        for chapter in chapters.values():
            for tid, ok in chapter.items():
                passed[tid] += ok
    order = sorted(passed, key=lambda tid: (passed[tid], in_order(tid)))
    return [(tid, passed[tid], len(progress)) for tid in order]


def in_order(tid: str) -> list[tuple[int, str]]:
    """A sort key of a try-it id that cannot raise: its parts, numbers in numeric order ("2.10"
    after "2.9"), compared as digit strings by length (no int() of a learner's digits)."""
    return [(len(part), part) if part.isdigit() else (1 << 30, part) for part in tid.split(".")]


@cache
def course_tryits() -> dict[str, str]:
    """The course's own try-it ids, each with its chapter ("01_symbolic_tracing")."""
    from fxcourse.tryit import load_answers

    return {tid: answer["chapter"] for tid, answer in load_answers().items()}


def own_tryits(chapter: str, marks: dict, known: dict[str, str]) -> dict[str, bool]:
    """A chapter's try-it marks (a learner's claim) with only the course's own ids of that
    chapter (named "01_symbolic_tracing" or "01_symbolic_tracing.ipynb"), each passed or not."""
    stem = chapter.removesuffix(".ipynb")
    return {tid: ok is True for tid, ok in marks.items() if known.get(tid) == stem}


def points(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def late_text(seconds: float) -> str:
    if seconds <= 0:
        return ""
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"
