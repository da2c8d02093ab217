"""Chapter 12's helpers: a draft export's report in short, and the case builders its
checkpoints give `check.cases` (fxcourse.tryit, cases drawn fresh from a seed at every run).

    draft_rows(program)        one (kind, expression or operator, your line) per reported problem
    range_case(make)           12.1: a range for n, an example size, batch sizes to call with
    runs(program, *inputs)     12.1: whether the exported program accepts these inputs
    gcd_pairs(make)            12.2: pairs that need few and many steps, zeros, random pairs
"""

from __future__ import annotations

from dataclasses import dataclass


def draft_rows(program) -> list[tuple[str, str, str]]:
    """(failure kind, the expression or operator it concerns, the innermost line of your code
    that caused it) for each problem in a draft export's report (`program._report`, private)."""
    rows = []
    for failure in program._report.failures:
        data = failure.data
        subject = data.get("expr") or data.get("op") or ""
        frames = data.get("user_stack") or []
        line = frames[-1]["loc"].split("#")[0].strip() if frames else ""
        rows.append((str(failure.failure_type), str(subject), line))
    return rows


@dataclass
class RangeCase:
    """A range [low, high] for n, the example size the export sees, and the batch sizes the
    program is then called with."""

    low: int
    high: int
    example_n: int
    batches: tuple[int, ...]


def range_case(make) -> RangeCase:
    """The chapter's range 2..32 in a run's first case, then a fresh range of at least 3 sizes."""
    if make.index == 0:
        case = RangeCase(2, 32, 5, (3, 1, 9))
    else:
        low = make.integer(2, 9)
        high = make.integer(low + 2, 48)
        batches = tuple(make.integer(1, 16) for _ in range(3))
        case = RangeCase(low, high, make.integer(low, high), batches)
    make.note(f"n: {case.low}..{case.high}")
    return case


def runs(program, *inputs) -> bool:
    """Whether the exported program accepts the inputs (its guards and asserts raise if not)."""
    try:
        program.module()(*inputs)
        return True
    except Exception:
        return False


FIBONACCI = [1, 1]
while len(FIBONACCI) < 40:
    FIBONACCI.append(FIBONACCI[-1] + FIBONACCI[-2])


def gcd_pairs(make) -> list[tuple[int, int]]:
    """Pairs to run: consecutive Fibonacci numbers (the most steps for their size), multiples,
    a zero on one side, and random pairs."""
    start = make.integer(20, 37)
    factor = make.integer(2, 50)
    pairs = [
        (FIBONACCI[start + 1], FIBONACCI[start]),
        make.choice([(make.integer(1, 99), 0), (0, make.integer(1, 99))]),
        (factor * make.integer(1, 1000), factor * make.integer(1, 1000)),
        (make.integer(0, 10**6), make.integer(1, 10**6)),
    ]
    make.note(f"{pairs}")
    return pairs
