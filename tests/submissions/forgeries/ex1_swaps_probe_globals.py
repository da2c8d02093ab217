"""Does nothing, after walking the garbage collector to the probes' tables: the function the
grader's "torch.sigmoid" is built from becomes torch.tanh, and tanh is named "torch.sigmoid".

assignment: ex1_sigmoid_to_tanh
expected: 0
why: the graph the sandbox says it received must be the one the grader sent, and every output is
recomputed on the trusted side from the returned graph: either way a sigmoid is left.
"""

# %% cell: replace_sigmoid_with_tanh
import gc

import torch

for table in [o for o in gc.get_objects() if type(o) is dict]:
    if "torch.sigmoid" in table and "torch.tanh" in table:
        table["torch.sigmoid"] = table["torch.special.expit"] = torch.tanh
    if id(torch.tanh) in table and id(torch.sigmoid) in table:
        table[id(torch.tanh)] = "torch.sigmoid"


def replace_sigmoid_with_tanh(gm):
    return gm
