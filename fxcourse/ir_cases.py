"""What chapter 2's checkpoints draw and run (fxcourse.cases makes the seeds, the checkpoint cells
compare the learner's answer with the reference answer, fxcourse.reference).

    for case in check.cases(last_reader_cases):          # try it 2.1: (gm,)
    for case in check.cases(unused_module_cases, count=7):  # try it 2.2: (gm,)
        mine, wanted = case.both(unused_modules_answered)
    for case in check.cases(activation_byte_cases):      # try it 2.3: (gm, example)
        mine, wanted = case.both(activation_bytes_and_meta)
    for case in check.cases(nodes_inside_cases(Block)):  # try it 2.4: (gm, path)
    for case in check.cases(clamp_bound_graphs):         # try it 2.5: (gm,)
    non_str_types_listed(items)                          # 2.1, 2.2, 2.4: the types that are no str

The chapter's own Block is an argument: 2.4's models are made of the module the chapter defines.
Nothing here holds an answer; the cases are drawn so that each run holds every feature an answer
must handle (make.each).
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx
import torch.nn.functional as F
from torch import nn
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

from fxcourse.case_checks import graph_state
from fxcourse.cases import (
    PathModel,
    Residual,
    early_reader,
    erase_calls,
    extra_readers,
    modules_run,
    tag_modules,
    trace_with_leaves,
)
from fxcourse.messages import _, listing


def non_str_types_listed(items):  # the names of the types of items other than str, listed
    return listing(sorted({type(item).__name__ for item in items} - {"str"}))


# ----------------------------------------------------------------------------- try it 2.1


def last_reader_cases(make):  # 2.1's cases: drawn graphs, values read in a list, a slice, by name
    ops = ["relu", "sigmoid", "add", "mul", "linear"]
    model = make.model(ops=ops, must=["add", "mul", "linear"])  # a Linear: a weight to read
    recompiled = make.each(["recompiled", "not yet"]) == "recompiled"  # gm.code may be behind
    gm = _read_weight(make, extra_readers(make, fx.symbolic_trace(model)))
    return early_reader(make, gm, recompiled)


def _read_weight(make, gm):  # a get_attr node: a weight of the model, read as a value
    output, weight = gm.graph.output_node(), make.choice([n for n, _p in gm.named_parameters()])
    with gm.graph.inserting_before(output):
        total = gm.graph.call_method("sum", (gm.graph.get_attr(weight),))
    output.args = ((*output.args[0], total),)
    gm.recompile()
    make.note(_("{weight} read by a get_attr node").format(weight=weight))
    return gm


# ----------------------------------------------------------------------------- try it 2.2


class RootOnly(nn.Module):  # a parameter of its own and no submodule: gm's one module is its root
    def __init__(self, width):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * self.gain


def unused_module_cases(make):  # 2.2's cases: leaves called, read, erased, left; shared prefixes
    width = make.integer(2, 5)
    if make.index == 6:  # the last case of every run: no module but the root, which is used
        make.note(_("a model with a parameter of its own and no submodule"))
        return fx.symbolic_trace(RootOnly(width))
    word, body, spare, stats = make.words(4)

    def linear():
        return make.parameters_of(nn.Linear(width, width))

    def childless(*kinds):  # leaves of many types: no rule may list leaves by their type
        return make.choice([*kinds, nn.ReLU, nn.GELU, nn.Identity, nn.Dropout, nn.Softplus])()

    count = make.integer(11, 13)
    layers = [linear() if make.coin() else childless(nn.Tanh) for _layer in range(count)]
    layers[make.integer(3, 9)] = linear()  # a Linear inside body whose weight is read
    layers[2] = nn.Sequential(linear(), childless())  # a container inside body
    holder = Residual(linear())  # a module with a child, and a parameter of its own
    holder.gain = nn.Parameter(make.tensor(width))
    modules = {word: linear(), f"{word}2": linear(), body: make.sequential(layers)}
    modules |= {spare: holder, stats: make.trained_batchnorm(nn.BatchNorm1d(width))}
    named = list(modules[body].named_children())
    inside = [f"{body}.{name}" for name, _layer in named]
    linears = [f"{body}.{name}" for name, layer in named[3:10] if isinstance(layer, nn.Linear)]
    read = make.choice(linears)  # traced into, its call is erased: only the read uses it
    plan = [("call", body), ("read", f"{read}.weight"), ("call", word)]
    # spare's own parameter is read and its child's call erased: that read uses no leaf; stats is
    # used only by a read of its buffer (added after tracing: PathModel's read bakes one in)
    plan += [("call", f"{spare}.inner"), ("read", f"{spare}.gain"), ("call", stats)]
    erased = [f"{spare}.inner", stats]
    alike = make.each(["word2 read", "word2 called, then erased", "word erased, word2 read"])
    if alike == "word2 called, then erased":
        plan.append(("call", f"{word}2"))
        erased.append(f"{word}2")
    else:  # names alike: a read of word2.weight is no use of word
        plan.append(("read", f"{word}2.weight"))
        erased += [word] * (alike == "word erased, word2 read")
    # body kept whole by a custom tracer, or traced into and some calls erased by a pass that
    # may not have recompiled yet (gm.code then still calls them; the nodes do not); of
    # numbered layers, 1 is never erased and 10 may be; the container at 2 may lose every leaf
    whole, recompiled = make.each([(True, True), (False, True), (False, False)])
    emptied = make.each(["container emptied", "container kept"]) == "container emptied"
    gm = trace_with_leaves(PathModel(modules, make.rng.sample(plan, len(plan))), [body] * whole)
    _read_buffer(gm, f"{stats}.running_mean")
    if not whole:
        erased += make.rng.sample([inside[0], *inside[10:]], make.integer(1, 2)) + [read]
        erased += [f"{inside[2]}.0", f"{inside[2]}.1"] * emptied
    make.note(_how_kept(plan, body, stats, whole, erased, recompiled))
    return erase_calls(gm, erased, recompiled)


def _how_kept(plan, body, stats, whole, erased, recompiled):  # 2.2's description of a case
    kept = _("kept whole by a custom tracer") if whole else _("traced into")
    kept += _("; then {erased} erased").format(erased=erased) if erased else ""
    kept += "" if recompiled else _(" (not recompiled yet)")
    said = _("a model that does {plan}; {body} {kept}; {stats}.running_mean read")
    return said.format(plan=plan, body=body, kept=kept, stats=stats)


def _read_buffer(gm, path):  # a get_attr node of a buffer, whose value the output adds
    output = gm.graph.output_node()
    with gm.graph.inserting_before(output):
        buffer = gm.graph.get_attr(path)
        output.args = (gm.graph.call_function(torch.add, (output.args[0], buffer)),)
    return gm


def unused_modules_answered(answer, gm):
    # the answer, the modules it built or removed, gm's modules after it
    touched, build, remove = [], nn.Module.__init__, nn.Module.__delattr__

    def building(module, *args, **kwargs):  # a copy of gm, trimmed or not, is a module built
        kind = fx.GraphModule if isinstance(module, fx.GraphModule) else type(module)
        touched.append(kind.__name__)
        build(module, *args, **kwargs)

    def removing(module, name):
        if name in module._modules:
            touched.append(name)
        remove(module, name)

    nn.Module.__init__, nn.Module.__delattr__ = building, removing
    try:
        found = answer.unused_modules(gm)
    finally:
        nn.Module.__init__, nn.Module.__delattr__ = build, remove
    return found, touched, [name for name, _module in gm.named_modules()]


# ----------------------------------------------------------------------------- try it 2.3


def activation_byte_cases(make):  # 2.3's cases: 3 dtypes, results of other dtypes, old tensor_meta
    dtype = make.each([torch.float32, torch.float64, torch.bfloat16])
    model = make.model(ops=["relu", "sigmoid", "add", "mul", "exp", "linear"], must=["linear"])
    gm = fx.symbolic_trace(tag_modules(model).to(dtype))  # tagged: a run of a Linear is seen
    graph, output = gm.graph, gm.graph.output_node()
    value = make.choice([node for node in graph.nodes if node.op.startswith("call_")])
    weight = next(name for name, _p in model.named_parameters() if name.endswith("weight"))
    with graph.inserting_before(output):
        extra = [
            graph.call_method("to", (value, torch.float16)),
            graph.call_function(operator.gt, (value, 0)),  # bool
            graph.call_method("argmax", (value,), {"dim": -1}),  # int64
            graph.call_method("int", (value,)),  # int32 and uint8: no table of a few dtypes
            graph.call_method("to", (value, torch.uint8)),  # with one default size serves both
            graph.call_method("size", (value, 0)),  # an int: no tensor_meta
            # a view with 3 times the elements of its storage: shape.numel() counts them all
            graph.call_method("expand", (graph.call_method("unsqueeze", (value, 0)), 3, -1, -1)),
            graph.call_method("sum", (graph.get_attr(weight),)),  # a get_attr node, then a call
        ]
    one_tensor = make.each([False, True])  # then the output node has a tensor_meta too
    output.args = (extra[-1],) if one_tensor else ((output.args[0], *extra),)
    gm.recompile()
    batch = make.integer(1, 5)
    ShapeProp(gm).propagate(make.input_for(model, batch=batch + 2, dtype=dtype))  # an older run
    said = _("{dtype}, a batch of {size}; tensor_meta left by a run on a batch of {older}")
    make.note(said.format(dtype=dtype, size=batch, older=batch + 2))
    make.note(_("the graph returns one tensor") if one_tensor else _("the graph returns a tuple"))
    return gm, make.input_for(model, batch=batch, dtype=dtype)


def activation_bytes_and_meta(answer, gm, example):
    # the count, the shapes ShapeProp left, how many modules ran
    with modules_run() as ran:
        total = answer.activation_bytes(gm, example)
    metas = [node.meta.get("tensor_meta") for node in gm.graph.nodes]
    shapes = [(tuple(m.shape), m.dtype) for m in metas if isinstance(m, TensorMetadata)]
    return total, shapes, len(ran)


# ----------------------------------------------------------------------------- try it 2.4

PATHS = ["a block", "a Linear in a block", "the Sequential", "a block called twice", "unused"]


def _path_label(kind):  # each of PATHS as the learner reads it
    return {
        PATHS[0]: _("a block"),
        PATHS[1]: _("a Linear in a block"),
        PATHS[2]: _("the Sequential"),
        PATHS[3]: _("a block called twice"),
        PATHS[4]: _("unused"),
    }[kind]


def nodes_inside_cases(block_class):
    """2.4's cases, their models made of `block_class` (the chapter's Block)."""

    class ScaledBlock(block_class):  # reads a parameter of its own: a get_attr node in the block
        def __init__(self):
            super().__init__()
            self.gain = nn.Parameter(torch.ones(4))

        def forward(self, x):
            return super().forward(x) * self.gain

    def block_paths(make):  # 2 to 13 Blocks in a Sequential, one called twice, one never
        kind = make.each(PATHS)
        count = make.integer(11, 13) if kind == "a block" else make.integer(2, 4)
        blocks = [ScaledBlock() for _block in range(count)]
        blocks = make.sequential(blocks, numeric=kind == "a block" or None)
        stem, body = make.words(2)
        spare = "fc"  # named as each Block's Linear: "body.1.fc" ends with it, yet is not in it
        plan = [("call", stem), ("call", body)] + [("call", stem)] * (
            kind == "a block called twice"
        )
        # a block called straight from the root: its nodes are made inside that block, not
        # inside the Sequential holding it, which does not run then
        direct = make.choice([name for name, _block in blocks.named_children()])
        plan.insert(make.integer(0, len(plan)), ("call", f"{body}.{direct}"))
        modules = {stem: ScaledBlock(), body: blocks, spare: block_class()}
        gm = fx.symbolic_trace(PathModel(modules, plan))
        inner = make.choice([name for name, _block in blocks.named_children()])
        path = [f"{body}.1", f"{body}.{inner}.fc", body, stem, spare][PATHS.index(kind)]
        said = _("nodes_inside(gm, {path}), {kind}, in a model of {count} blocks in {body}")
        make.note(
            said.format(path=repr(path), kind=_path_label(kind), count=count, body=repr(body))
        )
        make.note(
            _("{path} also called straight from the root").format(path=repr(f"{body}.{direct}"))
        )
        return gm, path

    return block_paths


# ----------------------------------------------------------------------------- try it 2.5

LOOKALIKES = [
    ("call_function", torch.clamp_min),
    ("call_method", "clamp_max"),
    ("call_function", F.hardtanh),
]


LAYOUTS = ["by position", "by keyword", "mixed", "input="]  # input= for torch.clamp only


def clamp_bound_graphs(make):  # 2.5's cases: 4 to 8 clamps, every layout and spelling, lookalikes
    graph = fx.Graph()
    value = graph.placeholder(make.word())
    first = make.each(LAYOUTS)  # each layout opens a case in every run
    for index in range(make.integer(4, 8)):
        low, high = round(make.rng.uniform(-3, 0), 1), make.integer(1, 3)
        low, high = make.choice([(low, high), (low, high), (None, high), (low, None)])
        if index == 0:  # a bound of 0 in every case, which `given or default` would drop
            zero_min = high is None or (low is not None and make.coin())
            low, high = (0.0, high) if zero_min else (low, 0)
        layout = first if index == 0 else make.choice(LAYOUTS)
        method = layout != "input=" and make.coin()
        value = _clamp_node(graph, value, layout, method, low, high)
        if make.coin(0.4):  # an op that is not torch.clamp or .clamp, though it clamps
            value = graph.create_node(*make.choice(LOOKALIKES), (value, -1.0))
    graph.output(value)
    gm = fx.GraphModule(nn.Module(), graph)
    calls = [node.name for node in graph.nodes][1:-1]
    make.note(_("a graph of {count} calls: {calls}").format(count=len(calls), calls=calls))
    return gm


def _clamp_node(graph, value, layout, method, low, high):  # one clamp of value, as layout says
    if layout == "by position":
        args, kwargs = (value, low, high), {}
    elif layout == "by keyword":
        given = {"min": low, "max": high}
        args, kwargs = (value,), {key: v for key, v in given.items() if v is not None}
    elif layout == "mixed":
        args, kwargs = (value, low), {"max": high}
    else:
        args, kwargs = (), {"input": value, "min": low, "max": high}
    op, target = ("call_method", "clamp") if method else ("call_function", torch.clamp)
    return graph.create_node(op, target, args, kwargs)


def asked(question: str):
    """(answer, gm, *args) -> (answer.<question>(gm, *args), whether gm changed while it ran:
    its nodes, their arguments, its code or what node.meta holds; a question reads gm and
    leaves it as it was (red team redM5: 2.4's meta.pop, 2.5's nodes rewritten while read)."""

    def ask(answer, gm, *args):
        before = _question_state(gm)
        result = getattr(answer, question)(gm, *args)
        return result, _question_state(gm) != before

    return ask


def _question_state(gm: fx.GraphModule) -> tuple:
    metas = [(sorted(node.meta), repr(node.meta.get("nn_module_stack"))) for node in gm.graph.nodes]
    return graph_state(gm), gm.code, metas
