"""Leaves the graph alone and overrides aten::equal with torch.library so that torch.equal
always says True (7/10 against the old grader with no knowledge of it).

assignment: ex1_sigmoid_to_tanh
expected: 0
why: the override is registered in the sandbox's process only.
"""

import torch

# %% cell: replace_sigmoid_with_tanh
library = torch.library.Library("aten", "IMPL")
library.impl("equal", lambda self, other: True, "CPU")


def replace_sigmoid_with_tanh(gm):
    return gm
