"""What chapter 7's later checkpoints draw and run (7.1 to 7.4: fxcourse.export_cases).

    for case in check.cases(module_trees, count=5):      # try it 7.5: (model, x, paths)
        (mine, unflattened), (wanted, _) = case.both(ops_of_paths(program, paths))
    for case in check.cases(package_cases(folder, tiny_program, package_path, tiny_model)):
        (mine, opened), (wanted, _) = case.both(verdicts_for)   # try it 7.6
    cases = list(check.cases(layer_stacks, count=5))     # try it 7.7: (model, x)
    operators_of(joined, calls, number)                  # 7.7: kept and non-core operators

Nothing here holds an answer; the cases are drawn so that each run holds every feature an answer
must handle (make.each).
"""

from __future__ import annotations

import contextlib
import copy
import operator
import os
import shutil
from pathlib import Path
from unittest import mock

import torch
from torch import nn
from torch.export.unflatten import UnflattenedModule

from fxcourse.capture import native_stderr, torch_logs
from fxcourse.cases import case_of
from fxcourse.export_cases import composites_listed_once
from fxcourse.messages import _

# ----------------------------------------------------------------------------- try it 7.5

LEAVES = (  # a drawn layer at width w
    lambda w: nn.Linear(w, w),
    lambda w: nn.ReLU(),
    lambda w: nn.Tanh(),
    nn.LayerNorm,
    lambda w: nn.GELU(),
    lambda w: Sorted(),
)


class Sorted(nn.Module):
    """Each row sorted: aten.sort gives a tuple, so a getitem node picks its values."""

    def forward(self, x):
        return x.sort(dim=-1).values


def _drawn_tree(make, width: int, depth: int = 0) -> nn.Sequential:
    """A Sequential of layers and, two levels deep at most, of Sequentials drawn the same way."""
    parts = []
    for _i in range(make.integer(1, 3)):
        if depth < 2 and make.coin(0.4):
            parts.append(_drawn_tree(make, width, depth + 1))
        else:
            parts.append(make.choice(LEAVES)(width))
    return make.sequential(parts)


class Twice(nn.Module):
    """One layer called twice: each of its operators is computed twice, so every module around
    it lists them twice (a walk over named_modules() meets the layer once)."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(self.layer(x))


def _with_twice(make, model: nn.Sequential, path: str, width: int) -> None:
    """A drawn layer, called twice by a Twice, added to the Sequential at `path` (the root when
    `path` is a leaf): the root and that Sequential are asked about, the layer itself is not."""
    parent = model.get_submodule(path)
    parent = parent if isinstance(parent, nn.Sequential) else model
    children = list(parent.named_children())
    name = next(n for n in ("twice", "repeated", "again") if n not in parent._modules)
    children.insert(make.integer(0, len(children)), (name, Twice(make.choice(LEAVES)(width))))
    parent._modules = dict(children)


def _with_sibling(make, model: nn.Sequential, path: str, width: int) -> str:
    """Beside the module at `path`, a drawn leaf whose name starts with that module's name and
    goes on (`1` and `13`, `block` and `block2`): a path test without a dot boundary takes the
    sibling's operators too. Returns the sibling's path."""
    parent_path, _dot, name = path.rpartition(".")
    parent = model.get_submodule(parent_path)
    sibling = name + (str(make.integer(0, 9)) if name.isdigit() else make.choice(["2", "s", "_"]))
    children = list(parent.named_children())
    at = make.integer(0, len(children))
    children.insert(at, (sibling, make.choice(LEAVES[:3])(width)))  # linear, relu or tanh
    parent._modules = dict(children)  # keeps the others' names (nn.Sequential renumbers)
    return f"{parent_path}.{sibling}" if parent_path else sibling


def module_trees(make):
    """Nested Sequentials, numbered or named, of drawn layers; the paths asked: the whole
    model, its deepest nested Sequential and a drawn leaf, one of which has a sibling whose
    name extends its own, and a layer called twice inside an asked Sequential (in every
    case)."""
    width = make.integer(2, 6)
    model = _drawn_tree(make, width)
    paths = [path for path, _module in model.named_modules()]
    nested = [p for p, m in model.named_modules() if p and isinstance(m, nn.Sequential)]
    leaves = [p for p, m in model.named_modules() if not isinstance(m, nn.Sequential)]
    asked = ["", max(nested, key=lambda p: p.count("."), default=make.choice(paths))]
    asked.append(make.choice(leaves or paths))
    _with_sibling(make, model, make.choice([p for p in asked if p] or leaves), width)
    _with_twice(make, model, asked[1], width)
    model = make.parameters_of(model)
    paths = sorted(set(asked))
    make.note(_("a model printed as {model}, paths {paths}").format(model=model, paths=paths))
    return model, make.tensor(make.integer(1, 3), width), paths


def ops_of_paths(program: torch.export.ExportedProgram, paths: list[str]):
    """A function of the answer: its ops_inside for each path, each on a copy of `program` whose
    flat graph holds no nn_module_stack (only torch.export.unflatten, however imported, sees
    it: an answer reading it there never read unflatten's modules), and whether it built one."""

    def ask(answer, *_objects) -> tuple[dict[str, list[str]], bool]:
        built, init, found = [], UnflattenedModule.__init__, {}

        def recorded(self, export_module, *args, **kwargs):
            built.append(True)
            with module_stacks_shown(export_module, stacks):
                init(self, export_module, *args, **kwargs)

        with mock.patch.object(UnflattenedModule, "__init__", recorded):
            for path in paths:
                given = copy.deepcopy(program)
                stacks = {n.name: n.meta.pop("nn_module_stack", None) for n in given.graph.nodes}
                found[path] = answer.ops_inside(given, path)
        return {path: without_getitem(ops) for path, ops in found.items()}, bool(built)

    return ask


@contextlib.contextmanager
def module_stacks_shown(program: torch.export.ExportedProgram, stacks: dict):
    """While the block runs, the program's nodes hold the nn_module_stack in `stacks` (by node
    name); UnflattenedModule copies the graph, so its modules keep them."""
    nodes = [node for node in program.graph.nodes if stacks.get(node.name) is not None]
    for node in nodes:
        node.meta["nn_module_stack"] = stacks[node.name]
    try:
        yield
    finally:
        for node in nodes:
            node.meta.pop("nn_module_stack", None)


def without_getitem(ops):
    """A getitem, which picks one result of an operator, is no operator call of its own: either
    reading of "every ATen operator call" is right, so neither side's list holds one."""
    return [op for op in ops if op != str(operator.getitem)] if isinstance(ops, list) else ops


def ops_by_module_stack(program: torch.export.ExportedProgram, path: str) -> list[str]:
    """The operators whose node.meta["nn_module_stack"] passes through the module at path."""
    calls = [node for node in program.graph.nodes if node.op == "call_function"]
    stacks = [[p for p, _type in n.meta.get("nn_module_stack", {}).values()] for n in calls]
    return sorted(str(n.target) for n, stack in zip(calls, stacks, strict=True) if path in stack)


# ----------------------------------------------------------------------------- try it 7.6


class Narrowed:
    """A loaded package that, with its checks on, accepts batches low..high only."""

    def __init__(self, loader, low: int, high: int):
        self.loader, self.low, self.high, self.checks = loader, low, high, None

    def __getattr__(self, name):
        return getattr(self.loader, name)

    def boxed_run(self, inputs):
        if self.checks is None:  # read at this copy's first run, as the C++ runtime does
            self.checks = not os.environ.get("AOTI_RUNTIME_CHECK_INPUTS", "0").startswith("0")
        rows = inputs[0].shape[0]
        if self.checks and not self.low <= rows <= self.high:
            raise RuntimeError(f"input_handles[0]: dim value {rows} not in {self.low}..{self.high}")
        return self.loader.boxed_run(inputs)


class Altered(nn.Module):
    """The outputs changed by `change`: off past the first row (redF2: a comparison of the
    first row passed), off by rounding, or the rows after the first rolled by one (the same
    sum, mean and sorted values: redL4)."""

    def __init__(self, change):
        super().__init__()
        self.change = change

    def forward(self, x):
        return self.change(x)


_narrowed: dict = {}  # a case's package path -> the batch range its loaded copies accept


def package_cases(folder: str, program, package_path: str, model: nn.Module):
    """A case builder: `package_path`'s package copied under a drawn name in `folder`, with the
    model's own weights, or its outputs off after the first row, moved or off by rounding, or
    narrowed to a range of batches other than `program`'s; or a .pt2 of the exported program.
    Batches inside and outside the range."""

    def package_case(make):
        labels = {"same weights": _("same weights"), "other weights": _("off after the first row")}
        labels |= {"rounding": _("outputs off by rounding"), "rows moved": _("rows moved")}
        labels |= {"narrower range": _("narrower range"), "no package": _("no package")}
        kind = make.each(list(labels))
        batches = [make.integer(2, 64), make.integer(2, 64), make.choice([0, 1])]
        batches.append(make.integer(65, 130))
        path = Path(folder) / f"{make.word()}_{make.integer(0, 10**6)}.pt2"
        path.parent.mkdir(parents=True, exist_ok=True)  # gone after the check: for show_case
        if not path.exists() and kind == "no package":
            torch.export.save(program, path)
        elif not path.exists():
            shutil.copy(package_path, path)
        if kind == "narrower range":  # reasoning from the exported range is wrong here
            low, high = make.integer(3, 8), make.integer(9, 40)
            _narrowed[os.path.realpath(path)] = (low, high)
            batches += [low - 1, make.integer(low, high), make.integer(high + 1, 64)]
        make.rng.shuffle(batches)
        drawn = copy.deepcopy(model)
        off = make.choice([-1, 1]) * make.rng.uniform(0.01, 0.03)  # far beyond rounding (redV)
        changes = {
            "other weights": lambda x: torch.cat([x[:1], x[1:] + off]),
            "rounding": lambda x: x * (1 + 2**-22),  # nonzero float32 outputs 2-4 ulp off
            "rows moved": lambda x: torch.cat([x[:1], x[1:].roll(1, 0)]),
        }
        if kind in changes:
            drawn.append(Altered(changes[kind]))
        make.note(_("{kind}, batches {sizes}").format(kind=labels[kind], sizes=batches))
        preset = make.each([None, "0"])  # a learner's shell may set it (redN5: setdefault)
        if preset:
            make.note(_("AOTI_RUNTIME_CHECK_INPUTS set to 0 before the call"))
        return str(path), drawn, batches, kind, preset

    return package_case


def verdicts_for(answer, path, model, batches: list[int], kind: str, preset: str | None = None):
    """The answer's verdicts (or "failed"), and whether it loaded a package from `path`; each
    side starts unset (a new kernel) or "0" (`preset`), the learner's value back after."""
    learners = os.environ.pop("AOTI_RUNTIME_CHECK_INPUTS", None)
    if preset is not None:
        os.environ["AOTI_RUNTIME_CHECK_INPUTS"] = preset
    loaded, loader = [], torch._C._aoti.AOTIModelPackageLoader

    def recorded(package, *args, **kwargs):  # every way to load a package ends here
        loaded.append(os.path.realpath(package))
        span = _narrowed.get(loaded[-1])
        real = loader(package, *args, **kwargs)
        return Narrowed(real, *span) if span else real

    recorded.load_metadata_from_package = loader.load_metadata_from_package
    torch._C._aoti.AOTIModelPackageLoader = recorded
    try:
        with native_stderr(), torch_logs():  # the C++ runtime's copy of each refusal
            verdicts = answer.package_verdicts(path, model, batches)
    except Exception:  # noqa: BLE001 - failing is right when there is no package
        verdicts = "failed"
    finally:
        torch._C._aoti.AOTIModelPackageLoader = loader
        os.environ.pop("AOTI_RUNTIME_CHECK_INPUTS", None)
        if learners is not None:
            os.environ["AOTI_RUNTIME_CHECK_INPUTS"] = learners
    return verdicts, os.path.realpath(path) in loaded


def unranged_sizes(program, name: str = "tokens") -> list[str]:
    """7.1: the symbolic sizes of input `name` for which the program's range_constraints hold no
    range (the red team's redR: inputs marked with torch._dynamo.mark_dynamic, exported without
    dynamic_shapes; reading their range raised KeyError in the checkpoint's own code)."""
    (node,) = [n for n in program.graph.find_nodes(op="placeholder") if n.name == name]
    symbolic = [size for size in node.meta["val"].shape if isinstance(size, torch.SymInt)]
    return [str(size) for size in symbolic if size.node.expr not in program.range_constraints]


# ----------------------------------------------------------------------------- try it 7.7


class Resampled(nn.Module):
    """Twice as many features, by linear interpolation between neighbours (the operator
    aten.upsample_linear1d, outside core ATen); drawn last in a stack, as it changes the width."""

    def forward(self, x):
        return nn.functional.interpolate(x.unsqueeze(1), scale_factor=2.0, mode="linear")[:, 0]


class Projected(nn.Module):
    """x @ weight: aten.matmul, outside core ATen (a linear's product, without a linear's call),
    which a backend that runs only linear and layer_norm must see lowered."""

    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(width, width))

    def forward(self, x):
        return x @ self.weight


LAYERS = {  # what a drawn model is made of, at width w
    "linear": lambda w: nn.Linear(w, w),
    "layer_norm": nn.LayerNorm,
    "group_norm": lambda w: nn.GroupNorm(2 if w % 4 == 0 else 1, w),  # two channels or more each
    "rms_norm": nn.RMSNorm,
    "silu": lambda w: nn.SiLU(),
    "relu_": lambda w: nn.ReLU(inplace=True),
    "hardswish": lambda w: nn.Hardswish(),
    "hardsigmoid": lambda w: nn.Hardsigmoid(),
    "gelu": lambda w: nn.GELU(),
    "mish": lambda w: nn.Mish(),
    "elu": lambda w: nn.ELU(),
    "matmul": Projected,
}
KEPT_OPS = (torch.ops.aten.linear.default, torch.ops.aten.layer_norm.default)
# Operators outside core ATen named like the backend's (a norm, a linear interpolation): a rule
# keyed on the names "norm" or "linear" keeps them; the backend runs only its two.
NAMESAKES = ("group_norm", "rms_norm", "resampled")


def layer_stacks(make):
    """Drawn layers, in every run each of the backend's two operators, each of five operators
    outside core ATen (matmul among them: a table that keeps it as a linear fails), and each of
    three whose names are like the backend's but which it does
    not run (NAMESAKES: GroupNorm, RMSNorm, a linear interpolation)."""
    width = make.integer(2, 8)
    kinds = [make.choice(list(LAYERS)) for _i in range(make.integer(0, 2))]
    kinds.append(make.each(["silu", "hardswish", "hardsigmoid", "mish", "matmul"]))
    namesake = make.each(NAMESAKES)
    if namesake in LAYERS:
        kinds.append(namesake)
    make.rng.shuffle(kinds)
    kinds.insert(make.integer(0, len(kinds) - 1), make.each(["linear", "layer_norm"]))
    if kinds[0] == "relu_":  # an in-place op on the input itself is another lesson (7.3)
        kinds[0] = "elu"
    layers = [LAYERS[kind](width) for kind in kinds]
    if namesake == "resampled":
        layers.append(Resampled())
    model = make.parameters_of(make.sequential(layers))
    make.note(_("a model printed as {model}").format(model=model))
    return model, make.tensor(make.integer(1, 4), width)


def lowered_summary(inputs: tuple):
    """A function of the answer: its lower_for_backend(program)'s call nodes and its outputs
    on `inputs`; None when it returns no ExportedProgram."""

    def lower(answer, program: torch.export.ExportedProgram):
        with composites_listed_once():
            lowered = answer.lower_for_backend(program)
        if not isinstance(lowered, torch.export.ExportedProgram):
            return None
        calls = [n for n in lowered.graph.nodes if n.op == "call_function"]
        return calls, lowered.module()(*inputs)

    return lower


def operators_of(joined: nn.Module, calls: list, number: int | None):
    """The kept operators case `number` calls, in order, and its operators outside core ATen."""
    targets = [n.target for n in calls if case_of(joined, n) == number]
    kept = [str(target) for target in targets if target in KEPT_OPS]
    others = [t for t in targets if t not in KEPT_OPS and t is not operator.getitem]
    return kept, sorted({str(t) for t in others if torch.Tag.core not in getattr(t, "tags", ())})


# ----------------------------------------------------------------------------- try it 7.4

COMPUTES_NOTHING = {"empty", "new_empty", "empty_strided", "new_empty_strided", "empty_like"}
COMPUTES_NOTHING |= {"zeros", "new_zeros", "zeros_like", "ones", "new_ones", "ones_like", "full"}
COMPUTES_NOTHING |= {"new_full", "full_like", "sym_size", "sym_stride", "sym_numel", "detach"}
COMPUTES_NOTHING |= {"_to_copy", "lift_fresh", "lift_fresh_copy", "clone", "contiguous", "copy"}
COMPUTES_NOTHING |= {"view", "_unsafe_view", "reshape", "slice", "narrow", "select", "unfold"}
COMPUTES_NOTHING |= {"expand", "squeeze", "unsqueeze", "permute", "transpose", "t", "alias"}


def fake_computes(op, k: int, x: torch.Tensor) -> list[str]:
    """The ATen operators that compute values which the fake kernel of the custom op `op` runs,
    as make_fx traces it on fake tensors (making, viewing or copying a tensor computes nothing):
    a fake kernel tells the result's shape, dtype and device, it does not compute the result, as
    the real kernel's code called on fake tensors does (red team redY)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    fake = getattr(op, "_abstract_fn", None)  # what CustomOpDef.register_fake holds
    if fake is None:
        return []
    traced = make_fx(lambda t: fake(t, k), tracing_mode="fake")(x.contiguous())
    targets = [node.target for node in traced.graph.nodes if node.op == "call_function"]
    names = {str(t) for t in targets if getattr(t, "_opname", None) not in COMPUTES_NOTHING}
    return sorted(names)
