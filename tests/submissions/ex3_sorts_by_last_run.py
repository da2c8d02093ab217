"""Sorts the summary by each node's time in the last run, not its total over all runs.

assignment: ex3_timing_interpreter
expected: 7
why: only the summary cell (3) fails: its hidden graph holds nodes whose last-run order differs
from their total order (red team redC: the visible cell passed this in 4 runs of 6).
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
        self.timings.setdefault(n.name, []).append(time.perf_counter() - start)
        return value

    def summary(self) -> list[dict]:
        nodes = {node.name: node for node in self.graph.nodes}
        totals = {name: sum(times) for name, times in self.timings.items()}
        grand_total = sum(totals.values())
        rows = []
        last_run = {name: times[-1] for name, times in self.timings.items()}
        for name in sorted(totals, key=last_run.get, reverse=True):
            calls = len(self.timings[name])
            rows.append(
                {
                    "name": name,
                    "op": nodes[name].op,
                    "target": target_text(nodes[name]),
                    "calls": calls,
                    "mean_s": totals[name] / calls,
                    "percent": 100.0 * totals[name] / grand_total,
                }
            )
        return rows
