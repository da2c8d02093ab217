"""Takes each node's median time for mean_s: statistics.median(times).

assignment: ex3_timing_interpreter
expected: 7
why: only the summary cell (3) fails: its visible part runs `net` three times, its hidden crossing
case too, with a module sleeping .44 s, then 0, then 0 (median 0, mean .147 s). Every summary
test ran twice before, where the median of two times is their mean (red team).
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
        import statistics

        nodes = {node.name: node for node in self.graph.nodes}
        totals = {name: sum(times) for name, times in self.timings.items()}
        grand_total = sum(totals.values())
        rows = []
        for name in sorted(totals, key=totals.get, reverse=True):
            times = self.timings[name]
            rows.append(
                {
                    "name": name,
                    "op": nodes[name].op,
                    "target": target_text(nodes[name]),
                    "calls": len(times),
                    "mean_s": statistics.median(times),
                    "percent": 100.0 * totals[name] / grand_total,
                }
            )
        return rows
