"""What chapter 1's checkpoints draw and run (fxcourse.cases makes the seeds, the checkpoint cells
compare the learner's answer with the reference answer, fxcourse.reference).

    row_steps_opaque_nodes(traced_row_steps)             # try it 1.1: nodes that hide code
    in_place_nodes(traced_row_steps)                     # try it 1.1: nodes that write in place
    for case in check.cases(row_step_inputs):            # try it 1.1: (x,)
        case.both(lambda answer, x: row_steps_outcome(answer.traced_row_steps, x))
    gelu_calls_of(gm), gelu_steps_of(gm)                 # try it 1.2: what plain_gelu's graph does
    for case in check.cases(plain_gelu_calls):           # try it 1.2: (x, act[, scale])
        case.both(lambda answer, *args: plain_gelu_outcome(answer.plain_gelu, *args))
    for case in check.cases(leaf_models_gated_by(Gate)): # try it 1.3: (model, x)
        case.both(lambda answer, model, x: top_level_outcome(answer.TopLevelTracer, model, x))

The chapter's own Gate is an argument: the cases hold the module the chapter defines. Nothing
here holds an answer; the cases are drawn so that each run holds every feature an answer must
handle (make.each).
"""

from __future__ import annotations

import sys
import types

import torch
import torch.fx as fx
from torch import nn

from fxcourse.cases import PathModel, Residual
from fxcourse.messages import _

# ----------------------------------------------------------------------------- try it 1.1

ROW_KINDS = [  # (rows, dimensions of a row, how x is laid out): each once in every run
    ((2, 2), 0, "row-major"),  # two numbers: one difference, of shape (1,)
    ((6, 9), 0, "row-major"),
    ((3, 5), 1, "last dimension 1"),  # rows of shape (1,): x of shape (n, 1)
    ((2, 2), 1, "row-major"),
    ((6, 9), 2, "last dimension 1"),  # a .squeeze() of the result drops what x keeps
    ((3, 5), 2, "column-major"),  # no view flattens such an x
]


def row_step_inputs(make):  # 1.1's cases: 2 to 9 rows, each row one number, a vector or a matrix
    row_range, row_dims, layout = make.each(ROW_KINDS)
    rows, column_major = make.integer(*row_range), layout == "column-major"
    row_shape = [make.integer(1 + column_major, 4) for _dim in range(row_dims)]
    if layout == "last dimension 1":
        row_shape[-1] = 1
    dtype = make.each([torch.float32, torch.float64, torch.int64])  # every dtype in every run
    size = make.each([10, 10**17])  # such integers survive no detour through a float dtype
    x = (make.tensor(rows, *row_shape, dtype=torch.float64) * size).to(dtype)
    if dtype == torch.int64:  # low bits too: float64 keeps 53 bits of an integer this large
        x += torch.randint(-999, 1000, x.shape, generator=make.generator)
    if dtype == torch.int64 and size > 10:  # each entry 2**56 or more from 0, rows of odd and
        # even entries by turns: every difference is odd, so a detour through float64 (whose
        # step there is 16 or more) rounds every one of them, however few rows x has
        x += torch.where(x < 0, -(2**56), 2**56)
        parity = (torch.arange(rows) % 2).reshape(rows, *[1] * row_dims)
        x += parity - x % 2
    make.note(
        _("x of shape {shape}, {dtype}, entries of order {size}").format(
            shape=tuple(x.shape), dtype=x.dtype, size=f"{size:.0e}"
        )
    )
    if dtype.is_floating_point:  # 0 * inf is NaN: a detour through a matrix product (redM5)
        x.view(-1)[make.integer(0, x.numel() - 1)] = make.choice([1.0, -1.0]) * float("inf")
        make.note(_("one entry infinite"))
    if column_major:
        x = x.permute(2, 1, 0).contiguous().permute(2, 1, 0)
        make.note(_("x laid out column-major: not contiguous"))
    return x


def row_steps_outcome(traced, x):  # what the graph's nodes compute (or the error they raised),
    before = x.clone()  # and whether they wrote into x: row_steps_loop leaves its input as it was
    interpreter = fx.Interpreter(traced, graph=traced.graph)  # the nodes, not forward
    interpreter.extra_traceback = False  # torch's error alone: no node line, no tlparse pointer
    try:
        result = interpreter.run(x)
    except Exception as error:  # noqa: BLE001 (any error is the learner's to see)
        result = error
    return result, not torch.equal(x, before)


def in_place_nodes(traced):  # the names of the nodes that write into a tensor they read
    return [node.name for node in traced.graph.nodes if _writes_in_place(node)]


def _writes_in_place(node):  # x.sub_(y), torch.sub_ ..., operator.isub: a name ending in one _
    if node.op not in ("call_method", "call_function"):
        return False
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    in_place_operator = node.op == "call_function" and name in IN_PLACE
    return (name.endswith("_") and not name.endswith("__")) or in_place_operator


IN_PLACE = {f"i{name}" for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")}


def row_steps_opaque_nodes(traced):  # the names of the nodes that hide a computation
    return [node.name for node in traced.graph.nodes if _hides_code(node)]


def _hides_code(node):  # one node that hides a computation: a module, or a function not torch's
    if node.op == "call_method":  # a method set on torch.Tensor by hand (Tensor.steps = loop)
        method = getattr(torch.Tensor, node.target, None)
        return isinstance(method, types.FunctionType) and not method.__module__.startswith("torch")
    if node.op != "call_function":
        return node.op == "call_module"  # tracing a function calls no module

    home, name = getattr(node.target, "__module__", None), getattr(node.target, "__name__", "")
    if home in ("torch._ops.aten", "torch._ops.prims"):  # torch.ops.aten.sub.Tensor and such
        return False  # torch's own operators (a custom torch.library op stays opaque)
    torchs_own = str(home).startswith("torch") and getattr(sys.modules.get(home), name, None)
    return not isinstance(node.target, types.BuiltinFunctionType) and torchs_own is not node.target


# ----------------------------------------------------------------------------- try it 1.2


def plain_gelu_calls(make):  # 1.2's cases: a fresh x; act and scale as pinned, or one of them not
    x = make.tensor(*[make.integer(1, 4) for _dim in range(make.integer(1, 3))], dtype=make.dtype())
    change = make.each(["nothing", "act", "scale"])
    act = make.choice(["relu", "GELU", "tanh", "gelu "]) if change == "act" else "gelu"
    scale = make.choice([1.0, 3, -0.5, 2.0]) if change == "scale" else None
    args = (x, act) if scale is None and make.coin() else (x, act, scale)
    make.note(
        _("plain_gelu(x, {arguments}), x of shape {shape}").format(
            arguments=", ".join(map(repr, args[1:])), shape=tuple(x.shape)
        )
    )
    return args


def plain_gelu_outcome(traced, *args):  # what the call returns, or "refused" when a guard stops it
    try:
        return traced.forward(*args)
    except AssertionError:
        return "refused"


def gelu_calls_of(gm):  # the names of what the graph calls, sorted
    return sorted(getattr(n.target, "__name__", n.target) for n in gm.graph.nodes if "call" in n.op)


def gelu_steps_of(gm):  # each node's op, target and arguments, a node named by its place
    place = {node: index for index, node in enumerate(gm.graph.nodes)}

    def target(node):  # an input's name is no step: x_1 (x given as fx.PH) is x
        return None if node.op == "placeholder" else getattr(node.target, "__name__", node.target)

    return [(n.op, target(n), fx.node.map_arg(n.args, place.get)) for n in gm.graph.nodes]


# ----------------------------------------------------------------------------- try it 1.3


def leaf_models_gated_by(gate_class):
    """1.3's cases, a child of each run's models being a `gate_class` (the chapter's Gate)."""

    def leaf_models(make):  # children of four kinds, some grandchildren called directly
        width = make.integer(2, 6)

        def linear():
            return make.parameters_of(nn.Linear(width, width))

        box = make.sequential([linear(), nn.Tanh()])
        # Gate branches on values: a leaf, or tracing fails
        kids = [box, gate_class(), linear(), Residual(linear())]
        # every run: children named by words, and numbered as an nn.Sequential numbers them
        numbered = make.each(["words", "numbers"]) == "numbers"
        names = ["0", "1", "2", "3"] if numbered else make.words(4)
        grandchildren = [f"{names[0]}.{inner}" for inner, _child in box.named_children()]
        called = make.rng.sample([*grandchildren, f"{names[3]}.inner"], make.integer(1, 3))
        plan = [("call", path) for path in [*names, *called]]
        make.rng.shuffle(plan)
        make.note(_("a model that calls {paths}").format(paths=[path for _call, path in plan]))
        x = make.tensor(make.integer(1, 4), width)
        return PathModel(dict(zip(names, kids, strict=True)), plan), x

    return leaf_models


def top_level_outcome(tracer_class, model, x):  # what the graph calls, and what it computes
    try:
        graph = tracer_class().trace(model)
    except fx.proxy.TraceError as error:  # the tracer stepped into a branch on values
        return error, None
    calls = [(node.op, node.target) for node in graph.nodes if node.op.startswith("call")]
    return calls, fx.GraphModule(model, graph).forward(x)
