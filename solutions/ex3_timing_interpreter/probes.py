"""Exercise 3's probes: run the learner's TimingInterpreter on the tests' models and return its
outputs, timings and summary rows as data. They run beside the learner's code and hold no
expected values (those are in checks.py).
"""

import copy
import time

import torch
import torch.fx
import torch.nn as nn

from grader.safegrade.probing import learner

TIMED_OPS = ("call_function", "call_method", "call_module")


def target_text(node: torch.fx.Node) -> str:
    """The target as `print(gm.graph)` shows it after `target=` (the notebook's setup cell)."""
    target = node.target
    if isinstance(target, str):
        return target
    module = {"_operator": "operator"}.get(target.__module__, target.__module__)
    return f"{module}.{target.__name__}"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(8, 8)
        self.register_buffer("bias", torch.ones(8))

    def forward(self, x):
        return (torch.relu(self.lin(x)) + self.bias).sum(dim=1)


class Sleepy(nn.Module):
    """Sleeps naps[i] seconds on its i-th call (the last nap repeats), then returns its input."""

    def __init__(self, *naps: float):
        super().__init__()
        self.naps, self.calls = naps, 0

    def forward(self, x):
        nap = self.naps[min(self.calls, len(self.naps) - 1)]
        self.calls += 1
        if nap:
            time.sleep(nap)
        return x


class NapNet(nn.Module):
    """lin -> relu -> nap (a Sleepy) -> tanh."""

    def __init__(self, *naps: float):
        super().__init__()
        torch.manual_seed(0)
        self.lin, self.nap = nn.Linear(8, 8), Sleepy(*naps)

    def forward(self, x):
        return torch.tanh(self.nap(torch.relu(self.lin(x))))


class KeepSleepy(torch.fx.Tracer):
    def is_leaf_module(self, module, qualified_name):
        return isinstance(module, Sleepy) or super().is_leaf_module(module, qualified_name)


def nap_net(*naps: float) -> torch.fx.GraphModule:
    """A traced NapNet whose `nap` stays one call_module node."""
    model = NapNet(*naps)
    return torch.fx.GraphModule(model, KeepSleepy().trace(model))


class Outputs(nn.Module):
    """Returns a dict holding a tuple holding a list."""

    def forward(self, x):
        n = x.shape[0]
        return {"head": x[:, :n].relu(), "rest": (x.sum(dim=1), [x * 2])}


class TwoInputs(nn.Module):
    """Two inputs, a get_attr node, getattr/getitem calls and a nested module."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.block = nn.Sequential(nn.Linear(8, 8), nn.Sequential(nn.ReLU()))
        self.register_buffer("scale", torch.full((8,), 2.0))

    def forward(self, x, y):
        h = self.block(x) * self.scale
        return h[: y.shape[0]] + y


def sample(rows: int = 4, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, 8, generator=torch.Generator().manual_seed(seed))


def runs(namespace: dict, gm: torch.fx.GraphModule, count: int, *inputs) -> dict:
    """A new TimingInterpreter on gm: its timings before, then `count` runs' outputs and its
    timings after (copies, taken when they are made)."""
    profiler = learner(namespace, "TimingInterpreter")(gm)
    before = copy.deepcopy(profiler.timings)
    outputs = [profiler.run(*(inputs or (sample(),))) for _ in range(count)]
    return {"before": before, "outputs": outputs, "timings": profiler.timings, "profiler": profiler}


def test_run_output(namespace):
    net = runs(namespace, torch.fx.symbolic_trace(Net()), 1)
    outputs = runs(namespace, torch.fx.symbolic_trace(Outputs()), 2)
    return {"net": {k: net[k] for k in ("before", "outputs")}, "outputs": outputs["outputs"]}


def test_timed_nodes(namespace):
    net = runs(namespace, torch.fx.symbolic_trace(Net()), 1)["timings"]
    two = runs(namespace, torch.fx.symbolic_trace(TwoInputs()), 1, sample(), sample(3, 1))
    return {"net": net, "two_inputs": two["timings"]}


def test_repeated_runs(namespace):
    net = runs(namespace, torch.fx.symbolic_trace(Net()), 3)["timings"]
    slow_second = nap_net(0.0, 0.1, 0.0)
    naps = runs(namespace, slow_second, 3)["timings"]
    fresh = learner(namespace, "TimingInterpreter")(slow_second).timings
    return {"net": net, "slow_second": naps, "fresh": fresh}


def test_summary(namespace):
    found = {}
    for name, gm in (("net", torch.fx.symbolic_trace(Net())), ("napping", nap_net(0.05))):
        done = runs(namespace, gm, 2)
        found[name] = {"rows": done["profiler"].summary(), "timings": done["timings"]}
    return found
