"""A learner who keeps the tables and a helper in a cell of their own above the answer, and a
first draft in a copy of the answer cell above the final version.

assignment: ex1_sigmoid_to_tanh
expected: 10
why: every cell runs in order, as nbgrader runs them: the helper cell has run when the answer
runs, and the final version, below the draft, is the one defined last.
"""

import torch
import torch.nn.functional as F
from torch import nn

# %% before: replace_sigmoid_with_tanh
FUNCTIONS = {torch.sigmoid: torch.tanh, F.sigmoid: torch.tanh, torch.special.expit: torch.tanh}
METHODS = {"sigmoid": "tanh", "sigmoid_": "tanh_"}


def swap_submodule(gm, path: str) -> None:
    parent, _, name = path.rpartition(".")
    setattr(gm.get_submodule(parent), name, nn.Tanh())


# %% draft: replace_sigmoid_with_tanh
def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    return gm  # first try: only looked at the graph


# %% cell: replace_sigmoid_with_tanh
def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:  # noqa: F811
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in FUNCTIONS:
            node.target = FUNCTIONS[node.target]
        elif node.op == "call_method" and node.target in METHODS:
            node.target = METHODS[node.target]
        elif node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Sigmoid):
            swap_submodule(gm, node.target)
    gm.graph.lint()
    gm.recompile()
    return gm
