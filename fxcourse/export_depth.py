"""Chapter 12's helpers: a draft export's report in short, and the checkpoints' fresh cases.

    draft_rows(program)        one (kind, expression or operator, your line) per reported problem
    range_cases(seed)          12.1: ranges for n, example sizes, probes inside and outside
    runs(program, *inputs)     12.1: whether the exported program accepts these inputs
    gcd_cases(seed)            12.2: pairs that need few and many steps, zeros, an example pair

Each case list is rebuilt from its seed, so a learner can rerun the one a message names.
"""

from __future__ import annotations

import math
import random
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


def range_cases(seed: int, count: int = 5) -> list[RangeCase]:
    """The chapter's range 2..32 first, then `count` fresh ranges, each of at least 3 sizes."""
    rng = random.Random(seed)
    cases = [RangeCase(2, 32, 5, (3, 1, 9))]
    for _ in range(count):
        low = rng.randint(2, 9)
        high = rng.randint(low + 2, 48)
        cases.append(
            RangeCase(low, high, rng.randint(low, high), tuple(rng.sample(range(1, 17), 3)))
        )
    return cases


def runs(program, *inputs) -> bool:
    """Whether the exported program accepts the inputs (its guards and asserts raise if not)."""
    try:
        program.module()(*inputs)
        return True
    except Exception:
        return False


def gcd_cases(seed: int, count: int = 6) -> tuple[tuple[int, int], list[tuple[int, int]]]:
    """An example pair for the export, and pairs to run: consecutive Fibonacci numbers (the
    most steps for their size), multiples, zeros on either side, and random pairs."""
    rng = random.Random(seed)
    fib = [1, 1]
    while len(fib) < 40:
        fib.append(fib[-1] + fib[-2])
    start = rng.randint(20, 37)
    pairs = [(fib[start + 1], fib[start]), (rng.randint(1, 99), 0), (0, rng.randint(1, 99))]
    factor = rng.randint(2, 50)
    pairs.append((factor * rng.randint(1, 1000), factor * rng.randint(1, 1000)))
    pairs += [(rng.randint(0, 10**6), rng.randint(1, 10**6)) for _ in range(count)]
    example = (rng.randint(2, 500), rng.randint(2, 500))
    return example, pairs


def gcd(a: int, b: int) -> int:
    return math.gcd(a, b)
