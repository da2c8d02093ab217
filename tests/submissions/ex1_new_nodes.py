"""A different correct answer: insert new tanh nodes, reroute the users, erase the sigmoids.

assignment: ex1_sigmoid_to_tanh
expected: 10
why: nothing in the tests depends on editing nodes in place or on node names.
"""

import torch
import torch.nn.functional as F
from torch import nn

# %% cell: replace_sigmoid_with_tanh
SIGMOIDS = {
    ("call_function", torch.sigmoid),
    ("call_function", F.sigmoid),
    ("call_function", torch.special.expit),
    ("call_method", "sigmoid"),
}


def is_sigmoid_module(gm, node):
    return node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Sigmoid)


def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    graph = gm.graph
    for node in list(graph.nodes):
        with graph.inserting_after(node):
            if (node.op, node.target) in SIGMOIDS or is_sigmoid_module(gm, node):
                new = graph.call_function(torch.tanh, node.args, node.kwargs)
            elif (node.op, node.target) == ("call_method", "sigmoid_"):
                new = graph.call_method("tanh_", node.args, node.kwargs)
            else:
                continue
        node.replace_all_uses_with(new)
        graph.erase_node(node)
    graph.lint()
    gm.recompile()
    return gm
