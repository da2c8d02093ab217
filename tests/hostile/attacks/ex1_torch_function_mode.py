"""Leaves the graph alone and enters a TorchFunctionMode that makes torch.equal and allclose
return True and computes every sigmoid as a tanh, so that the outputs look right.

assignment: ex1_sigmoid_to_tanh
expected: 0
why: the mode lives in the sandbox only: the checks compare tensors in the grader, and every
rewritten graph still holds its sigmoids.
"""

# %% cell: replace_sigmoid_with_tanh
import torch
from torch.overrides import TorchFunctionMode

SIGMOIDS = {torch.sigmoid, torch.Tensor.sigmoid, torch.nn.functional.sigmoid, torch.special.expit}


class Agreeable(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.equal, torch.allclose):
            return True
        return (torch.tanh if func in SIGMOIDS else func)(*args, **(kwargs or {}))


Agreeable().__enter__()


def replace_sigmoid_with_tanh(gm):
    return gm
