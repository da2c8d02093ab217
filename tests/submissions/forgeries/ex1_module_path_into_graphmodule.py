"""Does nothing, but names a call_module node's module "__class__.__base__.__call__": once the
trusted side's builder set that path on what it found, torch.fx.GraphModule itself, and honest
classmates graded after it in the same batch lost points.

assignment: ex1_sigmoid_to_tanh
expected: 0
why: a module path is dotted identifiers without a leading underscore, naming nothing a
GraphModule already has, put only into containers the builder made; and the builder runs in this
submission's own check process, so nothing it does reaches the next submission.
"""

# %% cell: replace_sigmoid_with_tanh
import torch.nn as nn


def replace_sigmoid_with_tanh(gm):
    for node in gm.graph.nodes:
        if node.op == "call_module":
            node.target = "__class__.__base__.__call__"
    gm.get_submodule = lambda path: nn.Tanh()
    return gm
