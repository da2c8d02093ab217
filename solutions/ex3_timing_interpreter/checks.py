"""Exercise 3's checks: judge the data probes.py returned. Expected outputs and the models' nodes
are computed here. Each check covers its test cell's visible asserts too.
"""

import math

import torch
import torch.fx

from grader.safegrade.probing import sibling

probes = sibling(__file__, "probes")


def timed_names(gm: torch.fx.GraphModule) -> list[str]:
    return [node.name for node in gm.graph.nodes if node.op in probes.TIMED_OPS]


def same(a, b) -> bool:
    """Equal outputs: tensors by torch.equal, tuples, lists and dicts item by item."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    for kind in (tuple, list):
        if isinstance(a, kind):
            return isinstance(b, kind) and len(a) == len(b) and all(map(same, a, b))
    return a == b


def test_run_output(data):
    net, before = probes.Net(), data["net"]["before"]
    assert before == {}, f"timings should start empty, not {before}"
    with torch.no_grad():
        want = net(probes.sample())
    assert same(want, data["net"]["outputs"][0]), "run(x) must return what net(x) returns"
    want = probes.Outputs()(probes.sample())
    assert all(same(want, got) for got in data["outputs"]), "a dict/tuple/list output differs"


def test_timed_nodes(data):
    want = sorted(timed_names(torch.fx.symbolic_trace(probes.Net())))
    timings = data["net"]
    assert isinstance(timings, dict), f"timings is a dict, not {type(timings).__name__}"
    assert sorted(timings) == want, f"the timed nodes are {want}, not {sorted(timings)}"
    for name, times in timings.items():
        ok = isinstance(times, list) and len(times) == 1 and times[0] >= 0
        assert ok, f"{name}: want one time >= 0, got {times}"
    want = sorted(timed_names(torch.fx.symbolic_trace(probes.TwoInputs())))
    two = data["two_inputs"]
    assert sorted(two) == want, f"want {want}, got {sorted(two)}"
    assert all(type(t) is float for times in two.values() for t in times), "floats"


def test_repeated_runs(data):
    for name in timed_names(torch.fx.symbolic_trace(probes.Net())):
        times = data["net"].get(name)
        ok = isinstance(times, list) and len(times) == 3
        assert ok, f"{name}: want 3 times after 3 runs, got {times}"
    naps = data["slow_second"].get("nap")
    assert isinstance(naps, list) and len(naps) == 3, f"nap: want 3 times, got {naps}"
    first, second, third = naps
    assert second > max(first, third) + 0.05, f"times out of run order: {naps}"
    assert data["fresh"] == {}, "a new interpreter must start empty"


def check_summary(rows, timings: dict, gm: torch.fx.GraphModule) -> list:
    """rows (summary()) has one well-formed row per timed node, slowest first."""
    nodes = {node.name: node for node in gm.graph.nodes}
    assert isinstance(rows, list), f"summary() returns a list, not {type(rows).__name__}"
    names = [row.get("name") if isinstance(row, dict) else row for row in rows]
    assert sorted(names, key=str) == sorted(timings), "one row per timed node"
    totals = [sum(timings[row["name"]]) for row in rows]
    for row, total in zip(rows, totals, strict=True):
        keys = {"name", "op", "target", "calls", "mean_s", "percent"}
        assert isinstance(row, dict) and set(row) == keys, f"keys must be {sorted(keys)}: {row}"
        node, calls = nodes[row["name"]], len(timings[row["name"]])
        assert (row["op"], row["target"]) == (node.op, probes.target_text(node)), (
            f"op/target: {row}"
        )
        assert row["calls"] == calls, f"{row['name']}: calls should be {calls}"
        assert math.isclose(row["mean_s"], total / calls), f"{row['name']}: mean_s is total / calls"
        share = 100 * total / sum(totals)
        assert math.isclose(row["percent"], share), f"{row['name']}: percent should be {share:.3f}"
    assert totals == sorted(totals, reverse=True), "rows go by total time, slowest first"
    return rows


def test_summary(data):
    net = data["net"]
    check_summary(net["rows"], net["timings"], torch.fx.symbolic_trace(probes.Net()))
    napping = data["napping"]
    top = check_summary(napping["rows"], napping["timings"], probes.nap_net(0.05))[0]
    assert (top["name"], top["op"], top["target"]) == ("nap", "call_module", "nap"), f"first: {top}"
    assert top["mean_s"] >= 0.045 and top["percent"] > 50, f"the sleeping module's row: {top}"
