"""Exercise 3's probe: rebuild each model the grader sent (a graph description, weights and
inputs), run the learner's TimingInterpreter on it as many times as the grader asks, and return
its outputs, timings and summary rows as data. It runs beside the learner's code and holds no
models or expected values: those are made and judged in checks.py.
"""

import copy

from grader.safegrade.graphs import build
from grader.safegrade.probing import learner


def profile(namespace: dict, case: dict) -> dict:
    """A new TimingInterpreter on the case's graph: its timings before, the outputs of its runs,
    its timings after (and its summary, and a second interpreter's timings, when asked)."""
    gm = build(case["graph"], codegen=True)
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
