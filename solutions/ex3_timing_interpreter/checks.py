"""Exercise 3's inputs and checks, on the trusted side only (never in the sandbox, never
released). `inputs` makes the test models from the submission's seed: weights, inputs, and
function nodes that sleep for known, seed-chosen times among cheap ones. The checks recompute
each model's output here, and ask what an honest timing Interpreter must show: every call node
of the graph sent timed, each sleeping node at least as long as it slept and ranked by it. Every
check asks for the sleeping nodes' times, so invented timings fail every test. Each check covers
its test cell's visible asserts too.
"""

import math

import torch
import torch.fx
import torch.nn as nn

from grader.safegrade.graphs import Sleepy, build, describe, nap

TIMED_OPS = ("call_function", "call_method", "call_module")


class Net(nn.Module):
    """Cheap nodes, and two function nodes that sleep `naps` seconds."""

    def __init__(self, naps):
        super().__init__()
        self.lin, self.naps = nn.Linear(8, 8), naps
        self.register_buffer("bias", torch.ones(8))

    def forward(self, x):
        h = nap(torch.relu(self.lin(x)), self.naps[0]) + self.bias
        return nap(h, self.naps[1]).sum(dim=1)


class NapNet(nn.Module):
    """lin -> relu -> nap (a Sleepy module) -> tanh."""

    def __init__(self, *naps: float):
        super().__init__()
        self.lin, self.nap = nn.Linear(8, 8), Sleepy(*naps)

    def forward(self, x):
        return torch.tanh(self.nap(torch.relu(self.lin(x))))


class Outputs(nn.Module):
    """Returns a dict holding a tuple holding a list."""

    def forward(self, x):
        n = x.shape[0]
        return {"head": x[:, :n].relu(), "rest": (x.sum(dim=1), [x * 2])}


class TwoInputs(nn.Module):
    """Two inputs, a get_attr node, getattr/getitem calls and a nested module."""

    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(8, 8), nn.Sequential(nn.ReLU()))
        self.register_buffer("scale", torch.full((8,), 2.0))

    def forward(self, x, y):
        h = self.block(x) * self.scale
        return h[: y.shape[0]] + y


class Tracer(torch.fx.Tracer):
    """Keeps `nap` calls as function nodes and Sleepy modules as module nodes."""

    def __init__(self):
        super().__init__(autowrap_functions=(nap,))

    def is_leaf_module(self, module, qualified_name):
        return isinstance(module, Sleepy) or super().is_leaf_module(module, qualified_name)


def traced(model: nn.Module, generator: torch.Generator) -> dict:
    with torch.no_grad():
        for tensor in model.state_dict().values():
            tensor.copy_(torch.randn(tensor.shape, generator=generator))
    return describe(torch.fx.GraphModule(model, Tracer().trace(model)), state=True)


def naps(seed: int) -> tuple[float, float]:
    """The sleeping nodes' times: a short one, and a long one at least 30 ms longer."""
    return 0.01 * (1 + seed % 3), 0.06 + 0.01 * (seed // 3 % 4)


def inputs(grade_id: str, seed: int) -> dict:
    generator = torch.Generator().manual_seed(seed)
    sample = lambda rows=4: torch.randn(rows, 8, generator=generator)  # noqa: E731
    net = {"graph": traced(Net(naps(seed)), generator), "inputs": [sample()]}
    runs = {"test_run_output": 1, "test_timed_nodes": 1, "test_repeated_runs": 3}
    cases = {"net": net | {"runs": runs.get(grade_id, 2), "summary": grade_id == "test_summary"}}
    if grade_id == "test_run_output":
        cases["outputs"] = {"graph": traced(Outputs(), generator), "inputs": [sample()], "runs": 2}
    elif grade_id == "test_timed_nodes":
        graph = traced(TwoInputs(), generator)
        cases["two_inputs"] = {"graph": graph, "inputs": [sample(), sample(3)], "runs": 1}
    elif grade_id == "test_repeated_runs":
        graph = traced(NapNet(0.0, 0.1, 0.0), generator)
        cases["slow_second"] = {"graph": graph, "inputs": [sample()], "runs": 3, "fresh": True}
    else:
        graph = traced(NapNet(0.05), generator)
        cases["napping"] = {"graph": graph, "inputs": [sample()], "runs": 2, "summary": True}
    return cases


def target_text(node: torch.fx.Node) -> str:
    """The target as `print(gm.graph)` shows it after `target=` (the notebook's setup cell)."""
    if isinstance(node.target, str):
        return node.target
    module = {"_operator": "operator"}.get(node.target.__module__, node.target.__module__)
    return f"{module}.{node.target.__name__}"


def timed_nodes(graph: dict) -> dict[str, torch.fx.Node]:
    return {n.name: n for n in build(graph).graph.nodes if n.op in TIMED_OPS}


def slept(graph: dict) -> dict[str, float]:
    """The function nodes that sleep, and for how long."""
    nodes = timed_nodes(graph).values()
    return {n.name: n.args[1] for n in nodes if n.op == "call_function" and n.target is nap}


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


def test_run_output(data, cases):
    before = data["net"]["before"]
    assert before == {}, f"timings should start empty, not {before}"
    check_slept(data["net"]["timings"], cases["net"])
    for name, case in cases.items():
        with torch.no_grad():
            want = build(case["graph"])(*case["inputs"])
        got = data[name]["outputs"]
        assert len(got) == case["runs"] and all(close(want, output) for output in got), (
            "run(x) must return what the module returns"
            + (" (a dict/tuple/list output differs)" if name == "outputs" else "")
        )


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
    return None


def check_timed(timings, case: dict, calls: int) -> None:
    """One time per run for each call node of the graph, each sleeping node at least its nap."""
    want = sorted(timed_nodes(case["graph"]))
    assert isinstance(timings, dict), f"timings is a dict, not {type(timings).__name__}"
    assert sorted(timings, key=str) == want, f"the timed nodes are {want}, not {sorted(timings)}"
    for name, times in timings.items():
        problem = times_problem(name, times, calls)
        assert problem is None, problem
    check_slept(timings, case)


def check_slept(timings, case: dict) -> None:
    """Each node that sleeps (a function node) is timed at least as long as it sleeps."""
    for name, seconds in slept(case["graph"]).items():
        times = timings.get(name) if isinstance(timings, dict) else None
        ok = isinstance(times, list) and times and all(is_seconds(t) for t in times)
        assert ok and min(times) >= seconds * 0.99, (
            f"{name} (a function node) sleeps {seconds} s in every run, but its times are "
            f"{times}: time the whole of super().run_node(n), function nodes too"
        )


def test_timed_nodes(data, cases):
    for name, case in cases.items():
        check_timed(data[name]["timings"], case, 1)


def test_repeated_runs(data, cases):
    timings = data["net"]["timings"]
    assert isinstance(timings, dict), f"timings is a dict, not {type(timings).__name__}"
    for name in timed_nodes(cases["net"]["graph"]):
        times = timings.get(name)
        ok = isinstance(times, list) and len(times) == 3
        assert ok, f"{name}: want 3 times after 3 runs, got {times}"
    check_slept(timings, cases["net"])
    naps = data["slow_second"]["timings"].get("nap")
    assert isinstance(naps, list) and len(naps) == 3, f"nap: want 3 times, got {naps}"
    first, second, third = naps
    assert second > max(first, third) + 0.05, f"times out of run order: {naps}"
    assert data["slow_second"]["fresh"] == {}, "a new interpreter must start empty"


def check_summary(rows, timings: dict, graph: dict) -> list:
    """rows (summary()) has one well-formed row per timed node, slowest first."""
    nodes = {node.name: node for node in build(graph).graph.nodes}
    assert isinstance(rows, list), f"summary() returns a list, not {type(rows).__name__}"
    names = [row.get("name") if isinstance(row, dict) else row for row in rows]
    assert sorted(names, key=str) == sorted(timings, key=str), "one row per timed node"
    totals = [sum(timings[row["name"]]) for row in rows]
    for row, total in zip(rows, totals, strict=True):
        keys = {"name", "op", "target", "calls", "mean_s", "percent"}
        assert isinstance(row, dict) and set(row) == keys, f"keys must be {sorted(keys)}: {row}"
        node, calls = nodes[row["name"]], len(timings[row["name"]])
        assert (row["op"], row["target"]) == (node.op, target_text(node)), f"op/target: {row}"
        assert row["calls"] == calls, f"{row['name']}: calls should be {calls}"
        assert math.isclose(row["mean_s"], total / calls), f"{row['name']}: mean_s is total / calls"
        share = 100 * total / sum(totals)
        assert math.isclose(row["percent"], share), f"{row['name']}: percent should be {share:.3f}"
    assert totals == sorted(totals, reverse=True), "rows go by total time, slowest first"
    return rows


def test_summary(data, cases):
    for name, case in cases.items():
        check_slept(data[name]["timings"], case)
        rows = check_summary(data[name]["rows"], data[name]["timings"], case["graph"])
        naps = slept(case["graph"]) or {"nap": 0.05}
        slowest = max(naps, key=naps.get)
        top = rows[0]
        assert top["name"] == slowest, f"{slowest} sleeps longest and comes first, not {top}"
        assert top["mean_s"] >= 0.99 * naps[slowest], f"{slowest} sleeps longer than {top}"
