"""Replaces the sandbox runner's own functions (the encoder of the probes' data) from the answer
cell, so that every probe sends an object that compares equal to anything.

assignment: ex1_sigmoid_to_tanh
expected: 0
why: whatever the runner sends is only data to the grader; this data fails every check.
"""

# %% cell: replace_sigmoid_with_tanh
import sys

runner = sys.modules.get("grader.safegrade.worker")
if runner is not None:
    runner.encode = lambda value: {"other": {"type": "Anything", "repr": "anything"}}


def replace_sigmoid_with_tanh(gm):
    return gm
