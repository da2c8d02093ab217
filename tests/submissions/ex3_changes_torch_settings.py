"""The reference answer, with torch's global settings changed in a cell of the learner's own
above it: float64 as the default dtype, two threads, gradients off.

assignment: ex3_timing_interpreter
expected: 10
why: the probe and the checks work under torch's defaults and restore the learner's settings;
plain nbgrader, where the visible tests run under the changed settings, gives the same.
"""

import torch

# %% before: timing_interpreter
torch.set_default_dtype(torch.float64)
torch.set_num_threads(2)
torch.set_grad_enabled(False)
