"""Leaves the graph alone and replaces torch's comparisons and Tensor.__eq__.

assignment: ex1_sigmoid_to_tanh
expected: 0
why: the checks run in the grader's process, with the real torch.
"""

import torch

# %% cell: replace_sigmoid_with_tanh
torch.equal = lambda *args, **kwargs: True
torch.allclose = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)


def replace_sigmoid_with_tanh(gm):
    return gm
