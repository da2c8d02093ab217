"""Exercise 3's probe: rebuild each model the grader sent (a graph description, weights and
inputs), run the learner's TimingInterpreter on it as many times as the grader asks, and return
its outputs, timings and summary rows as data. It runs beside the learner's code and holds no
models or expected values: those are made and judged in checks.py. Its graphs' nodes of known
cost, `nap` and `Sleepy`, are defined here, where both sides find them.
"""

import copy
import operator
import time

import torch
import torch.nn as nn

from grader.safegrade.graph_data import Vocabulary, linear_arguments
from grader.safegrade.probing import learner


def nap(x, seconds: float):
    """x, after sleeping `seconds`: a function node whose cost the grader knows."""
    time.sleep(seconds)
    return x


class Sleepy(nn.Module):
    """Sleeps naps[i] seconds on its i-th call (the last nap repeats), then returns its input."""

    def __init__(self, *naps: float):
        super().__init__()
        self.naps, self.calls = tuple(float(n) for n in naps), 0

    def forward(self, x):
        nap(x, self.naps[min(self.calls, len(self.naps) - 1)])
        self.calls += 1
        return x


# What this exercise's graphs may use, on both sides (checks.py reads it from here). Made when
# this file runs: in the sandbox, before any learner's cell.
GRAPHS = Vocabulary(
    functions=(nap, torch.relu, torch.tanh, operator.add, operator.mul),
    methods=("relu", "sum"),
    modules={nn.Linear: linear_arguments, nn.ReLU: None, Sleepy: lambda module: module.naps},
    local=(nap, Sleepy),
)


def profile(namespace: dict, case: dict) -> dict:
    """A new TimingInterpreter on the case's graph: its timings before, the outputs of its runs,
    its timings after (and its summary, and a second interpreter's timings, when asked)."""
    gm = GRAPHS.build(case["graph"], codegen=True)
    interpreter = learner(namespace, "TimingInterpreter")
    profiler = interpreter(gm)
    found = {"before": copy.deepcopy(profiler.timings)}
    found["outputs"] = [profiler.run(*case["inputs"]) for _ in range(case["runs"])]
    found["timings"] = profiler.timings
    if case.get("summary"):
        found["rows"] = profiler.summary()
    if case.get("fresh"):
        found["fresh"] = interpreter(gm).timings
    return found


def profile_all(namespace: dict, inputs: dict) -> dict:
    return {name: profile(namespace, case) for name, case in inputs.items()}


test_run_output = test_timed_nodes = test_repeated_runs = test_summary = profile_all
