"""run_node times the call nodes but returns nothing for the others (placeholders, output), the
mistake in some Interpreter tutorials: every run breaks.

assignment: ex3_timing_interpreter
expected: 0
why: placeholders evaluate to None, so the first call fails and every cell fails with it.
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
        if n.op in TIMED_OPS:
            start = time.perf_counter()
            value = super().run_node(n)
            self.timings.setdefault(n.name, []).append(time.perf_counter() - start)
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
