"""What chapter 5's checkpoints draw and run (fxcourse.cases makes the seeds, the checkpoint cells
compare the learner's answer with the reference answer, fxcourse.reference).

    for case in check.cases(skip_module_cases):          # try it 5.1: (gm, x, skip)
        mine, wanted = case.both(skip_module_run)
    for case in check.cases(memory_recorder_cases):      # try it 5.2: (gm, example)
        mine, wanted = case.both(memory_recorder_run)
    for case in check.cases(relu_to_gelu_cases):         # try it 5.3: (gm, x)
        case.both(relu_to_gelu_run)
        relu_to_gelu_tolerances(result)                  # close enough for a GELU in that dtype
        relu_to_gelu_in_float64(result)                  # judged to float64's precision
    for case in check.cases(run_from_cases):             # try it 5.4: (gm, known, inputs, ran)
        mine, wanted = case.both(run_from_outcome)

Nothing here holds an answer; the cases are drawn so that each run holds every feature an answer
must handle (make.each).
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from operator import floordiv, getitem

import torch
import torch.nn.functional as F
from torch import nn
from torch.fx import symbolic_trace

from fxcourse import cases
from fxcourse.case_checks import every_node_of, graph_code, nodes_interpreted
from fxcourse.case_edits import names_that_mislead
from fxcourse.cases import (
    UNARY,
    PathModel,
    by_keyword,
    modules_run,
    modules_swapped,
    none_reached,
    rename_inputs,
    tag_modules,
    tolerances,
)
from fxcourse.messages import _, listing
from fxcourse.reference import close_enough

# ----------------------------------------------------------------------------- try it 5.1

SKIPS = ["a layer of a long nn.Sequential", "a layer inside a block"]
SKIPS += ["a module called twice, then by keyword"]
SKIPS += ["a name that begins another", "a name used at two depths"]


def _skip_label(kind):  # each of SKIPS as the learner reads it
    return {
        SKIPS[0]: _("a layer of a long nn.Sequential"),
        SKIPS[1]: _("a layer inside a block"),
        SKIPS[2]: _("a module called twice, then by keyword"),
        SKIPS[3]: _("a name that begins another"),
        SKIPS[4]: _("a name used at two depths"),
    }[kind]


def skip_module_cases(make):  # 5.1's cases: numeric and nested paths, two calls, names alike
    kind, width, dtype = make.each(SKIPS), make.integer(2, 6), make.dtype()

    def layer():
        return make.parameters_of(nn.Linear(width, width)) if make.coin(0.6) else nn.Tanh()

    if kind == SKIPS[0]:  # "1" begins "10", and a node's name is not its target
        model, skip = (
            make.sequential([layer() for _layer in range(make.integer(12, 14))], True),
            "1",
        )
    else:
        stem, word, *names = make.words(5)
        names[make.integer(0, 2)] = word if kind == SKIPS[4] else names[0]
        block = nn.Sequential(OrderedDict((name, layer()) for name in dict.fromkeys(names)))
        modules = {
            stem: block,
            word: layer(),
            f"{word}2": make.parameters_of(nn.Linear(width, width)),
        }
        plan = [("call", stem), ("call", word), ("call", f"{word}2")]
        plan += [("call input=", word)] * (kind == SKIPS[2])  # again, its input by keyword
        if kind == SKIPS[1]:  # a twin block, its layers named as the block's (enc.0 and dec.0)
            twin = make.word(avoid=[stem, word, *names])
            modules[twin] = nn.Sequential(OrderedDict((n, layer()) for n in block._modules))
            plan.append(("call", twin))
        model = PathModel(modules, make.rng.sample(plan, len(plan)))
        inside = f"{stem}.{make.choice(list(block._modules))}"
        skip = {SKIPS[1]: inside, SKIPS[4]: make.choice([f"{stem}.{word}", word])}.get(kind, word)
    make.note(
        _("SkipModule(gm, {skip}): {kind}, {dtype}").format(
            skip=repr(skip), kind=_skip_label(kind), dtype=dtype
        )
    )
    gm = symbolic_trace(tag_modules(model).to(dtype))
    return gm, make.tensor(make.integer(1, 4), width, dtype=dtype), skip


def skip_module_run(answer, gm, x, skip):
    # the result, what ran, gm unchanged, None read, modules set, the gradient x receives, and
    # whether gm's graph was edited while it ran (then put back: red team redP)
    x = x.requires_grad_()
    code, graph, before = gm.code, graph_code(gm), gm(x)
    with modules_run() as ran, modules_swapped(gm) as swapped:  # even a swap put back is seen
        with nodes_interpreted(gm) as interpreted:
            result, none_read = none_reached(answer.SkipModule(gm, skip).run, x)
    same = gm.code == code and graph_code(gm) == graph and torch.equal(gm(x), before)
    gradient = _input_gradient(result, x)
    return result, sorted(ran), same, none_read, swapped, gradient, interpreted.edited


def _input_gradient(result, x):  # None when no gradient reaches x (a detach, torch.no_grad)
    if not isinstance(result, torch.Tensor) or not result.requires_grad:
        return None
    return torch.autograd.grad(result.sum(), x, allow_unused=True)[0]


# ----------------------------------------------------------------------------- try it 5.2

PAIRS = {  # calls whose result is a tuple of tensors, and which of its items a later node reads
    "torch.max": lambda graph, v: graph.call_function(torch.max, (v,), {"dim": 1}),
    "topk": lambda graph, v: graph.call_method("topk", (v, 2)),
    "torch.split": lambda graph, v: graph.call_function(torch.split, (v, 2), {"dim": 1}),
    "aminmax": lambda graph, v: graph.call_function(torch.aminmax, (v,), {"dim": 0}),
    "sort": lambda graph, v: graph.call_method("sort", (v,), {"descending": True}),
    "a tuple in a tuple": lambda graph, v: graph.call_function(out_and_state, (v,)),
}


def out_and_state(value):  # (out, (h, c)), as nn.LSTM returns: a tuple inside the tuple
    return value.tanh(), torch.max(value, dim=-1)


OTHERS = {  # results of other dtypes, and results that hold no tensor
    "a copy in float16": lambda graph, v: graph.call_method("to", (v, torch.float16)),
    "a comparison with 0": lambda graph, v: graph.call_function(operator.gt, (v, 0)),
    "argmax": lambda graph, v: graph.call_method("argmax", (v,), {"dim": -1}),
}
NO_TENSOR = {
    "size()": lambda graph, v: graph.call_method("size", (v,)),
    "size(0)": lambda graph, v: graph.call_method("size", (v, 0)),
}


def _extra_label(name):  # each of PAIRS, OTHERS and NO_TENSOR as the learner reads it
    return {
        "a tuple in a tuple": _("a tuple in a tuple"),
        "a copy in float16": _("a copy in float16"),
        "a comparison with 0": _("a comparison with 0"),
    }.get(name, name)


def memory_recorder_cases(make):  # 5.2's cases: a tuple-valued call, other dtypes, no tensor
    dtype = make.dtype()
    model = make.model(ops=["relu", "sigmoid", "add", "mul", "linear"], must=["linear"])
    gm = rename_inputs(make, symbolic_trace(model.to(dtype)))
    graph, output = gm.graph, gm.graph.output_node()
    values = [node for node in graph.nodes if node.op.startswith("call_")]
    pair, others = make.each(list(PAIRS)), make.rng.sample(list(OTHERS), 2)
    no_tensor = make.choice(list(NO_TENSOR))
    with graph.inserting_before(output):
        tuple_node = PAIRS[pair](graph, make.choice(values))
        extra = [graph.call_function(operator.getitem, (tuple_node, make.integer(0, 1)))]
        extra += [OTHERS[name](graph, make.choice(values)) for name in others]
        extra.append(NO_TENSOR[no_tensor](graph, make.choice(values)))
        # a tensor of no elements, v[0:0]: a tensor all the same, of 0 bytes
        extra.append(graph.call_function(operator.getitem, (make.choice(values), slice(0, 0))))
        weight = next(name for name, _p in gm.named_parameters() if name.endswith("weight"))
        extra.append(graph.call_method("sum", (graph.get_attr(weight),)))  # a weight fetched
        extra.append(graph.call_method("sum", (graph.get_attr(_buffer_of(make, gm, dtype)),)))
    output.args = ((output.args[0], *extra),)
    gm.recompile()
    batch = make.integer(1, 5)
    added = [_extra_label(name) for name in (pair, *others, no_tensor)] + [_("an empty slice")]
    make.note(
        _("{dtype}, a batch of {size}; after the model: {added}").format(
            dtype=dtype, size=batch, added=listing(added)
        )
    )
    return gm, make.input_for(model, batch=batch, dtype=dtype)


def _buffer_of(make, gm, dtype):  # a buffer of gm's own, no Parameter: a get_attr fetches it too
    name = f"running_{make.word()}"
    while hasattr(gm, name):
        name += "_"
    gm.register_buffer(name, make.tensor(make.integer(2, 4), dtype=dtype))
    return name


def memory_recorder_run(answer, gm, example):
    # the result, the recorded bytes, whether gm's nodes stayed as they were, whether the
    # recorder's run() ran gm's own nodes (not a copy's, not ShapeProp's)
    metas = [sorted(node.meta) for node in gm.graph.nodes]
    recorder = answer.MemoryRecorder(gm)
    with nodes_interpreted() as ran:  # by any Interpreter's run: the recorder's, or one it runs
        result = recorder.run(example)
    kept = metas == [sorted(n.meta) for n in gm.graph.nodes]
    own = {id(node) for node in gm.graph.nodes}  # and no other graph's: ShapeProp on a copy,
    # run beside the recorder's own run, measures for it; nor torch's ShapeProp on gm itself,
    # its tensor_meta read and removed (red team redP): gm's nodes run by Interpreters of the
    # answer's own classes only (the recorder, or one it hands gm to)
    runs = zip(ran, ran.runners, strict=True)
    by_torch = any(type(runner).__module__.startswith("torch") for _node, runner in runs)
    measured = every_node_of(gm, ran) and all(id(node) in own for node in ran) and not by_torch
    return result, recorder.bytes_by_node, kept, measured


# ----------------------------------------------------------------------------- try it 5.3

THREE_FORMS = [s for s in UNARY["relu"] if s.target is not F.relu]  # torch.relu, .relu(), nn.ReLU
# and the function and the module given their input by keyword: torch.relu(input=x), act(input=x)
FORMS = THREE_FORMS + [by_keyword(s) for s in THREE_FORMS if s.kind != "method"]


def relu_to_gelu_cases(make):  # 5.3's cases: a ReLU form, ops that are not ReLU, names that lie
    model = make.model(
        ops=["relu", "leaky_relu", "relu6", "sigmoid", "add", "linear"],
        must=["relu", make.each(["leaky_relu", "relu6", "linear"])],
        spellings={
            "relu": [FORMS[make.each(range(len(FORMS)))]],
            # of each run's two cases that must hold relu6, one holds nn.ReLU6, a module whose
            # class name begins with "ReLU", and one F.relu6, whose name holds "relu"
            "relu6": [s for s in UNARY["relu6"] if s.kind == make.each(["module", "function"])],
        },
        decoys=["relu", "act", "relu_1"],
    )
    dtype = make.dtype()  # float32 and float64 in every run: GELU in the graph's own dtype
    # a ReLU node named after a word, a tanh named relu: names are labels, op and target decide
    gm = names_that_mislead(make, symbolic_trace(model.to(dtype)), _relu_called, "relu")
    return gm, make.input_for(model, dtype=dtype)


def _relu_called(node):  # a ReLU function or method node, known by its op and target
    return (node.op, node.target) in (("call_function", torch.relu), ("call_method", "relu"))


def _flat_values(result):  # the values of a tensor, or of the tensors of a tuple, in one tensor
    if isinstance(result, torch.Tensor):
        return result.detach().flatten()
    return torch.cat([_flat_values(item) for item in result])


def relu_to_gelu_tolerances(result):  # one tensor or a tuple of them: tolerances for them all
    return tolerances(_flat_values(result))


def relu_to_gelu_in_float64(result):  # whether the result is judged to float64's precision
    return _flat_values(result).dtype == torch.float64


def relu_to_gelu_run(answer, gm, x):
    # the result, whether it ran gm itself, the gradient it gives x, whether gm still computes
    # what it computed before the run, whether gm's graph was edited while it ran (then put
    # back), and the modules or module methods set while it ran (redM5: even if put back)
    with torch.no_grad():
        before, graph = gm(x), graph_code(gm)
    interpreter = answer.ReluToGelu(gm)
    with nodes_interpreted(gm) as ran, modules_swapped(gm) as swapped:  # even if put back
        result = interpreter.run(x.requires_grad_())
    gradient = _input_gradient(result, x)
    with torch.no_grad():
        kept = close_enough(gm(x), before, atol=1e-5, rtol=1e-4) and graph_code(gm) == graph
    runs_gm = interpreter.module is gm and ran.gave(gm, result)
    return result, runs_gm, gradient, kept, ran.edited, sorted(set(swapped))


# ----------------------------------------------------------------------------- try it 5.4

PINS = ["nothing known", "a node and what only it reads", "a node read after a needed one"]
PINS += ["two nodes"]


def _pin_label(kind):  # each of PINS as the learner reads it
    return {
        PINS[0]: _("nothing known"),
        PINS[1]: _("a node and what only it reads"),
        PINS[2]: _("a node read after a needed one"),
        PINS[3]: _("two nodes"),
    }[kind]


def _only_for(node):  # the call_ nodes whose one reader is node
    return [i for i in node.all_input_nodes if i.op.startswith("call_") and len(i.users) == 1]


def _chain_fed(nodes):  # nodes with an input only they read, itself with an input only it reads
    return [n for n in nodes if any(_only_for(i) for i in _only_for(n))]


def _pinned_nodes(make, gm, ints):  # which nodes a case gives values for (no tensor for an int)
    nodes = [n for n in gm.graph.nodes if n.op.startswith("call_") and n.name not in ints]
    order = {node: index for index, node in enumerate(gm.graph.nodes)}
    kind = make.each(PINS)
    if kind == PINS[0]:
        return kind, []
    if kind == PINS[1]:  # a node fed by a chain of 2 or more nodes that nothing else reads
        return kind, [make.choice(_chain_fed(nodes) or nodes)]
    if kind == PINS[2]:  # a node with a value computed before it and read after it
        spans = [(order[o], max(order[user] for user in o.users)) for o in nodes]
        late = [n for n in nodes if any(s < order[n] < e for s, e in spans)]
        return kind, [make.choice(late or nodes)]
    return kind, make.rng.sample(nodes, 2)


def _read_by_keyword(make, gm):  # values only a keyword, a list, a slice or a dict reads
    graph, output = gm.graph, gm.graph.output_node()
    values = [node for node in graph.nodes if node.op.startswith("call_")]
    with graph.inserting_before(output):
        by_keyword = graph.call_function(torch.neg, (make.choice(values),))
        in_list = graph.call_function(torch.tanh, (make.choice(values),))
        added = graph.call_function(torch.add, (make.choice(values),), {"other": by_keyword})
        listed = graph.call_function(torch.cat, ([in_list, added],))
        half = graph.call_function(floordiv, (graph.call_method("size", (listed, -1)), 2))
        sliced = graph.call_function(getitem, (listed, (..., slice(None, half))))
        in_dict = graph.call_function(torch.abs, (make.choice(values),))
    output.args = ((output.args[0], sliced, {"held": in_dict}),)  # as a model returns a dict
    gm.recompile()
    make.note(
        _("{by_keyword} is read by keyword only, {in_list} inside a list only").format(
            by_keyword=by_keyword.name, in_list=in_list.name
        )
    )
    make.note(
        _("{half} is read inside a slice only, {in_dict} inside a dict only").format(
            half=half.name, in_dict=in_dict.name
        )
    )
    return gm


def run_from_cases(make):  # 5.4's cases: drawn graphs, nodes given values, what ran recorded
    dtype, ran = make.dtype(), []
    ops = ["relu", "sigmoid", "add", "mul", "linear"]
    kind, pinned = None, []
    while kind is None or kind == PINS[1] and not _chain_fed(pinned):
        make.notes.clear()
        model = make.model(ops=ops, must=["linear", "add"], length=(5, 9))
        traced = symbolic_trace(cases.tag_modules(model).to(dtype))
        read = _read_by_keyword(make, traced)
        ints = [n.name for n in read.graph.nodes if n.target in ("size", floordiv)]
        ints.append(_unread_node(make, read))  # never given: it is what a case must skip
        gm = cases.record_calls(read, ran)
        kind, pinned = _pinned_nodes(make, gm, ints)
    batch = make.integer(1, 4)
    known = {node.name: make.tensor(batch, model.width, dtype=dtype) for node in pinned}
    make.note(
        _("{kind}: {known}, {dtype}").format(
            kind=_pin_label(kind), known=sorted(known), dtype=dtype
        )
    )
    inputs = [make.input_for(model, batch=batch, dtype=dtype)]
    if make.each(["one input", "a first input that nothing reads"]) != "one input":
        unread = _unread_first_input(make, gm)  # run() hands out inputs one per placeholder
        inputs.insert(0, make.tensor(batch, model.width, dtype=dtype) * 100)
        make.note(_("gm's first input, {unread}, is read by no node").format(unread=unread))
    return gm, known, inputs, ran


def _unread_node(make, gm):  # a node no node reads, which traced code keeps: the output
    # does not need it, so it must not run (a rule that skips only nodes whose readers are all
    # skipped never skips it)
    graph, output = gm.graph, gm.graph.output_node()
    with graph.inserting_before(output):
        tensors = [n for n in graph.nodes if n.op.startswith("call_")]
        value = make.choice([n for n in tensors if n.target not in ("size", floordiv)])
        unread = graph.call_function(torch.sin, (value,))
    gm.recompile()
    make.note(_("{unread} is read by no node").format(unread=unread.name))
    return unread.name


def _unread_first_input(make, gm):  # a new first placeholder, which no node reads
    with gm.graph.inserting_before(next(iter(gm.graph.nodes))):
        unread = gm.graph.placeholder(make.word(avoid=[node.name for node in gm.graph.nodes]))
    gm.recompile()
    return unread.name


def run_from_outcome(answer, gm, known, inputs, ran):
    # the result, what ran, whether gm stayed as it was, the None a node read
    code, graph = gm.code, graph_code(gm)
    ran.clear()
    with cases.modules_run() as modules, torch.no_grad():
        result, none_read = cases.none_reached(answer.run_from, gm, dict(known), *inputs)
    kept = gm.code == code and graph_code(gm) == graph
    return result, sorted(ran + [f"self.{path}" for path in modules]), kept, none_read
