"""Replaces the sandbox's encoder so that every probe sends a tensor of shape [0, 2**62, 2**62]
(no bytes, but an impossible shape), which once made the whole notebook "could not grade".

assignment: ex1_sigmoid_to_tanh
expected: 0
why: the decoder refuses the shape: each test fails with a DataError, the notebook is graded.
"""

# %% cell: replace_sigmoid_with_tanh
import sys

huge = {"tensor": {"dtype": "float32", "shape": [0, 2**62, 2**62], "data": ""}}
for module in list(sys.modules.values()):
    if getattr(module, "__name__", "").endswith("safegrade.worker"):
        module.encode = lambda value: huge


def replace_sigmoid_with_tanh(gm):
    return gm
