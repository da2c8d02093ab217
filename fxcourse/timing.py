"""Timing in rounds, and what the rounds say: shared by chapters 4 and 5 and `make bench-fusion`.

    times = time_in_rounds({"a": timer_a, "b": timer_b}, rounds=15, min_run_time=0.2)
    Comparison("a", "b", ratios_per_round(times, "a", "b")).describe()

The candidates take turns within every round, so each round gives a fair time ratio of any two,
and a vote on which is faster. A difference counts as measurable only when one side wins so many
rounds that equally fast candidates would rarely do so (a two-sided sign test).
"""

from __future__ import annotations

import importlib
import logging
import math
import statistics
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from fxcourse.messages import _

# If two candidates were equally fast, which one wins a round would be a coin flip. A split of the
# rounds that fair coins produce less often than this counts as a measurable difference.
MAX_CHANCE = 0.05


def _import_benchmark_without_cuda_home_warning():
    """torch.utils.benchmark, imported without one irrelevant log line.

    Importing it imports torch.utils.cpp_extension, which logs "No CUDA runtime is found, using
    CUDA_HOME=..." when a CUDA toolkit is installed but no GPU is usable. That concerns compiling
    C++ extensions, never timing; only that one message of that one logger is dropped, during
    this import only.
    """
    cpp_extension_logger = logging.getLogger("torch.utils.cpp_extension")

    def drop_no_cuda_runtime(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No CUDA runtime is found")

    cpp_extension_logger.addFilter(drop_no_cuda_runtime)
    try:
        return importlib.import_module("torch.utils.benchmark")
    finally:
        cpp_extension_logger.removeFilter(drop_no_cuda_runtime)


benchmark = _import_benchmark_without_cuda_home_warning()


def thread_cpu_clock() -> float:
    """CPU seconds of the calling thread: unlike the wall clock it leaves out the moments the
    operating system gives the core to other programs. Covers one-thread CPU work only."""
    return time.thread_time()


def time_in_rounds(
    timers: dict[str, benchmark.Timer], rounds: int, min_run_time: float
) -> dict[str, list[benchmark.Measurement]]:
    """One blocked_autorange measurement per timer and round, `min_run_time` seconds in all.

    The timers take turns within each round, each round starting with the next one, so a burst
    of load from other programs hurts them all alike. blocked_autorange first runs the statement
    untimed to choose a block size, which also warms it up.
    """
    names = list(timers)
    runs: dict[str, list[benchmark.Measurement]] = {name: [] for name in names}
    for round_index in range(rounds):
        start = round_index % len(names)
        for name in names[start:] + names[:start]:
            runs[name].append(timers[name].blocked_autorange(min_run_time=min_run_time / rounds))
    return runs


def time_callables(
    candidates: dict[str, Callable[[], object]], rounds: int = 7, min_run_time: float = 0.2
) -> dict[str, list[float]]:
    """Seconds per call of each candidate, one median per round, on the thread's CPU clock."""
    timers = {
        name: benchmark.Timer("call()", globals={"call": call}, timer=thread_cpu_clock)
        for name, call in candidates.items()
    }
    runs = time_in_rounds(timers, rounds, min_run_time)
    return {name: [m.median for m in measured] for name, measured in runs.items()}


def ratios_per_round(times: dict[str, list[float]], name: str, other: str) -> list[float]:
    return [mine / theirs for mine, theirs in zip(times[name], times[other], strict=True)]


def columns(text: str) -> int:
    """How many columns of a terminal `text` takes: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def padded(text: str, width: int, right: bool = False) -> str:
    """`text` padded with spaces to `width` columns (str.ljust counts a Chinese character as
    one column, and a table of translated names goes askew)."""
    fill = " " * max(width - columns(text), 0)
    return fill + text if right else text + fill


def compare(times: dict[str, list[float]], name: str, other: str) -> Comparison:
    """How candidate `name` compares with `other`, from their times round by round."""
    return Comparison(name, other, ratios_per_round(times, name, other))


def timing_table(times: dict[str, list[float]], baseline: str) -> str:
    """Median and IQR per candidate in microseconds, and the median time ratio to `baseline`."""
    width = max(columns(name) for name in times) + 2
    heading = padded(_("median"), 10, right=True) + padded(_("IQR"), 9, right=True)
    lines = [" " * width + heading + "   " + _("time / {baseline}").format(baseline=baseline)]
    for name, per_round in times.items():
        q1, median, q3 = quartiles(per_round)
        ratio = compare(times, name, baseline).ratio
        lines.append(
            f"{padded(name, width)}{median * 1e6:>8.1f}µs{(q3 - q1) * 1e6:>7.1f}µs   {ratio:.2f}"
        )
    lines.append(
        _("medians and IQRs over {rounds} rounds, each round timing every candidate").format(
            rounds=len(per_round)
        )
    )
    return "\n".join(lines)


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """25th, 50th (the median) and 75th percentile, interpolated as numpy and torch do."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


def sign_test(wins: int, rounds: int) -> float:
    """Two-sided sign test: the chance that fair coin flips split `rounds` at least as
    lopsidedly as `wins` against `rounds - wins`."""
    extreme = max(wins, rounds - wins)
    one_side = sum(math.comb(rounds, k) for k in range(extreme, rounds + 1)) / 2**rounds
    return min(1.0, 2 * one_side)


@dataclass
class Comparison:
    """How variant `name` compares with variant `other`, round by round.

    In each round the two ran one shortly after the other, under about the same load from other
    programs, so each round gives a fair ratio of their times, and a vote on which is faster.
    """

    name: str
    other: str
    per_round: list[float]  # name's time / other's time, one ratio per round

    @property
    def ratio(self) -> float:
        return statistics.median(self.per_round)

    @property
    def wins(self) -> int:
        """Rounds in which `name` was the faster of the two."""
        return sum(r < 1 for r in self.per_round)

    @property
    def chance(self) -> float:
        """How often equally fast variants would split the rounds at least this unevenly."""
        return sign_test(self.wins, len(self.per_round))

    @property
    def measurable(self) -> bool:
        return self.chance < MAX_CHANCE

    def describe(self) -> str:
        """The conclusion these numbers support, then (indented) the numbers behind it."""
        q1, _median, q3 = quartiles(self.per_round)
        chance = _("below 0.1%") if self.chance < 0.001 else f"{self.chance:.1%}"
        if self.measurable and self.ratio < 1:
            verdict = _("{share:.1%} faster").format(share=1 - self.ratio)
        elif self.measurable:
            verdict = _("{share:.1%} slower ({ratio:.2f}x the time)").format(
                share=self.ratio - 1, ratio=self.ratio
            )
        else:
            verdict = _("the difference is below the noise of repeated runs, none measurable here")
        numbers = _(
            "faster in {wins} of {rounds} rounds (if equally fast, a split at least this uneven "
            "has chance {chance}); time ratio {ratio:.3f}, IQR {q1:.3f} to {q3:.3f}"
        ).format(
            wins=self.wins,
            rounds=len(self.per_round),
            chance=chance,
            ratio=self.ratio,
            q1=q1,
            q3=q3,
        )
        compared = _("{name} vs {other}: {verdict}").format(
            name=self.name, other=self.other, verdict=verdict
        )
        return f"{compared}\n    {numbers}"
