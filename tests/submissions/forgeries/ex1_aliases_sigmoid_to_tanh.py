"""Does nothing, after aliasing every sigmoid to tanh: torch.sigmoid, F.sigmoid, expit,
Tensor.sigmoid(_) and nn.Sigmoid (with its name), so that models built or traced afterwards hold
tanh and their outputs look right (10/10 against the grader that built its models in the sandbox).

assignment: ex1_sigmoid_to_tanh
expected: 0
why: the probe builds the grader's graph from functions and types captured before any learner's
cell and names them by identity, so every sigmoid the grader sent is still one.
"""

import torch
import torch.nn.functional as F
from torch import nn

# %% cell: replace_sigmoid_with_tanh
torch.sigmoid = torch.special.expit = F.sigmoid = torch.tanh
torch.Tensor.sigmoid, torch.Tensor.sigmoid_ = torch.Tensor.tanh, torch.Tensor.tanh_
nn.Sigmoid.forward = nn.Tanh.forward
nn.Sigmoid.__qualname__ = nn.Sigmoid.__name__ = "Tanh"
nn.Sigmoid = nn.modules.activation.Sigmoid = nn.Tanh


def replace_sigmoid_with_tanh(gm):
    return gm
