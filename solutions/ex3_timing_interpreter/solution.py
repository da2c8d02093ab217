# Generated from solutions/ex3_timing_interpreter/ex3_timing_interpreter.ipynb by `make chapters`;
# course maintainers: edit that file, not this one.
"""The reference solution of ex3_timing_interpreter: its notebook's solution cells."""

import time

import torch
import torch.fx

from grader.safegrade.probing import sibling

verify = sibling(__file__, "verify")
TIMED_OPS, target_text = verify.TIMED_OPS, verify.target_text


class TimingInterpreter(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule):
        super().__init__(gm)
        self.timings: dict[str, list[float]] = {}

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
        ### END SOLUTION
