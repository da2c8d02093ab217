"""A correct answer whose comment quotes nbgrader's hidden-test marker: full marks, and feedback
must still be generated for it (the marker in a learner's cell is the learner's text).

assignment: ex1_sigmoid_to_tanh
expected: 10
why: every spelling is rewritten; the quoted marker is only a comment.
"""

import torch


# %% cell: replace_sigmoid_with_tanh
def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    # Note to self: the grader keeps a "### BEGIN HIDDEN TESTS" block I cannot see.
    functions = {torch.sigmoid, torch.nn.functional.sigmoid, torch.special.expit}
    methods = {"sigmoid": "tanh", "sigmoid_": "tanh_"}
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in functions:
            node.target = torch.tanh
        elif node.op == "call_method" and node.target in methods:
            node.target = methods[node.target]
        elif node.op == "call_module":
            if type(gm.get_submodule(node.target)) is torch.nn.Sigmoid:
                parent, _, name = node.target.rpartition(".")
                setattr(gm.get_submodule(parent), name, torch.nn.Tanh())
    gm.graph.lint()
    gm.recompile()
    return gm
