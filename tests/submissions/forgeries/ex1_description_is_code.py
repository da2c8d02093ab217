"""Does nothing, but returns each graph with its description turned into Python source: a
placeholder named "x, z=<code>", a placeholder default whose repr is code, a module path that
closes torch.fx's getattr("...") and adds lines. Once the trusted side rebuilt such a graph with
torch.fx, which generates code from it and runs that code in the grading process.

assignment: ex1_sigmoid_to_tanh
expected: 0
why: the builder takes names, paths and constants only from a strict grammar (identifiers, dotted
paths without underscores, plain literals), so each description is refused as data; and it runs in
a check process of this submission's own, which holds nothing worth taking.
"""

# %% cell: replace_sigmoid_with_tanh
import torch.nn as nn

CODE = "__import__('pathlib').Path('/tmp/description-ran-as-code').touch()"


class Code:
    def __repr__(self):
        return CODE


def replace_sigmoid_with_tanh(gm):
    nodes = list(gm.graph.nodes)
    nodes[0].target = f"x, z={CODE}"
    nodes[0].args = (Code(),)
    for node in nodes:
        if node.op == "call_module":
            node.target = f'lin")\n    {CODE}\n    ("'
    gm.get_submodule = lambda path: nn.Tanh()  # what describe() asks of the returned module
    return gm
