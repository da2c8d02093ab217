"""Times nothing: run() calls the module, and every call node gets an invented 0.1 s per run
(longer than any of the hidden nodes' sleeps), with a summary that agrees.

assignment: ex3_timing_interpreter
expected: 0
why: the nodes that do not sleep are timed far shorter than the shortest sleep, so one invented
time for every node fails every test.
"""

import torch

TIMED_OPS = ("call_function", "call_method", "call_module")


def target_text(node):  # provided by the notebook's setup cell
    raise NotImplementedError


# %% cell: timing_interpreter
class TimingInterpreter(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule):
        super().__init__(gm)
        self.timings = {}

    def run(self, *args):
        for node in self.graph.nodes:
            if node.op in TIMED_OPS:
                self.timings.setdefault(node.name, []).append(0.1)
        return self.module(*args)

    def summary(self) -> list[dict]:
        nodes = {node.name: node for node in self.graph.nodes}
        total = sum(sum(times) for times in self.timings.values())
        return [
            {
                "name": name,
                "op": nodes[name].op,
                "target": target_text(nodes[name]),
                "calls": len(times),
                "mean_s": sum(times) / len(times),
                "percent": 100 * sum(times) / total,
            }
            for name, times in self.timings.items()
        ]
