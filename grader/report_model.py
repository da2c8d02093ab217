"""The class report's model (grader/report.py reads it, report_page.py shows it): each learner's
standing on each exercise, and the numbers drawn from them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

# What a submission of an exercise came to; "graded" is the only state with a score.
GRADED, NOT_GRADED, GRADER_FAILED = "graded", "could not be graded", "grader failed"
WAITING, ABSENT = "not graded yet", "not submitted"
STATES = (GRADED, NOT_GRADED, GRADER_FAILED, WAITING, ABSENT)


@dataclass
class Submission:
    """One learner's standing on one exercise."""

    student: str
    state: str
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


def graded(exercise: Exercise) -> list[Submission]:
    return [s for s in exercise.submissions if s.state == GRADED]


def counts(exercise: Exercise) -> dict[str, int]:
    found = Counter(s.state for s in exercise.submissions)
    return {state: found[state] for state in STATES}


def test_rows(exercise: Exercise) -> list[dict]:
    """Per test: its points, how many passed, the pass rate, mean points and the messages of
    those who failed, most frequent first."""
    done, rows = graded(exercise), []
    for test in exercise.tests:
        top = exercise.points[test]
        got = [s.tests.get(test) or 0.0 for s in done]
        passed = sum(1 for points in got if points >= top)
        messages = Counter(s.messages[test] for s in done if test in s.messages)
        rows.append(
            {
                "test": test,
                "points": top,
                "graded": len(done),
                "passed": passed,
                "pass_rate": passed / len(done) if done else None,
                "mean_points": sum(got) / len(done) if done else None,
                "messages": messages.most_common(),
            }
        )
    return rows


def tryit_totals(progress: dict[str, dict], student: str) -> str:
    chapters = progress.get(student)
    if chapters is None:
        return ""
    marks = [ok for chapter in chapters.values() for ok in chapter.values()]
    return f"{sum(marks)}/{len(marks)}"


def stalled_tryits(progress: dict[str, dict]) -> list[tuple[str, int, int]]:
    """(try-it id, learners who passed it, learners whose chapter was read), fewest passes first."""
    passed, seen = Counter(), Counter()
    for chapters in progress.values():
        for chapter in chapters.values():
            for tid, ok in chapter.items():
                seen[tid] += 1
                passed[tid] += ok
    order = sorted(seen, key=lambda tid: (passed[tid] / seen[tid], in_order(tid)))
    return [(tid, passed[tid], seen[tid]) for tid in order]


def in_order(tid: str) -> list[tuple[int, str]]:
    """A sort key of a try-it id that cannot raise: its parts, numbers in numeric order ("2.10"
    after "2.9"), compared as digit strings by length (no int() of a learner's digits)."""
    return [(len(part), part) if part.isdigit() else (1 << 30, part) for part in tid.split(".")]


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
