"""Exercise 2's inputs and checks, on the trusted side only (never in the sandbox, never
released). `inputs` makes the test graphs from the submission's seed and sends them as
descriptions; each check works out here what the learner's code should have made of them and
hands both to the test cell's own function in verify.py (the instructor's copy), so the hidden
tests and the visible ones are the same code, with the same messages.
"""

import torch
import torch.fx
import torch.nn as nn

from grader.safegrade.data import DataError
from grader.safegrade.probing import sibling

verify = sibling(__file__, "verify")
SOLUTION = sibling(__file__, "solution")  # the notebook's solution cells (by `make chapters`)
merged = SOLUTION.merge  # the later of two equal nodes erased, its users reading the earlier
GRAPHS = sibling(__file__, "probes").GRAPHS  # what this exercise's graphs may use
Example = verify.Example  # the test cells' example; here with a constant drawn from the seed
ACTIVATIONS = (nn.ReLU, nn.Tanh, nn.Sigmoid)


class Rich(nn.Module):
    """Every node kind, kwargs, nested arguments, a slice holding a node, a dict output, a
    nested module path and tensor path, and two equal expits whose users come in the other
    order."""

    def __init__(self, seed: int):
        super().__init__()
        width, activation = 2 + seed % 5, ACTIVATIONS[seed % 3]
        self.block = nn.Sequential(nn.Linear(width, width), activation())
        self.register_buffer(
            "offset", torch.ones(width, dtype=(torch.float32, torch.float64)[seed % 2])
        )
        self.extra = nn.Module()
        self.extra.register_buffer("gain", torch.ones(1 + seed % 3, width))
        self.alpha = 2 + seed % 4

    def forward(self, x, y):
        h = self.block(x) + self.offset
        n = h.shape[0]
        z = torch.add(h, other=y, alpha=self.alpha)
        s, t = torch.special.expit(h), torch.special.expit(h)
        both = torch.cat([z, t * self.extra.gain], dim=-1)
        return {
            "out": both[:, :n].to(dtype=torch.float64),
            "sum": (z.sum(dim=1, keepdim=True), n),
            "s": s,
        }


def edited(constant) -> torch.fx.GraphModule:
    """Example with a node inserted before `lin` that also reads x: x's users were added in
    the order lin, add_1, neg, but the graph order is neg, lin, add_1."""
    gm = torch.fx.symbolic_trace(Example(constant))
    by_name = {node.name: node for node in gm.graph.nodes}
    with gm.graph.inserting_before(by_name["lin"]):
        neg = gm.graph.call_function(torch.neg, (by_name["x"],))
    by_name["cat"].update_arg(0, [by_name["relu"], neg, by_name["relu_1"]])
    return gm


def renamed(constant) -> torch.fx.GraphModule:
    """Example with its two equal relus renamed, so that the earlier one's name is the longer
    and sorts after the later one's: the first node is the graph's first, not the name's."""
    gm = torch.fx.symbolic_trace(Example(constant))
    by_name = {node.name: node for node in gm.graph.nodes}
    by_name["relu"]._rename("relu_in_full")  # private Node method, as a pass's rename uses
    by_name["relu_1"]._rename("relu_again")
    gm.recompile()
    return gm


def inputs(grade_id: str, seed: int) -> dict:
    constant = 1 + seed % 7
    graphs = {"example": Example(constant), "rich": Rich(seed)}
    graphs = {name: torch.fx.symbolic_trace(model) for name, model in graphs.items()}
    if grade_id == "test_merge":  # the later node named first, as in the visible test, and last
        graphs["renamed"] = renamed(constant)
        pairs = {"example": ("relu_1", "relu"), "rich": ("special_expit", "special_expit_1")}
        pairs["renamed"] = (
            ("relu_again", "relu_in_full") if seed % 2 else ("relu_in_full", "relu_again")
        )
        return {
            name: {
                "graph": GRAPHS.describe(gm, state=True),
                "a": pairs[name][0],
                "b": pairs[name][1],
            }
            for name, gm in graphs.items()
        }
    if grade_id == "test_users":
        graphs["edited"] = edited(constant)
        graphs["merged"] = merged(
            torch.fx.symbolic_trace(Rich(seed)), "special_expit_1", "special_expit"
        )
    return {name: GRAPHS.describe(gm, state=True) for name, gm in graphs.items()}


def reference(graph: dict) -> list[dict]:
    """The dump the exercise asks for, of the graph as the grader sent it."""
    return SOLUTION.dump_nodes(GRAPHS.build(graph))


def test_records(data, graphs):
    for name, graph in graphs.items():
        nodes = [(row["name"], row["op"], len(row["users"])) for row in reference(graph)]
        verify.check_records(data[name], nodes)


def compare(data, graphs: dict, key: str) -> None:
    for name, graph in graphs.items():
        want = {row["name"]: row[key] for row in reference(graph)}
        verify.check_values(data[name], key, want)


def test_targets(data, graphs):
    compare(data, graphs, "target")


def test_arguments(data, graphs):
    compare(data, graphs, "args")
    compare(data, graphs, "kwargs")


def test_users(data, graphs):
    compare(data, graphs, "users")


def test_refers_to(data, graphs):
    compare(data, graphs, "refers_to")


def test_merge(data, cases):
    for name, case in cases.items():
        returned = data[name]
        verify.check_returns_graph_module(returned.get("type"))
        try:
            after = GRAPHS.build(returned, case["graph"])
        except DataError as exc:
            raise AssertionError(f"the graph merge returned is not valid: {exc}") from None
        verify.check_merge(GRAPHS.build(case["graph"]), after, case["a"], case["b"])
        verify.check_recompiled(returned["code"], returned["graph_code"])
