# Generated from solutions/ex3_timing_interpreter/verify.py by `make release`; course maintainers:
# edit that file, not this one.
"""The checks of Exercise 3's test cells. The cells call them on `net`; the grader calls the very
same functions on what your TimingInterpreter did with its own hidden models. Each raises an
AssertionError that says what to fix. The notebook's setup cell imports TIMED_OPS and target_text.
"""

import math
import time

import torch
import torch.fx
import torch.nn as nn

TIMED_OPS = ("call_function", "call_method", "call_module")
MOST_SECONDS = 60  # no node of the tests' small models takes a minute
NAP_SECONDS = 0.02  # how long `nap` sleeps


def target_text(node: torch.fx.Node) -> str:
    """The target as `print(gm.graph)` shows it after `target=` (Exercise 2's rule)."""
    if isinstance(node.target, str):
        return node.target
    module = {"_operator": "operator"}.get(node.target.__module__, node.target.__module__)
    return f"{module}.{node.target.__name__}"


def close(a, b) -> bool:
    """Equal outputs, tensors within their dtype's tolerance, containers item by item."""
    if isinstance(a, torch.Tensor):
        if not (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype):
            return False
        return a.dtype == torch.bool or torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    for kind in (tuple, list):
        if isinstance(a, kind):
            return isinstance(b, kind) and len(a) == len(b) and all(map(close, a, b))
    return a == b


def check_starts_empty(timings) -> None:
    """timings: a new TimingInterpreter's, before any run."""
    assert timings == {}, f"a new TimingInterpreter's timings should be empty, not {timings}"


def check_outputs(outputs: list, expected, what: str) -> None:
    """outputs: what each run returned; expected: what the module returns (`what`)."""
    same = all(close(expected, output) for output in outputs)
    assert same, f"run(x) must return what {what} returns"


def timed_names(gm: torch.fx.GraphModule) -> list[str]:
    return [node.name for node in gm.graph.nodes if node.op in TIMED_OPS]


def is_seconds(value) -> bool:
    """A time a timer gives: a real number (float, NumPy's float64, int), finite, >= 0."""
    real = isinstance(value, (int, float)) and not isinstance(value, bool)
    return real and math.isfinite(value) and value >= 0


def times_problem(name: str, times, calls: int) -> str | None:
    """What is wrong with one node's list of times after `calls` runs, said as what to fix."""
    if not isinstance(times, list):
        return f"timings[{name!r}] should be a list of times, one per run, not {times!r}"
    if len(times) != calls:
        return (
            f"{name}: {len(times)} time(s) after {calls} run(s): append one time per run in "
            "run_node (and start each interpreter with empty timings)"
        )
    wrong = [t for t in times if not is_seconds(t)]
    if wrong:
        return (
            f"{name}: each time is the seconds a node took (time.perf_counter() after minus "
            f"before, >= 0), not {wrong[0]!r}"
        )
    slow = [t for t in times if t > MOST_SECONDS]
    if slow:
        return (
            f"{name}: {slow[0]!r} for one node of a small model: is that seconds "
            "(time.perf_counter()), or nanoseconds (time.perf_counter_ns())?"
        )
    return None


def check_timed(timings, gm: torch.fx.GraphModule, calls: int) -> None:
    """timings after `calls` runs on gm: one time per run for each node whose op is in
    TIMED_OPS, and no other node."""
    want = sorted(timed_names(gm))
    assert isinstance(timings, dict), f"timings is a dict, not {type(timings).__name__}"
    odd = sorted({type(key).__name__ for key in timings if not isinstance(key, str)})
    assert not odd, f"timings is keyed by {odd[0]} objects: key it by node.name, a str"
    got = sorted(timings, key=str)
    assert got == want, f"the timed nodes should be {want}, not {got}"
    for name, times in timings.items():
        problem = times_problem(name, times, calls)
        assert problem is None, problem


def check_times_per_run(timings, gm: torch.fx.GraphModule, calls: int) -> None:
    """timings after `calls` runs on gm: each node whose op is in TIMED_OPS has `calls` times."""
    assert isinstance(timings, dict), f"timings is a dict, not {type(timings).__name__}"
    for name in timed_names(gm):
        times = timings.get(name)
        ok = isinstance(times, list) and len(times) == calls
        assert ok, f"{name}: want {calls} times after {calls} runs, got {times}"


def check_summary(rows, timings: dict, gm: torch.fx.GraphModule) -> list:
    """rows (summary()) has one well-formed row per node in timings, slowest first."""
    nodes = {node.name: node for node in gm.graph.nodes}
    assert isinstance(rows, list), f"summary() returns a list, not {type(rows).__name__}"
    keys = {"name", "op", "target", "calls", "mean_s", "percent"}
    for row in rows:
        assert isinstance(row, dict), f"each row is a dict, not a {type(row).__name__}: {row}"
        assert set(row) == keys, f"a row's keys must be {sorted(keys)}, not {sorted(row, key=str)}"
    names = [row["name"] for row in rows]
    assert sorted(names, key=str) == sorted(timings, key=str), "one row per timed node"
    totals = [sum(timings[row["name"]]) for row in rows]
    for row, total in zip(rows, totals, strict=True):
        node, calls = nodes[row["name"]], len(timings[row["name"]])
        wanted = (node.op, target_text(node))
        assert (row["op"], row["target"]) == wanted, (
            f"{row['name']}: op and target should be {wanted} (target_text(node) gives the "
            f"target), not {(row['op'], row['target'])}"
        )
        whole = isinstance(row["calls"], int) and not isinstance(row["calls"], bool)
        assert whole and row["calls"] == calls, (
            f"{row['name']}: calls should be the int {calls}, not {row['calls']!r}"
        )
        for key in ("mean_s", "percent"):
            assert isinstance(row[key], float), (
                f"{row['name']}: {key} should be a float, not {type(row[key]).__name__}"
            )
        assert math.isclose(row["mean_s"], total / calls), f"{row['name']}: mean_s is total / calls"
        share = 100 * total / sum(totals)
        assert math.isclose(row["percent"], share), (
            f"{row['name']}: percent is {row['percent']!r}; 100 * its total / the sum of all "
            f"totals is {share!r} (unrounded)"
        )
    assert totals == sorted(totals, reverse=True), "rows go by total time, slowest first"
    return rows


def nap(x):
    """x, after sleeping NAP_SECONDS: a node whose wall time is known, and which spends almost
    no CPU time."""
    time.sleep(NAP_SECONDS)
    return x


torch.fx.wrap("nap")  # traced as a call_function node, which sleeps when it runs


class Napping(nn.Module):
    """relu, then nap: a model of one node that sleeps."""

    def forward(self, x):
        return nap(torch.relu(x))


def check_wall_seconds(timings) -> None:
    """timings after a run of Napping, traced: nap's time is the seconds it slept, a bit more."""
    times = timings.get("nap") if isinstance(timings, dict) else None
    assert isinstance(times, list) and times, f"timings['nap'] should be a list of times: {times}"
    short = [t for t in times if is_seconds(t) and t < NAP_SECONDS]
    assert not short, (
        f"nap sleeps {NAP_SECONDS} s, yet its time is {short[0]!r}: is that the wall time "
        "(time.perf_counter()), or CPU time (time.process_time()), which a sleep does not spend?"
    )
    long = [t for t in times if is_seconds(t) and t > 1]
    assert not long, (
        f"nap sleeps {NAP_SECONDS} s, yet its time is {long[0]!r}: is that seconds, or "
        "milliseconds?"
    )


try:
    from fxcourse.results import record_cells
except (ImportError, OSError):
    pass
else:
    record_cells()
