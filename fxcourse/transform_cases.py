"""What chapter 3's first three checkpoints draw and run (fxcourse.cases makes the seeds, the
checkpoint cells compare the learner's answer with the reference answer, fxcourse.reference).

    for case in check.cases(sigmoid_models):          # try it 3.1: (gm, x)
        sigmoids_left(hard_gm)                         # the sigmoid nodes left, by name
        hooked_instead_of_edited(hard_gm)              # (also 3.2)
        hardsigmoid_call_count(hard_gm)
    for case in check.cases(residual_models):         # try it 3.2: (gm, x)
        modules_kept_in_order(clamped, wanted)
    for case in check.cases(pass_through_models):     # try it 3.3: (gm, example)
        node_kinds_and_held_modules(slim)

Try its 3.4 and 3.5 draw from fxcourse.rewrite_cases. Nothing here holds an answer; the cases
are drawn so that each run holds every feature an answer must handle (make.each).
"""

from __future__ import annotations

from collections import Counter

import torch
import torch.fx as fx
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.linear import NonDynamicallyQuantizableLinear

from fxcourse.case_edits import names_that_mislead
from fxcourse.cases import (
    LAYOUTS,
    UNARY,
    Spelling,
    Step,
    by_keyword,
    function,
    hooks_on,
    laid_out,
    method,
    module,
)
from fxcourse.messages import _


def hooked_instead_of_edited(gm):  # the modules whose hooks change what runs, not the graph
    return hooks_on(gm)


# ----------------------------------------------------------------------------- try it 3.1

SIGMOID_NODES = {("call_function", torch.sigmoid), ("call_method", "sigmoid")}
SIGMOID_FORMS = [function(torch.sigmoid), method("sigmoid")]
BY_KEYWORD = by_keyword(SIGMOID_FORMS[0])  # torch.sigmoid(input=x): the node's args are empty
LOG_SIGMOID = [Spelling("function", F.logsigmoid, label="F.logsigmoid")]  # no sigmoid


def is_sigmoid(node):  # a node that calls a sigmoid, known by its op and target
    return (node.op, node.target) in SIGMOID_NODES


def sigmoids_left(gm):  # the names of the nodes that still call a sigmoid
    return [n.name for n in gm.graph.nodes if is_sigmoid(n)]


def sigmoids_left_hint(gm, left):  # 3.1: what the sigmoid nodes a pass left have in common
    nodes = [node for node in gm.graph.nodes if node.name in left]
    by_keyword = all(not node.args for node in nodes)
    renamed = all("sigmoid" not in node.name for node in nodes)
    if by_keyword and renamed:  # either may be why the pass missed them
        hint = _(
            "a sigmoid given its input by keyword, under a name a pass gave it, is left "
            "({names}): its args are empty and a name is a label; does your pass find it?"
        )
    elif by_keyword:
        hint = _(
            "a sigmoid given its input by keyword is left ({names}): torch.sigmoid(input=x) "
            "is a node whose args are empty; does your pass find it?"
        )
    elif renamed:
        hint = _(
            "sigmoid nodes are left ({names}): a name is a label any pass may change; what do "
            "their op and target say?"
        )
    else:
        hint = _("sigmoid nodes are left ({names}): which node kinds call a sigmoid (section 2.2)?")
    return hint.format(names=left)


def hardsigmoid_call_count(gm):  # the nodes that call F.hardsigmoid (or an nn.Hardsigmoid module)
    hard = {("call_function", F.hardsigmoid), ("call_function", torch._C._nn.hardsigmoid)}
    hard |= {("call_module", p) for p, m in gm.named_modules() if isinstance(m, nn.Hardsigmoid)}
    return sum((node.op, node.target) in hard for node in gm.graph.nodes)


def calls_a_module_named_sigmoid(model):  # one that is no hardsigmoid already
    if not any("sigmoid" in path for path, _module in model.named_modules(remove_duplicate=False)):
        return False  # no need to trace it
    gm = fx.symbolic_trace(model)
    return any(
        "sigmoid" in node.target and not isinstance(gm.get_submodule(node.target), nn.Hardsigmoid)
        for node in gm.graph.find_nodes(op="call_module")
    )


def sigmoid_models(make):  # 3.1's cases: both sigmoid forms, other ops, names that say "sigmoid"
    named_sigmoid = make.each([True, False])  # half the cases call a module named "sigmoid"
    keyword = make.each(["positional", "by keyword"]) == "by keyword"
    model = None
    while model is None or named_sigmoid and not calls_a_module_named_sigmoid(model):
        make.notes.clear()
        model = make.model(
            ops=["sigmoid", "hardsigmoid", "tanh", "relu", "mul", "linear"],
            must=[
                "sigmoid()",
                ".sigmoid()",
                make.each(["sigmoid", "hardsigmoid", "linear"]),
                "logsigmoid",
            ],
            spellings={
                "sigmoid": SIGMOID_FORMS,
                "sigmoid()": [BY_KEYWORD if keyword else SIGMOID_FORMS[0]],
                ".sigmoid()": SIGMOID_FORMS[1:],
                "logsigmoid": LOG_SIGMOID,
            },
            decoys=["sigmoid", "proj"],
        )
    dtype = make.dtype()
    # a sigmoid node named after a word, a tanh named sigmoid: names are labels (section 2.2)
    gm = names_that_mislead(make, fx.symbolic_trace(model.to(dtype)), is_sigmoid, "sigmoid")
    return gm, make.input_for(model, dtype=dtype) * 4


# ----------------------------------------------------------------------------- try it 3.2

ACTIVATIONS = {"relu": [module(nn.ReLU)], "tanh": [module(nn.Tanh)]}  # as modules, not functions
# MultiheadAttention's out_proj is of this subclass: an nn.Linear all the same
ACTIVATIONS["subclass"] = [module(NonDynamicallyQuantizableLinear)]


def is_linear(gm, node):
    return node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Linear)


def other_readers(gm):  # the kinds of node, besides Linears, that read a value a Linear reads
    calls = gm.graph.find_nodes(op="call_module")
    values = {node.all_input_nodes[0] for node in calls if is_linear(gm, node)}
    # but a Tanh's value: within [-1, 1], a clamp leaves it as it is for every reader
    values -= {v for v in calls if isinstance(gm.get_submodule(v.target), nn.Tanh)}
    readers = {user for value in values for user in value.users if not is_linear(gm, user)}

    def shows(reader):  # a module whose value only Linears read hides a clamp of its input:
        # they clamp it again, and clamp(relu(v)) is relu(clamp(v))
        return reader.op != "call_module" or not all(is_linear(gm, u) for u in reader.users)

    return {"a module" if r.op == "call_module" else "a function" for r in readers if shows(r)}


def other_values_hint(gm):  # 3.2's hint when values differ; a Linear subclass left unclamped?
    calls = gm.graph.find_nodes(op="call_module")
    subclassed = [
        n for n in calls if is_linear(gm, n) and type(gm.get_submodule(n.target)) is not nn.Linear
    ]
    if left := [n.target for n in subclassed if not reads_a_clamp(gm, n)]:
        return _(
            "the graph computes other values, and {names} read no clamp: is an instance of a "
            "subclass of nn.Linear a Linear?"
        ).format(names=left)
    return _("the graph computes other values: does each Linear, and nothing else, read a clamp?")


def reads_a_clamp(gm, node):  # for a hint only: its input is a clamp, clip, hardtanh, min or max
    source = node.args[0] if node.args else node.kwargs.get("input")
    if not isinstance(source, fx.Node) or source.op in ("placeholder", "get_attr"):
        return False
    target = source.target
    if source.op == "call_module":
        target = type(gm.get_submodule(target)).__name__
    named = getattr(target, "__name__", str(target)).lower()
    return any(word in named for word in ("clamp", "clip", "hardtanh", "min", "max"))


def residual_models(make):  # 3.2's cases: Linears whose input other nodes read, other modules
    subclass = ["subclass"] * make.each([True, False])  # half the cases hold a Linear subclass
    spellings = dict(ACTIVATIONS)
    if make.each(["by position", "by keyword"]) == "by keyword":  # self.fc(input=h): args empty
        spellings["linear"] = [by_keyword(module(nn.Linear))]
    # half the cases: a ReLU or Tanh module reads a Linear's input too (a clamp given to every
    # module that reads it changes that module's result); the others: a function reads it
    reader = make.each(["a module", "a function"])
    gm = None
    while gm is None or reader not in other_readers(gm):
        make.notes.clear()
        model = make.model(
            ops=["linear", "relu", "tanh", "add", "mul"],
            must=["linear", "linear", "add", make.each(["relu", "tanh"]), *subclass],
            spellings=spellings,
            decoys=["fc", "fc1", "linear"],
        )
        gm = fx.symbolic_trace(model)
    return gm, make.input_for(model) * 3


def module_types(gm):  # the kind of module each call_module node calls, in order
    return [type(gm.get_submodule(n.target)) for n in gm.graph.find_nodes(op="call_module")]


def modules_kept_in_order(mine, wanted):  # wanted's module calls, in order, among mine's
    calls = iter(module_types(mine))  # a clamp may be a module call of its own: nn.Hardtanh
    return all(any(kind is call for call in calls) for kind in module_types(wanted))


# ----------------------------------------------------------------------------- try it 3.3

PASS_THROUGHS = {  # modules called with their input by position or by keyword (input=h)
    "identity": [module(nn.Identity), by_keyword(module(nn.Identity))],
    "dropout": [module(nn.Dropout, p=0.3), by_keyword(module(nn.Dropout, p=0.3))],
    "contiguous": [method("contiguous")],
    "transpose": [method("transpose", dim0=-1, dim1=-2)],
}


def copies_the_input(model):  # a .contiguous() reads the input itself
    return any(step.op == "contiguous" and step.inputs == (0,) for step in model.steps)


def copy_after_elementwise(make, model, example):  # a transpose, a relu, a copying .contiguous()
    values = model.values(example)
    relus = [form for form in UNARY["relu"] if form.kind != "module"]
    starts = [
        i for i, v in enumerate(values) if not torch.relu(v.transpose(-1, -2)).is_contiguous()
    ]
    start, end = make.choice(starts), len(values)
    steps = [("transpose", PASS_THROUGHS["transpose"][0]), ("relu", make.choice(relus))]
    steps.append(("contiguous", method("contiguous")))
    reads = [start, end, end + 1]  # each step reads the one before
    model.extend([Step(op, form, (read,)) for (op, form), read in zip(steps, reads, strict=True)])
    note = _("then value {start} transposed, a relu of it, and a .contiguous() of that")
    make.note(note.format(start=start))


def copies_after_input_ops(make, model, layout):  # a relu keeps the input's layout, a transpose not
    relus = [form for form in UNARY["relu"] if form.kind != "module"]
    copy, end = method("contiguous"), len(model.steps)  # new values: end + 1 to end + 4
    steps = [Step("relu", make.choice(relus), (0,)), Step("contiguous", copy, (end + 1,))]
    steps += [Step("transpose", PASS_THROUGHS["transpose"][0], (0,))]
    steps.append(Step("contiguous", copy, (end + 3,)))
    make.note(_("then a .contiguous() of a relu of the input, and one of a transpose of the input"))
    if layout == "channels_last":  # a .contiguous() that asks for channels-last hands on the
        # relu, laid out so, and copies the two contiguous copies (one kept, one erased wrongly
        # would count as many .contiguous() nodes as the right ones)
        to_last = method("contiguous", memory_format=torch.channels_last)
        steps += [Step("contiguous", to_last, (read,)) for read in (end + 1, end + 2, end + 4)]
        make.note(
            _("then .contiguous(memory_format=torch.channels_last) of the relu and both copies")
        )
    # memory_format= spelled with its default, in every case whose input is laid out otherwise:
    # of the channels-last relu (a copy) or of the relu's contiguous copy (a pass-through); a
    # rule that reads whether the keyword is there, not its value, takes it for channels-last
    # (red team redP)
    by_default = method("contiguous", memory_format=torch.contiguous_format)
    steps.append(
        Step("contiguous", by_default, (end + 1 if layout == "channels_last" else end + 2,))
    )
    make.note(
        _("then .contiguous(memory_format=torch.contiguous_format) of the relu")
        if layout == "channels_last"
        else _("then .contiguous(memory_format=torch.contiguous_format) of the relu's copy")
    )
    model.extend(steps)


def pass_through_model(make, decoy, layout):  # drawn again until it has what the case needs
    model = None
    while (
        model is None
        or (decoy and type(getattr(model, "contiguous", None)) is not nn.Linear)
        or (layout != "contiguous" and not copies_the_input(model))
    ):
        make.notes.clear()
        model = make.model(
            ops=["identity", "dropout", "contiguous", "transpose", "relu", "add", "linear"],
            must=["identity", "contiguous", "contiguous", "dropout", "transpose", "linear"],
            spellings=PASS_THROUGHS,
            decoys=["contiguous"] if decoy else ["drop", "after"],
        )
    return model


def pass_through_models(make):  # 3.3's cases: pass-throughs, layouts, Dropout in either mode
    decoy = make.each([True, False])  # half the cases hold a Linear named "contiguous"
    layout = make.each(LAYOUTS)  # an input not laid out contiguously meets a copy of itself
    model = pass_through_model(make, decoy, layout)
    mode = make.each(["eval", "training", "mixed"])
    model.train({"eval": False, "training": True}.get(mode, make.coin()))
    dropouts = [part for part in model.modules() if isinstance(part, nn.Dropout)]
    for index, part in enumerate(dropouts if mode == "mixed" else []):
        part.train(not model.training if index == 0 else make.coin())  # the first one disagrees
    width = model.width
    shape = (make.integer(1, 3), make.integer(2, 4), width, width)
    example = laid_out(make, shape if layout == "channels_last" else (width, width), layout)
    if make.each(["elementwise first", "as drawn"]) == "elementwise first":
        copy_after_elementwise(make, model, example)
    if layout != "contiguous":  # every input laid out otherwise: a relu keeps it, a transpose not
        copies_after_input_ops(make, model, layout)
    modes = ", ".join("training" if part.training else "eval" for part in dropouts)
    note = _("Dropout modes, in order: {modes}; the input's layout: {layout}")
    make.note(note.format(modes=modes, layout=layout))
    gm = in_place_step(row_from_column(fx.symbolic_trace(model)))
    squeezed_to_channels_last(make, gm)
    if decoy:  # a rule that knows a .contiguous() by its name or target, not its op, erases it
        decoy_reads_a_row(gm, model.contiguous)
        make.note(_("then the Linear named 'contiguous' reads a contiguous row of ones"))
    return gm, example


def row_from_column(gm):  # a (1, 3) row that transposes a (3, 1) column: contiguous, though its
    # strides, (1, 1), are not a fresh row's, (3, 1); its .contiguous() hands it on
    graph, output = gm.graph, gm.graph.output_node()
    source = next(iter(graph.find_nodes(op="placeholder")))
    with graph.inserting_before(output):
        column = graph.call_method("new_ones", (source, (3, 1)))
        row = graph.call_method("contiguous", (graph.call_method("transpose", (column, 0, 1)),))
    output.args = ((output.args[0], row),)
    gm.recompile()
    return gm


def squeezed_to_channels_last(make, gm):  # every case: ones of shape (N, W, 1, C) or (N, 1, W, C)
    # permuted to (N, C, 1, W) or (N, C, W, 1): channels-last, though the size-1 dimension's
    # stride is not a fresh channels-last tensor's; its channels-last .contiguous() hands it on
    # (red team redI3: strides compared with torch.empty(shape, memory_format=...)'s kept it)
    n, c, w = make.integer(1, 3), make.integer(2, 4), make.integer(2, 4)
    shape = make.choice([(n, w, 1, c), (n, 1, w, c)])
    graph, output = gm.graph, gm.graph.output_node()
    source = next(iter(graph.find_nodes(op="placeholder")))
    with graph.inserting_before(output):
        ones = graph.call_method("relu", (graph.call_method("new_ones", (source, shape)),))
        nchw = graph.call_method("permute", (ones, 0, 3, 2, 1))
        kwargs = {"memory_format": torch.channels_last}
        output.args = ((*output.args[0], graph.call_method("contiguous", (nchw,), kwargs)),)
    gm.recompile()
    note = _("then ones of shape {shape} permuted to NCHW, and its channels-last .contiguous()")
    make.note(note.format(shape=shape))


def in_place_step(gm):  # x.sin().mul_(2) among the outputs: mul_ hands on the very object it
    # was given, as a pass-through does, but changed (red team redG2: an `is` test erased it)
    graph, output = gm.graph, gm.graph.output_node()
    source = next(iter(graph.find_nodes(op="placeholder")))
    with graph.inserting_before(output):
        doubled = graph.call_method("mul_", (graph.call_method("sin", (source,)), 2))
    output.args = ((*output.args[0], doubled),)
    gm.recompile()
    return gm


def decoy_reads_a_row(gm, linear):  # the Linear named "contiguous" also reads a row of ones,
    # laid out contiguously, whatever the value it reads in the drawn model
    graph, output = gm.graph, gm.graph.output_node()
    source = next(iter(graph.find_nodes(op="placeholder")))
    gm.add_submodule("contiguous", linear)
    with graph.inserting_before(output):
        row = graph.call_method("new_ones", (source, (1, linear.in_features)))
        output.args = ((*output.args[0], graph.call_module("contiguous", (row,))),)
    gm.recompile()


def node_kind(gm, node):  # what a node runs: a module's type, a method's or function's name
    if node.op == "call_module":
        return type(gm.get_submodule(node.target)).__name__
    return getattr(node.target, "__name__", node.target)


def node_kinds_and_held_modules(gm):  # what the nodes run, and which modules are held
    found = Counter(node_kind(gm, n) for n in gm.graph.nodes)
    held = [type(m).__name__ for name, m in gm.named_modules() if name]  # the root is no submodule
    return found, Counter(held)
