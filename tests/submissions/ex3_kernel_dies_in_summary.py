"""A stray os._exit() left in summary(): the kernel dies in the summary test cell.

assignment: ex3_timing_interpreter
expected: 7
why: the three cells before the crash pass (2 + 3 + 2); the summary cell and every later cell
fail, and the notebook is still graded.
"""

# %% cell: timing_interpreter
import os
import time

import torch

TIMED_OPS = ("call_function", "call_method", "call_module")


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
        os._exit(1)
