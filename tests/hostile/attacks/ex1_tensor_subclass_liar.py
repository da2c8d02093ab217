"""Returns a wrapper module whose outputs are a tensor subclass that claims to equal anything.

assignment: ex1_sigmoid_to_tanh
expected: 0
why: the wrapper is not a GraphModule, and tensors leave the sandbox as plain bytes.
"""

import torch


# %% cell: replace_sigmoid_with_tanh
class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.equal, torch.allclose):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


class Wrapper(torch.nn.Module):
    def __init__(self, gm):
        super().__init__()
        self.gm, self.graph, self.code = gm, gm.graph, gm.code

    def forward(self, x):
        return self.gm(x).as_subclass(Liar)

    def __eq__(self, other):
        return True


def replace_sigmoid_with_tanh(gm):
    return Wrapper(gm)
