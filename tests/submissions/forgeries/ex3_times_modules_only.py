"""Times the module nodes with forward hooks and gives every other call node 0.0 (10/10 against
the old checks, and under plain nbgrader with them).

assignment: ex3_timing_interpreter
expected: 0
why: the function nodes that sleep are timed 0.0, and every test asks for their times.
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
        if n.op != "call_module":
            self.timings.setdefault(n.name, []).append(0.0)
            return super().run_node(n)
        start = time.perf_counter()
        value = super().run_node(n)
        self.timings.setdefault(n.name, []).append(time.perf_counter() - start)
        return value

    def summary(self) -> list[dict]:
        nodes = {node.name: node for node in self.graph.nodes}
        totals = {name: sum(times) for name, times in self.timings.items()}
        grand_total = sum(totals.values()) or 1.0
        return [
            {
                "name": name,
                "op": nodes[name].op,
                "target": target_text(nodes[name]),
                "calls": len(self.timings[name]),
                "mean_s": totals[name] / len(self.timings[name]),
                "percent": 100.0 * totals[name] / grand_total,
            }
            for name in sorted(totals, key=totals.__getitem__, reverse=True)
        ]
