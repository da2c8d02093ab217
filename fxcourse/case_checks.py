"""What a checkpoint inspects beside a case's outputs: hooks and overridden forwards, a fold's
layers computed from their weights by hand, whether state stayed, a rounding tolerance, which
modules and nodes a run computed, modules swapped during a run, a `None` that reached an op."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn


def hooks_on(module: nn.Module) -> list[str]:
    """Where `module` runs other code than its modules' own forward: the names of (sub)modules
    with forward hooks or pre-hooks or a method set on the instance, and "global" when a
    module hook is registered for every module. Empty for a module that runs what it says."""
    from torch.nn.modules import module as module_globals

    found = [
        name or "(the module itself)"
        for name, sub in module.named_modules(remove_duplicate=False)
        if sub._forward_hooks or sub._forward_pre_hooks or _overridden(sub)
    ]
    if module_globals._global_forward_hooks or module_globals._global_forward_pre_hooks:
        found.append("global")
    return found


# --- a fold's artifact: its layers' weights applied by hand (chapter 4) ----------------------

_CONVS = {nn.Conv1d: F.conv1d, nn.Conv2d: F.conv2d, nn.Conv3d: F.conv3d}
_DECONVS = {
    nn.ConvTranspose1d: F.conv_transpose1d,
    nn.ConvTranspose2d: F.conv_transpose2d,
    nn.ConvTranspose3d: F.conv_transpose3d,
}
_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
_LAYERS = (nn.Linear, *_CONVS, *_DECONVS)


def hooked_or_overridden(module: nn.Module) -> list[str]:
    """The modules under `module` (by qualified name, "" for itself) that carry a hook or a
    method of their own (set on the object, not the class): what a fold must not add."""
    found = []
    for name, sub in module.named_modules(remove_duplicate=False):
        hooks = sub._forward_hooks or sub._forward_pre_hooks or sub._backward_hooks
        if hooks or _overridden(sub):
            found.append(name)
    return found


def _overridden(module: nn.Module) -> list[str]:
    """The methods of module's class that the object shadows with callables of its own:
    `forward`, or what runs around it (`_call_impl`: red team redK4), or a conv's
    `_conv_forward`."""
    return [k for k, v in vars(module).items() if _shadows_a_method(module, k, v)]


def _shadows_a_method(module: nn.Module, name: str, value) -> bool:
    return callable(value) and hasattr(type(module), name)


def apply_weights(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """`module(x)` computed from its parameters with `torch.nn.functional`, never calling the
    module (so no hook and no overridden forward runs): for exact nn.Linear, Conv*d,
    ConvTranspose*d and eval-mode BatchNorm*d."""
    kind = type(module)
    if kind is nn.Linear:
        return F.linear(x, module.weight, module.bias)
    if kind in _CONVS:
        padding = module.padding
        if module.padding_mode != "zeros":
            x = F.pad(x, module._reversed_padding_repeated_twice, mode=module.padding_mode)
            padding = 0
        args = (module.stride, padding, module.dilation, module.groups)
        return _CONVS[kind](x, module.weight, module.bias, *args)
    if kind in _DECONVS:
        args = (module.stride, module.padding, module.output_padding, module.groups)
        return _DECONVS[kind](x, module.weight, module.bias, *args, module.dilation)
    if _fixed_norm(module):
        return F.batch_norm(
            x, module.running_mean, module.running_var, module.weight, module.bias,
            training=False, eps=module.eps,
        )  # fmt: skip
    raise TypeError(f"apply_weights knows Linear, Conv, ConvTranspose, eval BatchNorm: {kind}")


def _fixed_norm(module: nn.Module) -> bool:
    """An exact BatchNorm*d that normalizes with its running statistics (eval, tracked)."""
    fixed = not module.training and getattr(module, "running_mean", None) is not None
    return type(module) in _NORMS and fixed


def run_by_weights(gm: torch.fx.GraphModule, *args):
    """Run `gm`'s graph node by node, each call of a layer `apply_weights` knows computed from
    its weights; other modules (a BatchNorm on batch statistics too) and functions run as usual:
    what a folded graph computes by its weights, whatever its modules' hooks or `forward`s do."""

    class ByWeights(torch.fx.Interpreter):
        def call_module(self, target, args, kwargs):
            module = self.fetch_attr(target)
            if (type(module) in _LAYERS or _fixed_norm(module)) and not kwargs:
                return apply_weights(module, *args)
            return super().call_module(target, args, kwargs)

    return ByWeights(gm).run(*args)


def same_state(module: nn.Module, fresh: nn.Module) -> bool:
    """Whether `module` still holds what `fresh`, made again from the same seed, holds: the same
    parameter and buffer names, each equal (what a fold that returns a copy must leave alone)."""
    mine, made = module.state_dict(), fresh.state_dict()
    return mine.keys() == made.keys() and all(torch.equal(mine[k], made[k]) for k in mine)


def rounding(expected: torch.Tensor, per_unit: float = 1e-5) -> float:
    """An absolute tolerance for values that differ from `expected` by rounding only: `per_unit`
    for each unit of its largest magnitude (a folded network rounds differently in each layer,
    and a value near zero among large ones keeps the large ones' absolute error)."""
    return per_unit * (1.0 + expected.detach().abs().max().item())


def tolerances(expected: torch.Tensor) -> dict[str, float]:
    """`atol` and `rtol` for values that differ from `expected` by rounding only, in its dtype:
    float32's `rounding` and rtol 1e-4, a million times tighter for float64 (whose rounding is
    about 1e-16), where a float32 tolerance would hide errors of a few millionths."""
    factor = 1e-6 if expected.dtype == torch.float64 else 1.0
    return {"atol": rounding(expected, 1e-5 * factor), "rtol": 1e-4 * factor}


def shared_state(modules: list[nn.Module]) -> list[tuple[int, int]]:
    """The pairs (i, j), i < j, of distinct `modules` that share a parameter or buffer (the
    same tensor storage) or the dicts holding them (as a shallow `copy.copy` of a module does:
    assigning a parameter to one then changes the other): empty when each owns its state."""

    def owned(module: nn.Module) -> set[int]:
        tensors = [*module.parameters(recurse=False), *module.buffers(recurse=False)]
        storages = {t.untyped_storage().data_ptr() for t in tensors if t.numel()}
        return storages | {id(module._parameters), id(module._buffers)}

    held = [owned(module) for module in modules]
    return [
        (i, j)
        for i in range(len(modules))
        for j in range(i + 1, len(modules))
        if modules[i] is not modules[j] and held[i] & held[j]
    ]


# --- what ran: modules and nodes a run called --------------------------------------------------


def tag_modules(model: nn.Module) -> nn.Module:
    """Mark each module of `model` with its qualified name (`fxcourse_path`), which a copy
    (`copy.deepcopy`) keeps: `modules_run` then names a module however it was reached."""
    for path, module in model.named_modules():
        if path:
            module.fxcourse_path = path
    return model


@contextlib.contextmanager
def modules_run() -> Iterator[list[str]]:
    """A list that fills, inside the block, with the `fxcourse_path` of every tagged module
    that runs (a module called twice appears twice), whoever calls it."""
    ran: list[str] = []

    def note(module, args, output):
        if (path := getattr(module, "fxcourse_path", None)) is not None:
            ran.append(path)

    handle = nn.modules.module.register_module_forward_hook(note)
    try:
        yield ran
    finally:
        handle.remove()


@contextlib.contextmanager
def modules_swapped(root: nn.Module | None = None) -> Iterator[list[str]]:
    """A list that fills, inside the block, with the name of every submodule that any module
    has set, replaced or deleted, and of every method set on a module object: an answer that
    swaps a module in for a run and puts it back leaves its module as it found it, and only
    this list tells. With `root`, every module call
    inside the block also compares root's modules with those it held when the block began, which
    catches a swap written straight into a `_modules` dict."""
    swapped: list[str] = []
    set_attr, del_attr = nn.Module.__setattr__, nn.Module.__delattr__
    held = _held_modules(root) if root is not None else {}

    def compare(module, args):
        now = _held_modules(root)
        changed = [p for p in sorted(held.keys() | now.keys()) if held.get(p) is not now.get(p)]
        changed += _overridden(module)  # a method set on the object, in its __dict__ (redM5)
        swapped.extend(path for path in changed if path not in swapped)

    def setting(module, name, value):
        method = _shadows_a_method(module, name, value)  # forward, _call_impl (redM5)
        if isinstance(value, nn.Module) or name in module._modules or method:
            swapped.append(name)
        set_attr(module, name, value)

    def deleting(module, name):
        if name in module._modules or name in _overridden(module):
            swapped.append(name)
        del_attr(module, name)

    nn.Module.__setattr__, nn.Module.__delattr__ = setting, deleting
    hook = None if root is None else nn.modules.module.register_module_forward_pre_hook(compare)
    try:
        yield swapped
    finally:
        nn.Module.__setattr__, nn.Module.__delattr__ = set_attr, del_attr
        if hook is not None:
            hook.remove()


def _held_modules(root: nn.Module) -> dict[str, object]:
    """Every submodule of `root` by path, as its `_modules` dicts hold them now."""
    held, stack = {}, [("", root)]
    while stack:
        prefix, module = stack.pop()
        for name, child in getattr(module, "_modules", {}).items():
            path = f"{prefix}{name}"
            held[path] = child
            stack.append((f"{path}.", child))
    return held


class Interpreted(list):
    """nodes_interpreted's list: every node handed to a `run_node`, in order. `runners` holds,
    at the same places, the Interpreter that ran each; `edited` is True once a node ran while
    the graph watched had other nodes, ops, targets or arguments than when the block began (an
    answer that edits the graph for its run and puts it back leaves no other trace)."""

    def __init__(self) -> None:
        super().__init__()
        self.runners: list = []
        self.values: list = []  # what each run_node returned
        self.edited = False

    def gave(self, gm: torch.fx.GraphModule, result) -> bool:
        """Whether one Interpreter ran every node of gm on values (no Proxy: a Transformer
        only builds another graph, whose code then computes) and its output node gave
        `result` (red team redK4: a Transformer's module called for the result passed)."""
        own, output = {id(n) for n in gm.graph.nodes}, gm.graph.find_nodes(op="output")[0]
        for runner in {id(r): r for r in self.runners}.values():
            ran = [
                (n, v)
                for n, r, v in zip(self, self.runners, self.values, strict=True)
                if r is runner
            ]
            symbolic = any(isinstance(v, torch.fx.Proxy) for _n, v in ran)
            gave = any(n is output and _same_leaves(v, result) for n, v in ran)
            if own <= {id(n) for n, _v in ran} and gave and not symbolic:
                return True
        return False


def _same_leaves(one, other) -> bool:
    ones, others = torch.utils._pytree.tree_leaves(one), torch.utils._pytree.tree_leaves(other)
    return len(ones) == len(others) and all(map(_same_value, ones, others))


def _same_value(one, other) -> bool:
    if one is other:
        return True
    tensors = isinstance(one, torch.Tensor) and isinstance(other, torch.Tensor)
    return tensors and one.shape == other.shape and torch.equal(one.detach(), other.detach())


@contextlib.contextmanager
def nodes_interpreted(watched_gm: torch.fx.GraphModule | None = None) -> Iterator[Interpreted]:
    """An `Interpreted` list that fills, inside the block, with every node that any
    `Interpreter.run` hands to its `run_node` (an override included), whichever Interpreter
    runs: an answer that runs a copy of the graph, or the copy's generated code, never hands
    over the original's nodes. With `watched_gm`, each node run also compares watched_gm's
    nodes, their ops, targets and arguments with those it had when the block began."""
    ran = Interpreted()
    run = torch.fx.Interpreter.run
    state = None if watched_gm is None else graph_state(watched_gm)

    def watched(self, *args, **kwargs):
        own = self.run_node

        def run_node(node):
            ran.append(node)
            ran.runners.append(self)
            ran.edited = ran.edited or (state is not None and graph_state(watched_gm) != state)
            at = len(ran.values)
            ran.values.append(None)  # its place, before any Interpreter run_node may start
            ran.values[at] = own(node)
            return ran.values[at]

        self.run_node = run_node
        try:
            return run(self, *args, **kwargs)
        finally:
            self.run_node = own

    torch.fx.Interpreter.run = watched
    try:
        yield ran
    finally:
        torch.fx.Interpreter.run = run


def graph_state(gm: torch.fx.GraphModule) -> list[tuple]:
    """gm's nodes, ops and targets, and its nodes' argument tuples by identity: setting a node's
    args or kwargs, even back to what they held, makes new ones."""
    return [(id(n), n.op, n.target, id(n.args), id(n.kwargs)) for n in gm.graph.nodes]


def every_node_of(gm: torch.fx.GraphModule, ran: list) -> bool:
    """Whether every node of gm's own graph is among `ran` (nodes_interpreted's list)."""
    seen = {id(node) for node in ran}
    return all(id(node) in seen for node in gm.graph.nodes)


def dotted_module_names(module: nn.Module) -> list[str]:
    """The names, dots and all, under which `module` or a submodule holds a child: what
    `setattr(gm, "block.fc", layer)` makes, a child of the root that the target "block.fc"
    never reaches (it names "fc" inside "block")."""
    return sorted(name for sub in module.modules() for name in sub._modules if "." in name)


def record_calls(gm: torch.fx.GraphModule, ran: list[str]) -> torch.fx.GraphModule:
    """Each call_function and call_method node of `gm` becomes a call of a function that
    appends the node's name to `ran`, then computes what the node computed; call_module nodes
    stay (see `modules_run`). So `ran` says which of these nodes a run computed, however it ran
    the graph (an Interpreter, the generated code, a copy)."""
    for node in list(gm.graph.nodes):
        if node.op in ("call_function", "call_method"):
            node.target = _recorded(node.name, node.op, node.target, ran)
            node.op = "call_function"
    gm.recompile()
    return gm


def _recorded(name: str, op: str, target, ran: list[str]) -> Callable:
    def call(*args, **kwargs):
        ran.append(name)
        if op == "call_method":
            return getattr(args[0], target)(*args[1:], **kwargs)
        return target(*args, **kwargs)

    call.__name__ = call.__qualname__ = f"{name}_recorded"
    return call


def none_reached(fn: Callable, *args, **kwargs) -> tuple[object, str | None]:
    """(fn(*args, **kwargs), None); or, when it failed because an op received `None` where a
    value belongs (a TypeError or AttributeError that names NoneType, as an override that
    returns nothing causes), (None, the error's first line): what a checkpoint turns into a
    question rather than a traceback."""
    try:
        return fn(*args, **kwargs), None
    except (TypeError, AttributeError) as error:
        if "NoneType" not in str(error):
            raise
        return None, str(error).strip().splitlines()[0]


def graph_code(gm: torch.fx.GraphModule) -> str:
    """The code gm's graph makes now: an edit shows here even where gm.code, not recompiled,
    still runs the graph as it was."""
    return gm.graph.python_code(root_module="self").src


def runs_its_graph(gm: torch.fx.GraphModule) -> bool:
    """Whether gm runs the code of its graph as it is now (recompiled after its last edit)."""
    return gm.code == graph_code(gm)


def near_in_float32(mine, wanted) -> bool:
    """Whether `mine` is `wanted` within float32's rounding: a float64 result some step of which
    ran in float32 (the hint then asks about dtypes; for a larger error it would mislead)."""
    from fxcourse.reference import close_enough

    return close_enough(mine, wanted, atol=1e-5, rtol=1e-4)
