"""summary() raises an error whose message copies the grader's own for a test the submission
never reached ("not run: the submission used up its time budget ..."), as a learner who hopes a
test marked not run is treated more kindly than one that failed.

assignment: ex3_timing_interpreter
expected: 7
why: the three cells before it pass (2 + 3 + 2); the summary test ran and failed: the grading
process records it as failed because the cell has a record, whatever its message says
(tests/test_grading.py reads the result file).
"""

# %% cell: timing_interpreter
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
        raise TimeoutError(
            "not run: the submission used up its time budget in the test test_summary"
        )
