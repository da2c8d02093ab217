"""What chapter 4's checkpoints draw and run (fxcourse.cases makes the seeds, the checkpoint cells
compare the learner's answer with the reference answer, fxcourse.reference). Every checkpoint
runs its tiny cases on one thread (`with one_thread_for_tiny_cases()`) and asks
`hooked_or_overridden(mine)` and `states_unchanged((given, fresh), ...)`.

    for case in check.cases(pre_bn_convs):                    # try it 4.1: (bn, conv, x)
        case.both(pre_bn_fold_and_given)
        conv_settings_kept(mine, conv)
        layer_outputs_by_weights(mine, wanted, x)             # (mine, wanted's, tolerances)
    for case in check.cases(models_sharing_modules):          # try it 4.2: (gm, x)
        case.both(unshared_and_output)                        # (..., in_place)
        modules_called_by_nodes(mine)
        modules_share_parameters(modules)
        fuse_conv_bn_refuses(mine, wanted)                     # (folded, refused)
        folded_output_and_tolerances(folded, x, before)
    for case in check.cases(linear_bn_models, count=7):      # try it 4.3: (model, gm, x)
        case.both(fused_and_model)
        batchnorms_called(mine), non_batchnorm_module_types(mine)
        other_parameter_dtypes(mine, x)                        # listed, "" when none
        graph_outputs_by_weights(mine, wanted, x)             # (mine, wanted's, tolerances)
    for case in check.cases(deconvs_with_batchnorms):         # try it 4.4: (deconv, bn, x)
        case.both(deconv_fold_and_given)
        deconv_settings_kept(mine, deconv)
        layer_outputs_by_weights(mine, wanted, x)

The chapter's own fusion pass, fuse_conv_bn, is fxcourse.fusion's. Nothing here holds an answer;
the cases are drawn so that each run holds every feature an answer must handle (make.each).
"""

from __future__ import annotations

from collections import Counter, OrderedDict

import torch
import torch.fx as fx
from torch import nn

from fxcourse.case_checks import (
    apply_weights,
    dotted_module_names,  # noqa: F401 - chapter 4's check cells import these two from here
    hooked_or_overridden,  # noqa: F401
    run_by_weights,
    same_state,
    shared_state,
    tolerances,
)
from fxcourse.case_edits import moved_into_a_block
from fxcourse.case_models import PathModel
from fxcourse.fusion import fuse_conv_bn
from fxcourse.measure import one_thread
from fxcourse.messages import _, listing

BATCHNORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)  # as the chapter's own
SHARED_NOT_ONLY_CONV = [("both", "dilation"), ("both", "padding_mode"), *[("batchnorm", "")] * 2]


def one_thread_for_tiny_cases():  # tiny cases: one thread is enough
    return one_thread()


def states_unchanged(*given_and_fresh):  # each given module still holds what its fresh copy holds
    return all(same_state(given, fresh) for given, fresh in given_and_fresh)


def layer_outputs_by_weights(mine, wanted, x):  # both layers' outputs from their weights
    with torch.no_grad():
        right = apply_weights(wanted, x)
        return apply_weights(mine, x), right, tolerances(right)


def graph_outputs_by_weights(mine, wanted, x):  # both graphs' outputs, each layer by its weights
    with torch.no_grad():
        right = run_by_weights(wanted, x)
        return run_by_weights(mine, x), right, tolerances(right)


# ----------------------------------------------------------------------------- try it 4.1

CONV_SETTINGS = ("kernel_size", "stride", "padding", "dilation", "groups", "padding_mode")


def pre_bn_convs(make):  # 4.1's cases: a BatchNorm, then a conv of 1, 2 or 3 dimensions
    dims, dtype, large_eps = make.each([1, 2, 3]), make.dtype(), make.each([True, False])
    # each run: a 2-D and a 3-D conv whose weight is laid out channels-last, as a model moved
    # with .to(memory_format=torch.channels_last) holds it (no view flattens such a weight)
    last = make.each(["contiguous", "channels-last"]) == "channels-last" and dims > 1
    channels, out = make.integer(2, 6), make.integer(2, 6)
    # every run: affine=False BatchNorms, which hold no weight or bias (s = 1 / sqrt(var + eps))
    affine = make.each(["affine", "not affine"]) == "affine"
    bn = BATCHNORMS[dims - 1](channels, affine=affine)
    with_bias = make.each(["bias", "no bias"]) == "bias"  # every run: a conv without a bias
    kernel, stride, dilation = make.integer(1 + last, 3), make.integer(1, 2), make.integer(1, 2)
    conv = getattr(nn, f"Conv{dims}d")(
        channels, out, kernel, stride=stride, dilation=dilation, bias=with_bias
    )
    bn = make.eps_that_matters(make.trained_batchnorm(bn), large_eps)
    note = _("{batchnorm}(affine={affine}, eps={eps:.2g}) -> {conv}, {dtype}")
    make.note(
        note.format(
            batchnorm=type(bn).__name__, affine=bn.affine, eps=bn.eps, conv=conv, dtype=dtype
        )
    )
    bn, conv = bn.eval().to(dtype), make.parameters_of(conv).to(dtype)
    if last:  # a kernel of 2 or more: a 1 x 1 weight is contiguous in either layout
        conv = conv.to(memory_format=[torch.channels_last, torch.channels_last_3d][dims - 2])
        make.note(_("the conv's weight is laid out channels-last"))
    return bn, conv, make.tensor(2, channels, *[make.integer(5, 7)] * dims, dtype=dtype)


def pre_bn_fold_and_given(answer, bn, conv, x):  # the fold, and the pair it was given
    return answer.fold_pre_bn(bn, conv), bn, conv


def conv_settings_kept(mine, conv):  # every setting of conv, the folded conv's too
    return all(getattr(mine, name) == getattr(conv, name) for name in CONV_SETTINGS)


# ----------------------------------------------------------------------------- try it 4.2


def models_sharing_modules(make):  # 4.2's cases: a conv, a BatchNorm or both, each called twice
    dims, channels = make.each([1, 2, 3]), make.integer(2, 5)
    # every run: each conv setting a copy rebuilt from channels, kernel and padding loses, and a
    # BatchNorm whose eps matters (red team redI3: such rebuilt copies passed every run)
    shared, setting = make.each([("conv", "stride"), ("conv", "groups"), *SHARED_NOT_ONLY_CONV])
    conv_type, bn_type = getattr(nn, f"Conv{dims}d"), BATCHNORMS[dims - 1]

    def conv(kernel, **drawn):
        drawn = {"padding": kernel // 2, **drawn}
        return make.parameters_of(conv_type(channels, channels, kernel, bias=make.coin(), **drawn))

    def batchnorm():
        return make.trained_batchnorm(bn_type(channels))

    first_conv = conv(3, **make.conv_settings(setting, channels))
    first_bn = make.eps_that_matters(batchnorm(), True)
    act = nn.ReLU()  # one ReLU object at every activation, as models often reuse self.act
    layers = [first_conv, first_bn, act]
    if make.coin():  # a block of its own between the two calls
        layers += [conv(1), batchnorm(), act]
    layers.append(first_conv if shared != "batchnorm" else conv(3))
    if shared != "conv" or make.coin():  # the second call feeds a BatchNorm too
        layers.append(first_bn if shared != "conv" else batchnorm())
    if make.each(["called a third time", "called twice"]) == "called a third time":
        layers += [act, first_conv if shared != "batchnorm" else first_bn]
        note = _("the shared {module} called a third time, at the end")
        make.note(note.format(module=type(layers[-1]).__name__))
    model = make.sequential(layers)
    # two cases in three in a block
    if make.each(["at the root", "in a block", "in a block too"]) != "at the root":
        model = nn.Sequential(OrderedDict([(make.word(), model)]))
        make.note(_("the layers sit in a block: their targets are dotted paths"))
    gm = fx.symbolic_trace(model.eval())
    if make.each(["by position", "by keyword"]) == "by keyword":  # as self.bn(input=h) traces
        for node in gm.graph.find_nodes(op="call_module"):
            if isinstance(gm.get_submodule(node.target), BATCHNORMS):
                node.args, node.kwargs = (), {"input": node.args[0]}
        gm.recompile()
        make.note(_("each BatchNorm takes its input by keyword (input=)"))
    shared_calls_by_another_name(make, gm, len(layers), dims)
    name_taken_by_a_module(make, gm)
    return gm, make.tensor(2, channels, *[make.integer(4, 6)] * dims)


def shared_calls_by_another_name(make, gm, layers, dims):  # half the cases: a second call of a
    # module reaches it by another name, of one called twice where there is one: a module
    # called three times keeps its dotted target (redS's copies named by it collide)
    targets = [str(n.target) for n in gm.graph.find_nodes(op="call_module")]
    again = [target for target, count in Counter(targets).items() if count > 1]
    if make.each(["by another name", "by its own name"]) == "by another name":
        target = make.choice([t for t in again if targets.count(t) == 2] or again)
        alias = make.word(avoid=[*targets, *dict(gm.named_children())])  # not the block's name
        gm.add_submodule(alias, gm.get_submodule(target))
        gm.graph.find_nodes(op="call_module", target=target)[-1].target = alias
        gm.recompile()
        make.note(_("'{target}' called again as '{alias}'").format(target=target, alias=alias))
    note = _("{layers} layers, conv{dims}d; modules called twice: {modules}")
    make.note(note.format(layers=layers, dims=dims, modules=", ".join(again)))


def name_taken_by_a_module(make, gm):
    """A module the model already has under a name that a copy might take (the node's name,
    'conv_1', 'conv1', 'conv_copy'), called last: a pass that does not check must not replace it."""
    seen, again = set(), None
    for node in gm.graph.find_nodes(op="call_module"):
        module = gm.get_submodule(node.target)
        again = node if id(module) in seen and again is None else again
        seen.add(id(module))
    suffix = make.each(["node", "_1", "1", "_copy"])  # each once in every run of 6 cases
    name = again.name if suffix == "node" else str(again.target).replace(".", "_") + suffix
    if hasattr(gm, name):
        return
    gm.add_submodule(name, nn.Identity())  # values kept: the fold's tolerances stay as they were
    output = next(iter(reversed(gm.graph.nodes)))
    with gm.graph.inserting_before(output):
        tail = gm.graph.call_module(name, (output.args[0],))
    output.args = (tail,)
    gm.recompile()
    make.note(_("then a module of its own named '{name}'").format(name=name))


def modules_called_by_nodes(gm):  # the module each call_module node calls, in order
    return [gm.get_submodule(node.target) for node in gm.graph.find_nodes(op="call_module")]


def batchnorm_calls(gm):
    return sum(isinstance(module, BATCHNORMS) for module in modules_called_by_nodes(gm))


def unshared_and_output(answer, gm, x):  # firsts: each module's first call, node -> target
    names, firsts = dict(gm.named_modules(remove_duplicate=False)), {}
    for node in gm.graph.find_nodes(op="call_module"):
        firsts.setdefault(id(gm.get_submodule(node.target)), (node.name, node.target))
    with torch.no_grad():
        before = gm(x)
        result = answer.unshare_modules(gm)
        return result, before, x, (names, dict(firsts.values())), result is gm


def modules_share_parameters(modules):  # the pairs of modules that share a parameter or buffer
    return shared_state(modules)


def fuse_conv_bn_refuses(mine, wanted):  # (mine folded, whether the fold left more BatchNorms)
    folded = fuse_conv_bn(mine)
    return folded, batchnorm_calls(folded) != batchnorm_calls(fuse_conv_bn(wanted))


def folded_output_and_tolerances(folded, x, before):  # its output by weights, and the rounding
    return run_by_weights(folded, x), tolerances(before)


# ----------------------------------------------------------------------------- try it 4.3


def linear_bn_models(make):  # 4.3's cases: Linear -> BatchNorm1d pairs, safe and unsafe
    # each refusal once with 2-D Linear outputs, where nothing else refuses the pair
    layout, twist = make.each(
        [("(N, C)", "again"), ("(N, C)", "untracked"), ("flattened", "read")]
        + [("flattened", "alias"), ("(N, C, L)", "alone"), ("(N, C)", "weight read")]
        + [("(N, C)", "bias read")]
    )
    width, dtype, large_eps = make.integer(3, 6), make.dtype(), make.each([True, False])
    keyword = make.each(["by position", "by keyword"]) == "by keyword"  # self.bn(input=h)
    modules, plan = {}, []

    def add(module, by_keyword=False):
        path = str(len(modules)) if make.coin() else f"{make.word()}_{len(modules)}"
        modules[path] = module
        plan.append(("call input=" if by_keyword else "call", path))
        return path

    def pair(in_features, tracked=True, bias=False, first=False):  # Linear, BatchNorm1d, ReLU?
        # the first pair, safe but in one case a run: every run folds a Linear without a bias
        # and a BatchNorm without weight and bias (affine=False)
        bias = make.each(["bias", "no bias"]) == "bias" if first else make.coin(0.7) or bias
        affine = make.each(["affine", "not affine"]) == "affine" if first else make.coin(0.7)
        linear = add(make.parameters_of(nn.Linear(in_features, width, bias=bias)))
        bn = nn.BatchNorm1d(width, affine=affine, track_running_stats=tracked)
        bn = make.eps_that_matters(make.trained_batchnorm(bn), large_eps) if tracked else bn
        add(bn, keyword)
        if make.coin():
            add(nn.ReLU())
        return linear

    if layout == "flattened":  # (N, 2, C) flattened to (N, 2C): a 3-D input, 2-D Linear outputs
        add(nn.Flatten())
    first = pair(2 * width if layout == "flattened" else width, first=True)
    second = pair(width, tracked=twist != "untracked", bias=twist == "bias read")
    twisted_before_tracing(make, twist, second, add, plan, width)
    if make.each(["a third pair", "two pairs"]) == "a third pair":  # a second pair to fold
        pair(width)
    if layout == "(N, C, L)":  # a Flatten after the pairs: their outputs are still 3-D (revA)
        add(nn.Flatten())
    model = PathModel(modules, plan).eval().to(dtype)
    gm = fx.symbolic_trace(model)
    twisted_after_tracing(make, twist, second, gm, len(modules))
    if make.each(["at the root", "in a block"]) == "in a block":
        moved_into_a_block(make, gm, first)
    shape = {"(N, C)": (width,), "(N, C, L)": (width, width), "flattened": (2, width)}[layout]
    eps = _("large eps") if large_eps else _("small eps")
    shape_read = _("flattened (N, 2, C)") if layout == "flattened" else layout
    note = _("input {shape}, {dtype}, {eps}; calls: ").format(
        shape=shape_read, dtype=dtype, eps=eps
    )
    make.note(note + listing(path for _path, path in plan))
    if keyword:
        make.note(_("each pair's BatchNorm takes its input by keyword (input=)"))
    return model, gm, make.tensor(make.integer(2, 5), *shape, dtype=dtype)


def twisted_before_tracing(make, twist, second, add, plan, width):  # calls the plan adds
    if twist == "again":
        plan.append(("call", second))
        add(make.trained_batchnorm(nn.BatchNorm1d(width)))
        make.note(
            _("Linear '{second}' runs again, into a BatchNorm of its own").format(second=second)
        )
    elif twist == "alone":
        add(nn.ReLU())
        add(make.trained_batchnorm(nn.BatchNorm1d(width)))
        make.note(_("a BatchNorm after a ReLU"))
    elif twist == "alias":  # the same Linear object runs again, under a second name
        plan.append(("call", second))
        add(make.trained_batchnorm(nn.BatchNorm1d(width)))
    elif twist == "untracked":
        note = _("the BatchNorm after Linear '{second}' keeps no running statistics")
        make.note(note.format(second=second))


def twisted_after_tracing(make, twist, second, gm, count):  # nodes the traced graph gets
    if twist == "read":  # the second Linear's output read again, beside its BatchNorm
        linear_node = gm.graph.find_nodes(op="call_module", target=second)[0]
        bn_node = next(iter(linear_node.users))
        with gm.graph.inserting_after(bn_node):
            both = gm.graph.call_function(torch.add, (bn_node, linear_node))
        bn_node.replace_all_uses_with(both, delete_user_cb=lambda user: user is not both)
        gm.recompile()
        note = _("the output of Linear '{second}' is read beside its BatchNorm")
        make.note(note.format(second=second))
    elif twist == "alias":
        alias = f"{make.word()}_{count}"
        gm.add_submodule(alias, gm.get_submodule(second))
        gm.graph.find_nodes(op="call_module", target=second)[-1].target = alias
        gm.recompile()
        note = _("Linear '{second}' runs again as '{alias}', into a BatchNorm of its own")
        make.note(note.format(second=second, alias=alias))
    elif twist.endswith(" read"):  # a get_attr node reads the second Linear's weight or bias
        read = f"{second}.{twist.split()[0]}"  # (section 4.5: any of its parameters)
        read_weight_too(gm, read)
        note = _("a get_attr node reads '{read}' too: the output adds its sum")
        make.note(note.format(read=read))


def read_weight_too(gm, path):  # the graph's output plus the sum of the parameter at path
    output = gm.graph.output_node()
    with gm.graph.inserting_before(output):
        total = gm.graph.call_method("sum", (gm.graph.get_attr(path),))
        output.args = (gm.graph.call_function(torch.add, (output.args[0], total)),)
    gm.recompile()


def fused_and_model(answer, model, gm, x):
    with torch.no_grad():
        return answer.fuse_linear_bn(gm, x), model


def calls_in(gm, batchnorms):  # the targets of the BatchNorm calls, or the other modules' types
    called = [(n.target, gm.get_submodule(n.target)) for n in gm.graph.find_nodes(op="call_module")]
    picked = [(t, m) for t, m in called if isinstance(m, BATCHNORMS) == batchnorms]
    return [t if batchnorms else type(m) for t, m in picked]


def batchnorms_called(gm):  # the targets of the BatchNorm calls, in order
    return calls_in(gm, batchnorms=True)


def non_batchnorm_module_types(gm):  # the other modules' types, in order
    return calls_in(gm, batchnorms=False)


def other_parameter_dtypes(mine, x):  # the dtypes of mine's parameters that are not x's, listed
    return listing(sorted({str(p.dtype) for p in mine.parameters()} - {str(x.dtype)}))


# ----------------------------------------------------------------------------- try it 4.4

DECONV_SETTINGS = ("kernel_size", "stride", "padding", "output_padding", "dilation", "groups")


def deconvs_with_batchnorms(make):  # 4.4's cases: ConvTranspose 1-3d with groups, then a BN
    dims, dtype, large_eps = make.each([1, 2, 3]), make.dtype(), make.each([True, False])
    # every run: groups of one input channel and of two, of 1, 2 and 3 output channels (where a
    # wrong order of the input channels, or of bn's channels across the groups, shows)
    groups, per_group = make.each([(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)])
    stride, dilation = make.integer(1, 2), make.integer(1, 2)
    deconv = getattr(nn, f"ConvTranspose{dims}d")(
        groups * per_group, groups * int(make.each(["1", "2", "3"])), make.integer(1, 3),
        stride=stride, padding=make.integer(0, 1), output_padding=make.integer(0, stride - 1),
        groups=groups, bias=make.each(["bias", "no bias"]) == "bias", dilation=dilation,
    )  # fmt: skip
    # every run: affine=False BatchNorms, which hold no weight or bias (s = 1 / sqrt(var + eps))
    affine = make.each(["affine", "not affine"]) == "affine"
    bn = BATCHNORMS[dims - 1](deconv.out_channels, affine=affine)
    bn = make.eps_that_matters(make.trained_batchnorm(bn), large_eps)
    note = _("{deconv} -> {batchnorm}(affine={affine}, eps={eps:.2g}), {dtype}")
    said = {"deconv": deconv, "batchnorm": type(bn).__name__, "affine": bn.affine, "eps": bn.eps}
    make.note(note.format(**said, dtype=dtype))
    deconv = make.parameters_of(deconv).eval().to(dtype)
    x = make.tensor(2, deconv.in_channels, *[make.integer(3, 5)] * dims, dtype=dtype)
    return deconv, bn.eval().to(dtype), x


def deconv_fold_and_given(answer, deconv, bn, x):  # the fold, and the pair it was given
    with torch.no_grad():
        return answer.fold_deconv_bn(deconv, bn), deconv, bn


def deconv_settings_kept(mine, deconv):  # every setting of deconv, the folded layer's too
    return all(getattr(mine, name) == getattr(deconv, name) for name in DECONV_SETTINGS)
