"""Exercise 3's checks (solutions/ex3_timing_interpreter/verify.py, which the visible cells and the
grader share) on times that are not seconds: a timer in nanoseconds gave ints, which passed as a
number of seconds >= 0 (red team redG)."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import pytest
import torch
from torch import fx, nn

from grader.safegrade import probing

VERIFY = Path(__file__).resolve().parents[1] / "solutions" / "ex3_timing_interpreter" / "verify.py"


@pytest.fixture(scope="module")
def verify():
    return probing.load(VERIFY)


def timings_with(clock, verify, model=None) -> tuple[dict, fx.GraphModule]:
    """One run of a small traced model, each timed node timed with `clock`."""
    gm = fx.symbolic_trace(model or nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
    timings: dict = {}

    class Timed(fx.Interpreter):
        def run_node(self, node):
            if node.op not in verify.TIMED_OPS:
                return super().run_node(node)
            start = clock()
            value = super().run_node(node)
            timings.setdefault(node.name, []).append(clock() - start)
            return value

    Timed(gm).run(torch.randn(2, 4))
    return timings, gm


def test_times_in_nanoseconds_are_refused_with_the_reason(verify):
    timings, gm = timings_with(time.perf_counter_ns, verify)
    with pytest.raises(AssertionError, match="nanoseconds"):
        verify.check_timed(timings, gm, calls=1)


def test_times_in_seconds_still_pass(verify):
    timings, gm = timings_with(time.perf_counter, verify)
    verify.check_timed(timings, gm, calls=1)


@pytest.mark.parametrize(
    "clock, told",
    [
        (time.process_time, "CPU time"),
        (time.thread_time, "CPU time"),
        (lambda: time.perf_counter() * 1000, "milliseconds"),
    ],
)
def test_cpu_time_and_milliseconds_are_refused_by_a_node_that_sleeps(verify, clock, told):
    """The visible cells held no node of known duration, so CPU time and milliseconds passed them
    (the hidden checks' sleeping nodes refused both): test_timed_nodes now times verify.Napping,
    whose nap sleeps NAP_SECONDS (red team redI)."""
    timings, _ = timings_with(clock, verify, verify.Napping())
    with pytest.raises(AssertionError, match=told):
        verify.check_wall_seconds(timings)
    timings, _ = timings_with(time.perf_counter, verify, verify.Napping())
    verify.check_wall_seconds(timings)


def test_timings_keyed_by_the_node_are_told_to_key_them_by_name(verify):
    """A Node prints as its name: "the timed nodes are ['lin', ...], not [lin, ...]" differed only
    in the quotes (red team redQ). The check now names the keys' type and node.name."""
    timings, gm = timings_with(time.perf_counter, verify)
    nodes = {node.name: node for node in gm.graph.nodes}
    by_node = {nodes[name]: times for name, times in timings.items()}
    with pytest.raises(AssertionError, match="keyed by Node objects: key it by node.name"):
        verify.check_timed(by_node, gm, calls=1)
    verify.check_timed(timings, gm, calls=1)


def test_a_wrong_set_of_timed_nodes_is_told_which_set_is_wanted(verify):
    """ "the timed nodes are WANT, not GOT" read as a statement about the learner's timings, the
    opposite of the truth (red team redU): the message says which set the nodes should be."""
    timings, gm = timings_with(time.perf_counter, verify)
    timings["input_1"] = [0.001]  # a placeholder timed too
    told = r"the timed nodes should be \['_0', '_1'\], not \['_0', '_1', 'input_1'\]"
    with pytest.raises(AssertionError, match=told):
        verify.check_timed(timings, gm, calls=1)


def test_a_summary_row_of_the_wrong_target_is_told_the_target_wanted(verify):
    """ "op/target: {row}" printed the learner's row and nothing of what was wanted (red team
    redU): a row with str(node.target) is told the op and target_text(node)."""
    gm = fx.symbolic_trace(lambda x: torch.relu(x))
    timings = {"relu": [0.001]}
    node = next(n for n in gm.graph.nodes if n.name == "relu")
    row = {"name": "relu", "op": node.op, "target": str(node.target), "calls": 1}
    row |= {"mean_s": 0.001, "percent": 100.0}
    told = r"relu: op and target should be \('call_function', 'torch.relu'\)"
    with pytest.raises(AssertionError, match=told):
        verify.check_summary([row], timings, gm)
    verify.check_summary([row | {"target": "torch.relu"}], timings, gm)


def summary_rows(timings: dict, gm: fx.GraphModule) -> list[dict]:
    """The reference solution's summary() of `timings`."""
    profiler = probing.load(VERIFY.with_name("solution.py")).TimingInterpreter(gm)
    profiler.timings = timings
    return profiler.summary()


def test_summary_values_of_another_type_are_refused(verify):
    """The red team (redO6): calls given as a float (or True after one run) passed, though the
    table says int; mean_s and percent are floats."""
    timings, gm = timings_with(time.perf_counter, verify)
    rows = summary_rows(timings, gm)
    for key, value in [("calls", float(rows[0]["calls"])), ("calls", True), ("percent", 100)]:
        changed = [rows[0] | {key: value}, *rows[1:]]
        with pytest.raises(AssertionError, match=f"{key} should be"):
            verify.check_summary(changed, timings, gm)


def test_summary_rows_of_another_shape_are_told_by_their_shape(verify):
    """The red team (redE): rows as tuples, or dicts keyed "node", heard "one row per timed
    node" (the name test ran first); a percent rounded to 4 places heard "percent should be
    48.310", which its own value also read as."""
    timings, gm = timings_with(time.perf_counter, verify)
    rows = summary_rows(timings, gm)
    verify.check_summary(rows, timings, gm)
    with pytest.raises(AssertionError, match="each row is a dict, not a tuple"):
        verify.check_summary([tuple(row.values()) for row in rows], timings, gm)
    renamed = [{"node" if k == "name" else k: v for k, v in row.items()} for row in rows]
    with pytest.raises(AssertionError, match="keys must be .*, not .*'node'"):
        verify.check_summary(renamed, timings, gm)
    rounded = [row | {"percent": round(row["percent"], 4)} for row in rows]
    assert rounded[0]["percent"] != rows[0]["percent"]  # measured times: not 4 places exactly
    with pytest.raises(
        AssertionError, match=rf"percent is {rounded[0]['percent']!r}; .*\(unrounded\)"
    ):
        verify.check_summary(rounded, timings, gm)


def summary_judged(seed: int, interpreter: type) -> None:
    """The hidden test_summary on what `interpreter` does with its cases of `seed`, as the
    grader runs it: probes.py beside the answer, checks.py on what comes back."""
    checks = probing.load(VERIFY.with_name("checks.py"))
    cases = checks.inputs("test_summary", seed)
    data = checks.probes.test_summary({"TimingInterpreter": interpreter}, cases)
    checks.test_summary(data, cases)


def summary_with_mean(average) -> type:
    """The reference TimingInterpreter, its mean_s average(times) instead of total / calls."""
    reference = probing.load(VERIFY.with_name("solution.py")).TimingInterpreter

    class Averaged(reference):
        def summary(self):
            rows = super().summary()
            return [row | {"mean_s": average(self.timings[row["name"]])} for row in rows]

    return Averaged


@pytest.mark.parametrize(
    "average",
    [statistics.median, lambda times: (min(times) + max(times)) / 2],
    ids=["median", "midrange"],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_mean_that_is_a_median_or_a_midrange_is_refused(average, seed):
    """Every case of the hidden test_summary ran twice, where a median and the midpoint of the
    extremes equal the mean: `"mean_s": statistics.median(times)` passed every cell (red team).
    The crossing case runs three times, its first module's mean far from both."""
    with pytest.raises(AssertionError, match=r"^\w+: mean_s is total / calls$"):
        summary_judged(seed, summary_with_mean(average))  # names the node, prints no mean


def test_the_reference_passes_the_hidden_summary_test():
    reference = probing.load(VERIFY.with_name("solution.py")).TimingInterpreter
    for seed in range(int(os.environ.get("FXCOURSE_CHECK_SEEDS", "4"))):
        summary_judged(seed, reference)


@pytest.mark.parametrize("seed", range(5))
def test_the_visible_summary_test_refuses_a_median_mean(verify, seed):
    """The visible cell runs its model three times: a median mean_s of the measured times is
    refused there too (two runs passed it)."""
    torch.manual_seed(seed)
    gm = fx.symbolic_trace(nn.Sequential(nn.Linear(8, 8), nn.ReLU()))
    for average, passes in ((statistics.median, False), (statistics.fmean, True)):
        profiler = summary_with_mean(average)(gm)
        for _ in range(3):
            profiler.run(torch.randn(4, 8))
        if passes:
            verify.check_summary(profiler.summary(), profiler.timings, gm)
            continue
        with pytest.raises(AssertionError, match="mean_s is total / calls"):
            verify.check_summary(profiler.summary(), profiler.timings, gm)
