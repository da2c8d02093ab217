"""Stores each node's latest time only: timings[name] = [seconds] overwrites earlier runs.

assignment: ex3_timing_interpreter
expected: 5
why: the repeated-runs cell (2) fails, and the summary cell (3): its hidden graph holds modules
that sleep a different time in each run, so the last run's order is not the total's; a single
run looks right.
"""

import time

import torch

TIMED_OPS = ("call_function", "call_method", "call_module")


def target_text(node):  # provided by the notebook's setup cell
    raise NotImplementedError


# %% cell: timing_interpreter
class TimingInterpreter(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule):
        super().__init__(gm)
        self.timings = {}

    def run_node(self, n: torch.fx.Node):
        if n.op not in TIMED_OPS:
            return super().run_node(n)
        start = time.perf_counter()
        value = super().run_node(n)
        self.timings[n.name] = [time.perf_counter() - start]
        return value

    def summary(self) -> list[dict]:
        nodes = {node.name: node for node in self.graph.nodes}
        totals = {name: sum(times) for name, times in self.timings.items()}
        grand_total = sum(totals.values())
        rows = []
        for name in sorted(totals, key=totals.get, reverse=True):
            calls = len(self.timings[name])
            rows.append(
                {
                    "name": name,
                    "op": nodes[name].op,
                    "target": target_text(nodes[name]),
                    "calls": calls,
                    "mean_s": totals[name] / calls,
                    "percent": 100 * totals[name] / grand_total,
                }
            )
        return rows
