"""Exercise 1's hidden checks (solutions/ex1_sigmoid_to_tanh/checks.py) on passes that write an
in-place tanh: the learner hears why the exercise does not accept it, not only that the grader
never runs it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from grader.safegrade import probing

EXERCISE = Path(__file__).resolve().parents[1] / "solutions" / "ex1_sigmoid_to_tanh"


@pytest.fixture(scope="module")
def checks():
    return probing.load(EXERCISE / "checks.py")


def judged(checks, grade_id: str, what: str, pass_) -> None:
    """check_case on what `pass_` makes of the model `what` of test `grade_id`, as the probe
    (probes.py) would send it back."""
    case = checks.inputs(grade_id, seed=5)[what]
    gm = checks.GRAPHS.build(case["graph"], codegen=True)
    received = checks.GRAPHS.describe(gm)["nodes"]
    gm = pass_(gm)
    with torch.no_grad():
        output = gm(case["sample"].clone())
    run = {"received": received, "graph": checks.GRAPHS.describe(gm), "output": output}
    checks.check_case(what, case, run)


def swapped(functions: dict, methods: dict | None = None):
    """A pass that sets each sigmoid's target to the one `functions` or `methods` gives."""

    def pass_(gm):
        for node in gm.graph.nodes:
            if node.op == "call_function" and node.target in functions:
                node.target = functions[node.target]
            elif node.op == "call_method" and node.target in (methods or {}):
                node.op, node.target = "call_function", methods[node.target]
        gm.recompile()
        return gm

    return pass_


IN_PLACE_TANHS = [torch.tanh_, torch.Tensor.tanh_, torch.ops.aten.tanh_.default]


@pytest.mark.parametrize("in_place", IN_PLACE_TANHS)
def test_an_in_place_tanh_for_a_sigmoid_is_refused_with_the_reason(checks, in_place):
    with pytest.raises(AssertionError) as refused:
        judged(checks, "test_torch_sigmoid", "torch.sigmoid", swapped({torch.sigmoid: in_place}))
    message = str(refused.value)
    assert "in-place tanh is no replacement" in message and "overwrites its input" in message
    assert "never runs" not in message and "<not allowed" not in message


def test_torch_tanh_for_x_sigmoid_in_place_is_told_to_use_the_method(checks):
    with pytest.raises(AssertionError, match=r"the method x\.tanh_\(\)"):
        judged(checks, "test_in_place", "x.sigmoid_()", swapped({}, {"sigmoid_": torch.tanh_}))


def test_the_reference_rewrite_and_other_refusals_are_unchanged(checks):
    judged(checks, "test_torch_sigmoid", "torch.sigmoid", checks.reference)
    judged(checks, "test_in_place", "x.sigmoid_()", checks.reference)
    with pytest.raises(Exception, match="never runs"):  # not a tanh: the builder's own refusal
        judged(checks, "test_torch_sigmoid", "torch.sigmoid", swapped({torch.sigmoid: torch.sin}))


def by_name(gm):
    """A pass that finds sigmoids by node name, not by op and target (red team redC)."""
    for node in gm.graph.nodes:
        if "sigmoid" in node.name or "expit" in node.name:
            node.op, node.target = "call_function", torch.tanh
    gm.recompile()
    return gm


def test_a_rewrite_by_node_name_is_refused_by_the_visible_cell_and_the_hidden_check(checks):
    """test_graph_hygiene's cell runs check_rewrite on verify.misnamed() (a ReLU named sigmoid,
    a sigmoid named gate); the grader sends the same graph."""
    original = checks.verify.misnamed()
    with pytest.raises(AssertionError, match=r"\['gate'\]"):
        checks.verify.check_rewrite(original, by_name(copy.deepcopy(original)), "misnamed nodes")
    checks.verify.check_rewrite(original, checks.reference(copy.deepcopy(original)), "misnamed")
    with pytest.raises(AssertionError):
        judged(checks, "test_graph_hygiene", "misnamed nodes", by_name)
    judged(checks, "test_graph_hygiene", "misnamed nodes", checks.reference)


def by_class_name(gm):
    """Modules found by a class name ending in "igmoid": nn.Hardsigmoid and nn.LogSigmoid too."""
    for node in gm.graph.find_nodes(op="call_module"):
        if type(gm.get_submodule(node.target)).__name__.endswith("igmoid"):
            node.op, node.target = "call_function", torch.tanh
    gm.graph.lint()
    gm.recompile()
    return gm


def test_modules_found_by_a_class_name_ending_in_igmoid_are_refused_by_cell_and_check(checks):
    """test_graph_hygiene's cell and the grader's check hold nn.Hardsigmoid and nn.LogSigmoid,
    which compute no sigmoid; no cell held either, so such a pass passed them (known fault)."""
    model = checks.Wrap(checks.lookalikes(), 4)
    original = torch.fx.symbolic_trace(model)
    with pytest.raises(AssertionError, match="a node changed"):
        checks.verify.check_rewrite(original, by_class_name(copy.deepcopy(original)), "no sigmoid")
    checks.verify.check_rewrite(original, checks.reference(copy.deepcopy(original)), "no sigmoid")
    what = "nn.Hardsigmoid and nn.LogSigmoid, no sigmoids"
    with pytest.raises(AssertionError):
        judged(checks, "test_graph_hygiene", what, by_class_name)
    judged(checks, "test_graph_hygiene", what, checks.reference)


def test_a_visible_check_tells_a_forgotten_recompile_with_the_differing_output():
    """The red team (redE): without gm.recompile() three visible cells said only that the
    output differs from the tanh model's; only the hygiene cell named recompile."""
    verify = probing.load(EXERCISE / "verify.py")
    gm = torch.fx.symbolic_trace(verify.Wrap(torch.sigmoid))
    for node in gm.graph.find_nodes(op="call_function", target=torch.sigmoid):
        node.target = torch.tanh
    x = torch.randn(3, 4)
    with pytest.raises(AssertionError, match=r"differs .*was gm.recompile\(\) called\?"):
        verify.check_against(gm, verify.Wrap(torch.tanh), x, "torch.sigmoid")
    gm.recompile()
    verify.check_against(gm, verify.Wrap(torch.tanh), x, "torch.sigmoid")


def by_function_name(gm):
    """The red team's (redQ7): every function whose name holds "sigmoid" becomes tanh."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and "sigmoid" in getattr(node.target, "__name__", ""):
            node.target, node.kwargs = torch.tanh, {}  # F.hardsigmoid's inplace=False dropped
    gm.recompile()
    return gm


def test_functions_found_by_a_name_holding_sigmoid_are_refused_by_the_hidden_check(checks):
    """test_graph_hygiene's hidden models call F.hardsigmoid and F.logsigmoid: a pass that
    matches function names turned both into tanh and passed every test."""
    what = "F.hardsigmoid and F.logsigmoid, no sigmoids"
    with pytest.raises(AssertionError):
        judged(checks, "test_graph_hygiene", what, by_function_name)
    judged(checks, "test_graph_hygiene", what, checks.reference)
    judged(checks, "test_torch_sigmoid", "torch.sigmoid", by_function_name)  # right there
