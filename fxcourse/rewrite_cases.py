"""What chapter 3's checkpoints 3.4 and 3.5 draw and run (fxcourse.cases makes the seeds, the
checkpoint cells compare the learner's answer with the reference answer, fxcourse.reference).

    for case in check.cases(hand_gelu_models, count=5):   # try it 3.4: (gm, x)
        gelu_and_erf_nodes(rewritten)                      # how many GELU nodes, how many erf
    ops_the_sigmoid_rule_records(decompose, rules)         # try it 3.5: the rule, alone
    calls_beyond_arithmetic(recorded)
    sigmoid_rule_code_error(decompose, rules)
    sigmoid_rule_follows_exp(decompose, rules)
    for case in check.cases(sigmoid_relu_models):         # try it 3.5: (gm, x, edge)
        case.both(decomposed_by_rules_with_sigmoid(decompose))
        relu_nodes_kept(decomposed_gm, rule_graph, case, RULES)

3.5's helpers are handed the chapter's own decompose and RULES. Try its 3.1 to 3.3 draw from
fxcourse.transform_cases. Nothing here holds an answer; the cases are drawn so that each run holds
every feature an answer must handle (make.each).
"""

from __future__ import annotations

import math

import torch
import torch.fx as fx
import torch.nn.functional as F
from torch import nn

from fxcourse.cases import Spelling, function, method

# ----------------------------------------------------------------------------- try it 3.4


def gelu_spelled(x):  # the spelling of HandGelu's first GELU
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_spelled_flipped(x):  # the spelling of its second
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def not_quite_gelu(x):  # not GELU: it divides by 2.0, not by sqrt(2)
    return x * 0.5 * (1.0 + torch.erf(x / 2.0))


def half_off_gelu(x):  # not GELU: x * 0.6, though erf(x / sqrt(2)) is GELU's
    return x * 0.6 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def one_off_gelu(x):  # not GELU: 2.0 + erf, though erf(x / sqrt(2)) is GELU's
    return 0.5 * x * (2.0 + torch.erf(x / math.sqrt(2.0)))


def two_values_gelu(x):  # not GELU: every constant is GELU's, but x + 1 is what 0.5 multiplies
    return (x + 1.0) * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


GELU_SPELLINGS = {
    "hand gelu": [Spelling("function", gelu_spelled, label="x * 0.5 * (1 + erf(x / sqrt 2))")],
    "flipped": [
        Spelling("function", gelu_spelled_flipped, label="0.5 * x * (1 + erf(x / sqrt 2))")
    ],
    "near gelu": [Spelling("function", not_quite_gelu, label="x * 0.5 * (1 + erf(x / 2))")],
    "half off": [Spelling("function", half_off_gelu, label="x * 0.6 * (1 + erf(x / sqrt 2))")],
    "one off": [Spelling("function", one_off_gelu, label="0.5 * x * (2 + erf(x / sqrt 2))")],
    "two values": [
        Spelling("function", two_values_gelu, label="(x + 1) * 0.5 * (1 + erf(x / sqrt 2))")
    ],
    "erf": [Spelling("function", torch.erf)],
}


def hand_gelu_models(make):  # 3.4's cases: both spellings, erf alone, near misses, other ops
    third = make.each(["erf", "near gelu", "hand gelu", "flipped"])
    near = make.each(["near gelu", "half off", "one off", "two values"])  # each once per run
    model = make.model(
        ops=["hand gelu", "flipped", "erf", "near gelu", "relu", "gelu", "add", "linear"],
        must=["hand gelu", "flipped", third, near],
        spellings=GELU_SPELLINGS,
    )
    dtype = make.dtype()
    return fx.symbolic_trace(model.to(dtype)), make.input_for(model, dtype=dtype) * 2


def unread_nodes(gm):  # the call_ nodes nothing reads: dead code, which the generated code runs
    return [n.name for n in gm.graph.nodes if n.op.startswith("call_") and not n.users]


def gelu_and_erf_nodes(gm):  # how many nodes compute GELU (F.gelu, nn.GELU), how many erf
    gelus = [
        n
        for n in gm.graph.nodes
        if n.target is F.gelu and n.kwargs.get("approximate", "none") == "none"
    ]
    modules = [n for n in gm.graph.find_nodes(op="call_module")]
    gelus += [
        n
        for n in modules
        if type(gm.get_submodule(n.target)) is nn.GELU
        and gm.get_submodule(n.target).approximate == "none"
    ]
    return len(gelus), len(gm.graph.find_nodes(op="call_function", target=torch.erf))


# ----------------------------------------------------------------------------- try it 3.5

# the ops a rule "with exp and arithmetic" may record, by name
ARITHMETIC = set(
    "exp exp_ expm1 add add_ sub sub_ rsub mul mul_ truediv div div_ true_divide neg neg_ "
    "negative reciprocal reciprocal_ pow where abs clamp clip maximum minimum gt lt ge le eq ne "
    "isnan isinf ones_like zeros_like full_like to type_as double float sign sgn copysign square "
    "relu "  # relu: max(x, 0); then torch's documented aliases of the ops above
    "divide divide_ multiply multiply_ subtract subtract_ absolute greater greater_equal less "
    "less_equal not_equal "
    # constants made to match x: x.new_ones(()), torch.ones((), dtype=x.dtype) (x.dtype is a
    # getattr node), as ones_like and full_like above
    "new_ones new_zeros new_full ones zeros full getattr".split()
)


def sigmoid_relu_models(make):  # 3.5's cases: torch.sigmoid, ReLUs that RULES decomposes, other ops
    model = make.model(
        ops=["sigmoid", "relu", "tanh", "mul", "add", "linear"],
        must=["sigmoid", "relu", make.each(["sigmoid", "linear", "tanh"])],
        spellings={
            "sigmoid": [function(torch.sigmoid), function(torch.sigmoid), method("sigmoid")],
            "relu": [function(torch.relu), function(F.relu)],
        },
    )
    dtype = make.dtype()
    big = 100.0 if dtype == torch.float32 else 1000.0  # exp(big) overflows to inf
    # beyond 20 float64 still tells sigmoid from 0 and 1: a rule that rounds to 0 or 1 from a
    # bound below 26.5 on is off there by more than float64's tolerance
    far = [round(make.rng.uniform(20.5, 26.5), 2), 26.5]
    # from 27.6 to 34.5 below 0 sigmoid lies between 1e-12 and 1e-15: float64 edges are judged
    # to 1e-15 (a few units in the last place of 1), so a rule that rounds to 0 from a bound up
    # to 34 on, or clamps x there, is off; 1 - 1 / (1 + exp(x)), off by rounding only, is not
    tiny = [-round(make.rng.uniform(27.6, 34.0), 2), -34.0]
    edge = [-torch.inf, -big, *tiny, *[-v for v in far], -20.0, -1.0, 0.0, 5e-3, 1.0, 20.0, *far]
    edge = [*edge, big, torch.inf, torch.nan]
    edge = torch.tensor(edge, dtype=dtype)  # at -20, 5e-3 and 20 approximations show

    return fx.symbolic_trace(model.to(dtype)), make.input_for(model, dtype=dtype) * 4, edge


def sigmoid_alone_decomposed(decompose, rules):  # a graph of one torch.sigmoid, decomposed
    return decompose(fx.symbolic_trace(lambda x: torch.sigmoid(x)), rules)


def ops_the_sigmoid_rule_records(decompose, rules):  # the nodes the sigmoid rule records, by name
    gm = sigmoid_alone_decomposed(decompose, rules)
    calls = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
    return [getattr(n.target, "__name__", n.target) for n in calls]


def calls_beyond_arithmetic(recorded):  # the names recorded that are neither exp nor arithmetic
    return sorted({name for name in recorded if name not in ARITHMETIC})


class ExpDoubled(fx.Interpreter):  # runs a graph with the result of every exp doubled
    def run_node(self, node):
        value = super().run_node(node)
        if node.op.startswith("call_") and getattr(node.target, "__name__", node.target) in (
            "exp",
            "exp_",
        ):
            value.mul_(2.0)  # in place: a node that reads what exp_ changed sees it too
        return value


def sigmoid_rule_follows_exp(decompose, rules):  # whether the rule's value changes with its exp's
    gm = sigmoid_alone_decomposed(decompose, rules)
    probe = torch.linspace(-4.0, 4.0, 9, dtype=torch.float64)
    return not torch.allclose(ExpDoubled(gm).run(probe), gm(probe))


# ops whose value does not follow their input's values: constants made to match x
CONSTANT_MAKERS = {"ones_like", "zeros_like", "full_like", "new_ones", "new_zeros", "new_full"}


def powers_of_a_constant(decompose, rules):  # pow nodes whose exponent follows x, not their base
    """A constant raised to a power that follows x is an exponential other than exp (math.e ** x),
    whatever is averaged with it (red team redO6)."""
    gm, follows, found = sigmoid_alone_decomposed(decompose, rules), set(), []
    for node in gm.graph.nodes:
        name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
        if node.op == "placeholder" or (
            not _constant(node, name) and follows & set(node.all_input_nodes)
        ):
            follows.add(node)
        named = [node.kwargs.get(key) for key in ("input", "self", "exponent")]
        operands = [*node.args, *(arg for arg in named if arg is not None)][:2]
        if node.op.startswith("call_") and name in ("pow", "pow_") and len(operands) == 2:
            base, exponent = operands
            if _follows(exponent, follows) and not _follows(base, follows):
                found.append(node.name)
    return found


def _constant(node, name: str) -> bool:  # made to match x, not from x's values
    return name in CONSTANT_MAKERS or (
        name == "getattr" and node.args[1:2] in [("dtype",), ("device",)]
    )


def _follows(value, follows) -> bool:
    return isinstance(value, fx.Node) and value in follows


def sigmoid_rule_code_error(decompose, rules):  # why the rule's generated code fails, or None
    gm = sigmoid_alone_decomposed(decompose, rules)
    try:
        gm.forward(torch.linspace(-4.0, 4.0, 9))
    except Exception as error:  # noqa: BLE001 (the rule as decompose recorded it)
        return f"{type(error).__name__}: {error}".splitlines()[0]
    return None


def relus_in(gm, rules):  # the nodes RULES decomposes: those of the model, and any the rule records
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target in rules]


def sigmoids_in(case):  # how many torch.sigmoid nodes the case's model holds
    return len(case.objects()[0].graph.find_nodes(op="call_function", target=torch.sigmoid))


def relu_nodes_kept(decomposed_gm, rule_graph, case, rules):  # more than the sigmoid rule records
    return len(relus_in(decomposed_gm, rules)) - len(relus_in(rule_graph, rules)) * sigmoids_in(
        case
    )


def decomposed_by_rules_with_sigmoid(decompose):  # for case.both: the answer's rules applied
    def decomposed_by(answer, gm, x, edge):
        rules = answer.rules_with_sigmoid
        return decompose(gm, rules), x, rules[torch.sigmoid](edge)

    return decomposed_by
