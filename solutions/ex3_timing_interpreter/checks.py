"""Exercise 3's inputs and checks, on the trusted side only (never in the sandbox, never
released). `inputs` makes the test models from the submission's seed: weights, inputs, and
function nodes that sleep for known, seed-chosen times among cheap ones. The checks recompute
each model's output here, and ask what an honest timing Interpreter must show: every call node
of the graph sent timed, each sleeping node about as long as it slept (at least that, at most
twice that and 0.1 s) and ranked by it, the nodes that do not sleep far shorter. Every check asks
for these times, so timings made up without reading the hidden graph fail every test. What a
test cell checks on its own example is verify.py's, called here on the rebuilt graphs and the
data that came back.
"""

import statistics

import torch
import torch.fx
import torch.nn as nn

from grader.safegrade.probing import sibling

verify = sibling(__file__, "verify")  # the instructor's copy: the checks the test cells call
probes = sibling(__file__, "probes")
GRAPHS, Sleepy, nap = probes.GRAPHS, probes.Sleepy, probes.nap  # what its graphs may use


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


class CrossingNaps(nn.Module):
    """Four Sleepy modules in a row, whose order by total time differs from their order by any
    one run's time, the longest, the shortest, the median or the midpoint of the extremes (three
    runs). The first module's mean (.147 s) is far from its median (0) and its midpoint (.22 s):
    a mean_s that is either is refused. Totals .08 s apart: three sleeps, each late by up to
    tens of milliseconds on a loaded machine, flipped a gap of .04 s (CI, session 22)."""

    SCHEDULES = ((0.44, 0.0, 0.0), (0.04, 0.16, 0.16), (0.28, 0.0, 0.0), (0.12, 0.0, 0.04))
    RUNS = 3  # totals .44 .36 .28 .16

    def __init__(self, generator: torch.Generator):
        super().__init__()
        order = torch.randperm(len(self.SCHEDULES), generator=generator).tolist()
        self.naps = nn.ModuleList(Sleepy(*self.SCHEDULES[i]) for i in order)

    def forward(self, x):
        for sleepy in self.naps:
            x = sleepy(x)
        return x.relu()


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
    return GRAPHS.describe(torch.fx.GraphModule(model, Tracer().trace(model)), state=True)


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
        graph = traced(CrossingNaps(generator), generator)
        runs = CrossingNaps.RUNS
        cases["crossing"] = {"graph": graph, "inputs": [sample()], "runs": runs, "summary": True}
    return cases


def slept(graph: dict) -> dict[str, float]:
    """The function nodes that sleep, and for how long."""
    return naps_in(GRAPHS.build(graph))


def naps_in(gm: torch.fx.GraphModule) -> dict[str, float]:
    nodes = gm.graph.nodes
    return {n.name: n.args[1] for n in nodes if n.op == "call_function" and n.target is nap}


def check_slept(timings, case: dict) -> None:
    """Each node that sleeps (a function node) is timed about as long as it sleeps, and the
    nodes that do not sleep far shorter."""
    gm = GRAPHS.build(case["graph"])
    naps = naps_in(gm)
    for name, seconds in naps.items():
        times = timings.get(name) if isinstance(timings, dict) else None
        ok = isinstance(times, list) and times and all(verify.is_seconds(t) for t in times)
        assert ok and min(times) >= seconds * 0.99, (
            f"{name} (a function node) sleeps {seconds} s in every run, but its times are "
            f"{times}: time the whole of super().run_node(n), function nodes too"
        )
        most = 2 * seconds + 0.1
        assert min(times) <= most, (
            f"{name} sleeps {seconds} s in every run, but its times are {times} (at most {most:g} "
            "here): times are in seconds, each node's from just before super().run_node(n) to "
            "just after it"
        )
    check_cheap_nodes(timings, gm, naps)


def check_cheap_nodes(timings, gm: torch.fx.GraphModule, naps: dict[str, float]) -> None:
    """The nodes that do not sleep take microseconds: their median time is far below the
    shortest nap. Times made up for every node alike fail here."""
    if not naps:
        return
    modules = dict(gm.named_modules())
    cheap = [
        node.name
        for node in gm.graph.nodes
        if node.op in verify.TIMED_OPS
        and node.name not in naps
        and not isinstance(modules.get(node.target), Sleepy)
    ]
    listed = [timings.get(name) for name in cheap]
    times = [t for got in listed if isinstance(got, list) for t in got if verify.is_seconds(t)]
    if not times:
        return  # nothing timed but the naps: the tests that ask for every node say so
    shortest, median = min(naps.values()), statistics.median(times)
    assert median < shortest / 2, (
        f"the nodes that do not sleep ({', '.join(cheap)}) took {median:.4g} s each (the "
        f"median), but such nodes take microseconds and the shortest sleep is {shortest} s: "
        "times are in seconds, each node's from just before super().run_node(n) to just after it"
    )


def check_crossing(rows: list, gm: torch.fx.GraphModule) -> None:
    """The Sleepy modules' rows come in the order of their total sleep, which differs from the
    order of any one run's time."""
    sleepy = {name: sum(m.naps) for name, m in gm.named_modules() if isinstance(m, Sleepy)}
    nodes = {n.name: n.target for n in gm.graph.nodes if n.target in sleepy}
    listed = [nodes[row["name"]] for row in rows if row["name"] in nodes]
    wanted = sorted(sleepy, key=sleepy.get, reverse=True)
    slept_in_all = ", ".join(f"{module}: {sleepy[module]:g} s" for module in wanted)
    assert listed == wanted, (
        f"four modules sleep {slept_in_all} in all, a different time in each run, and the "
        f"summary lists them {listed}: rows go by a node's total time over all runs, slowest first"
    )


OUTPUTS = {"net": "the module", "outputs": "a module returning a dict, a tuple and a list"}


def test_run_output(data, cases):
    verify.check_starts_empty(data["net"]["before"])
    check_slept(data["net"]["timings"], cases["net"])
    for name, case in cases.items():
        with torch.no_grad():
            want = GRAPHS.build(case["graph"])(*case["inputs"])
        got = data[name]["outputs"]
        assert isinstance(got, list) and len(got) == case["runs"], "one output per run"
        verify.check_outputs(got, want, OUTPUTS[name])


def test_timed_nodes(data, cases):
    for name, case in cases.items():
        verify.check_timed(data[name]["timings"], GRAPHS.build(case["graph"]), 1)
        check_slept(data[name]["timings"], case)


def test_repeated_runs(data, cases):
    timings = data["net"]["timings"]
    verify.check_times_per_run(timings, GRAPHS.build(cases["net"]["graph"]), 3)
    check_slept(timings, cases["net"])
    naps = data["slow_second"]["timings"].get("nap")
    assert isinstance(naps, list) and len(naps) == 3, f"nap: want 3 times, got {naps}"
    first, second, third = naps
    assert second > max(first, third) + 0.05, f"times out of run order: {naps}"
    verify.check_starts_empty(data["slow_second"]["fresh"])


def test_summary(data, cases):
    for name, case in cases.items():
        check_slept(data[name]["timings"], case)
        gm = GRAPHS.build(case["graph"])
        rows = verify.check_summary(data[name]["rows"], data[name]["timings"], gm)
        if name == "crossing":
            check_crossing(rows, gm)
            continue
        naps = slept(case["graph"]) or {"nap": 0.05}
        slowest = max(naps, key=naps.get)
        top = rows[0]
        assert top["name"] == slowest, f"{slowest} sleeps longest and comes first, not {top}"
        assert top["mean_s"] >= 0.99 * naps[slowest], f"{slowest} sleeps longer than {top}"
