"""What chapter 8's checkpoints draw and run (fxcourse.cases makes the seeds, the checkpoint cells
compare the learner's answer with the reference answer, fxcourse.reference).

    for case in check.cases(built_once(resnets), count=5):   # try it 8.1: (model, images)
        (kind, mine), (_, wanted) = case.both(probed)
    for case in check.cases(chains_on(on_accelerator)):      # try it 8.2
        mine, wanted = case.both(split_by_runs)
    for case in check.cases(reshape_chains):                 # try it 8.3: (model, x)
        mine, wanted = case.both(tidied(shape_pass, dead_code))
    for case in check.cases(weights):                        # try it 8.4: (weight,)
        want_q, want_scale = convert_pt2e_stores(prepared)(weight)
    for case in check.cases(built_once(branchy), count=5):   # try it 8.5: (graph, sample)
        mine, wanted = case.both(observed_inputs)             # observers' (dtype, qscheme)

8.4's and 8.5's builders and runners are in fxcourse.quantize_cases (imported here). Nothing here
holds an answer; the cases are drawn so that each run holds every feature an answer
must handle (make.each).
"""

from __future__ import annotations

import operator
from itertools import pairwise

import torch
import torch.fx as fx
from torch import nn
from torch.fx.passes.infra.pass_base import PassResult
from torch.fx.passes.infra.pass_manager import PassManager
from torch.fx.passes.split_module import split_module
from torchvision.models.feature_extraction import DualGraphModule
from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

from fxcourse.messages import _
from fxcourse.quantize_cases import (  # noqa: F401  (chapter 8's cells import them from here)
    Branches,
    branchy,
    convert_pt2e_stores,
    lifted_rows_differ,
    observed,
    observed_biases,
    observed_inputs,
    observer_run_by,
    scale_chooser_run_by,
    steps_apart,
    stored_for,
    stored_weights,
    weights,
)

# ----------------------------------------------------------------------------- try it 8.1


class SlimResNet(ResNet):  # torchvision's ResNet with `thin` times narrower stages: the same names
    def __init__(self, block: type, depths: list[int], classes: int, thin: int) -> None:
        self.thin = thin
        super().__init__(block, depths, num_classes=classes)
        self.fc = nn.Linear(self.inplanes, classes)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        return super()._make_layer(block, planes // self.thin, blocks, stride, dilate)


def resnets(make):
    """ResNets of other depths (one to three blocks in layer2, each in every run), blocks and
    widths, and other image sizes; ReLUs in place (torchvision's) and not, each in every run: in
    place, a block's last ReLU writes into its add's result, so the add node's value is the
    block's output only there."""
    depths = [make.integer(1, 2), make.each([1, 2, 3]), 1, 1]
    block = make.choice([BasicBlock, Bottleneck])
    classes, thin = make.integer(3, 20), make.choice([4, 8, 16])
    with torch.random.fork_rng():  # the same weights whenever the case's seed makes the model
        torch.manual_seed(make.seed)
        model = SlimResNet(block, depths, classes, thin).eval()
    images = make.tensor(make.integer(1, 2), 3, 32, make.choice([32, 48]))
    in_place = make.each([True, False])  # torchvision's ReLUs write into the block's add
    for relu in (module for module in model.modules() if isinstance(module, nn.ReLU)):
        relu.inplace = in_place
    make.note(
        _("a ResNet of {block} blocks {depths}, images {shape}, ReLUs in place: {in_place}").format(
            block=block.__name__, depths=depths, shape=tuple(images.shape), in_place=in_place
        )
    )
    return model, images


def probed(answer, model: nn.Module, images: torch.Tensor):
    """The type of what the answer's probe_for returns (DualGraphModule: built by
    create_feature_extractor; GraphModule: a graph made some other way, such as a traced model
    whose output was edited by hand), and the probe's output on images."""
    probe = answer.probe_for(model)
    if not isinstance(probe, fx.GraphModule):  # not a probe: nothing to run
        return type(probe), None
    kind = DualGraphModule if isinstance(probe, DualGraphModule) else fx.GraphModule
    with torch.no_grad():
        return kind, probe(images)


# ----------------------------------------------------------------------------- try it 8.2


class Steps(nn.Module):  # a chain of drawn steps (Linear, relu, cumsum, flip, add), maybe a branch
    def __init__(self, steps: list[str], width: int, functional: bool, branch=None) -> None:
        super().__init__()
        self.steps, self.functional = steps, functional
        self.branch = branch  # (k, step): the output adds step applied to the k-th value (0: x)
        self.layers = nn.ModuleList(nn.Linear(width, width) for s in steps if s == "linear")

    def step(self, step: str, x, layers):
        if step == "linear":
            return next(layers)(x)
        if step == "relu":
            return torch.relu(x) if self.functional else x.relu()
        if step == "add":
            return x + 1
        return torch.cumsum(x, -1) if step == "cumsum" else x.flip(-1)

    def forward(self, x):
        layers, values = iter(self.layers), [x]
        for step in self.steps:
            values.append(self.step(step, values[-1], layers))
        if self.branch is None:
            return values[-1]
        source, step = self.branch
        return values[-1] + self.step(step, values[source], layers)

    def described(self) -> list[str]:
        if self.branch is None:
            return list(self.steps)
        source, step = self.branch
        return [*self.steps, f"+ {step}({'x' if source == 0 else f'step {source}'})"]


def _machines(on_accelerator) -> dict:
    """Which nodes run on the accelerator in the cases' machines: the chapter's and others."""
    return {
        "modules and the relu method": on_accelerator,
        "modules and cumsum": lambda node: node.op == "call_module" or node.target is torch.cumsum,
        "everything but flip": lambda node: node.target != "flip",
        "add only": lambda node: node.target is operator.add,
    }


def _machine_label(name: str) -> str:
    labels = {"modules and the relu method": _("modules and the relu method")}
    labels |= {"modules and cumsum": _("modules and cumsum")}
    labels |= {"everything but flip": _("everything but flip"), "add only": _("add only")}
    return labels[name]


def _device_changes(model, on_device) -> int:
    sides = [on_device(n) for n in fx.symbolic_trace(model).graph.nodes if "call" in n.op]
    return sum(before != after for before, after in pairwise(sides))


def _changes_where(model, on_device, where) -> bool:
    """Whether some node, where where(node, on_device) holds, is on another device than the node
    before it."""
    calls = [n for n in fx.symbolic_trace(model).graph.nodes if "call" in n.op]
    return any(
        on_device(node) != on_device(before) and where(node, on_device)
        for before, node in pairwise(calls)
    )


def _reads_its_own_device(node, on_device) -> bool:
    """None of the nodes it reads is on another device: a rule looking at inputs only misses
    the change there."""
    return all(on_device(i) == on_device(node) for i in node.all_input_nodes if "call" in i.op)


def _joins_a_branch(node, on_device) -> bool:
    """It reads two values: a rule starting no new number at a join misses it (redH2)."""
    return len(node.all_input_nodes) >= 2


def _drawn_steps(make, branch: bool) -> Steps:
    kinds = ["linear", "relu", "cumsum", "flip", "add"]
    steps = [*(make.choice(kinds) for _i in range(make.integer(3, 9))), "linear"]
    fork = (make.integer(0, len(steps) - 1), make.choice(kinds[1:])) if branch else None
    return Steps(steps, width=make.integer(3, 9), functional=make.coin(), branch=fork)


def chains_on(on_accelerator):
    """A case builder: chains of steps, some with a branch (a step reads an earlier value) that
    changes device, on machines that run other operators (the chapter's `on_accelerator` among
    them); half the cases go back to a device they left. Of the two branched cases in every
    four, one changes device after a branch, the other where the branch joins."""
    machines = _machines(on_accelerator)

    def chains(make):
        machine = make.each(list(machines))
        back, branch = make.each([(b, r) for b in (True, False) for r in (True, False)])
        on_device = machines[machine]
        model = _drawn_steps(make, branch)
        where = _reads_its_own_device if back else _joins_a_branch
        while (back and _device_changes(model, on_device) < 2) or (
            branch and not _changes_where(model, on_device, where)
        ):
            model = _drawn_steps(make, branch)
        make.parameters_of(model)
        make.note(
            _("steps {steps}; on the accelerator: {machine}").format(
                steps=model.described(), machine=_machine_label(machine)
            )
        )
        x = make.tensor(make.integer(1, 4), model.layers[0].in_features)
        return fx.symbolic_trace(model), model, x, on_device

    return chains


def split_by_runs(answer, gm: fx.GraphModule, root: nn.Module, x, on_device):
    """split_module on the answer's numbers: (partitions, the names of those that mix devices,
    the split model's output); split_module's refusal as a string; None for no dict, or one
    keyed by anything but the graph's nodes (names: split_module's lookup raised a bare
    KeyError)."""
    runs = answer.device_runs(gm, on_device)
    if not isinstance(runs, dict) or not all(isinstance(key, fx.Node) for key in runs):
        return None
    try:
        by_device = split_module(gm, root, lambda node: runs[node])
    except RuntimeError as error:  # split_module refuses partitions that need each other
        return str(error)
    # a partition numbered 1.5 is the GraphModule submod_1.5, which add_submodule nests as
    # submod_1 -> 5: the partitions are the GraphModules at any depth, not the children
    parts = [
        (name, part)
        for name, part in by_device.named_modules()
        if isinstance(part, fx.GraphModule) and part is not by_device
    ]
    mixed = []
    for name, part in parts:
        sides = {on_device(n) for n in part.graph.nodes if n.op not in ("placeholder", "output")}
        mixed += [name] if len(sides) > 1 else []
    return len(parts), mixed, by_device(x)


# ----------------------------------------------------------------------------- try it 8.3


class SizeOf:
    """A size a step reads from its input as it runs, as in `x.reshape(x.shape[0], -1)`: traced,
    a node of its own, not a number in the call's arguments."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def __repr__(self) -> str:
        return f"x.shape[{self.dim}]"


class Reshapes(nn.Module):  # x.reshape(*shape) or x.view(*shape) for each drawn (method, shape)
    def __init__(self, steps: list[tuple[str, tuple]], returned: int | None = None) -> None:
        super().__init__()
        self.steps, self.returned = steps, returned  # returned: a step whose result is returned too

    def forward(self, x):
        also = None
        for index, (method, shape) in enumerate(self.steps):
            sizes = [x.shape[size.dim] if isinstance(size, SizeOf) else size for size in shape]
            x = getattr(x, method)(*sizes)
            also = x if index == self.returned else also
        doubled = x.mul(2)  # a method that keeps the shape and is no reshape: a pass must leave it
        return doubled if also is None else (doubled, also)


# every step of a settled chain changes the shape: tall <-> flat keeps the number of dims, split
# <-> pairs the last dim, flat <-> split neither, and lifted <-> column the number of dims, the
# first dim, the number of elements and the sorted sizes (a test on any of those sees no change);
# wide -> deep keeps all of those and the last dim too, and swaps two middle sizes (a test on
# any combination of those sees no change); flat -> batched keeps the last two sizes and adds a
# leading 1 (a test on the shape's tail, or on its sizes other than 1, sees no change)
SETTLED = ("column", "lifted", "tall", "flat", "batched", "split", "pairs", "wide", "deep")
SAME_SIZE_INTEGERS = {torch.float32: torch.int32, torch.float64: torch.int64}


def reshape_chains(make):
    """Chains of reshapes and views, with -1 or not, in every run one whose every step changes
    the shape (among them one that keeps the number of dims, one that keeps the last dim, one
    that keeps the first dim and the sorted sizes, one that keeps all of those and swaps two
    middle sizes, and one that keeps the last two sizes and adds a leading 1) and one drawn
    freely, which keeps the shape at two steps at least (a pass that leaves such a step in its
    graph, or drops one per call, is seen in every run), the second of them read by the next call
    and returned as well (a pass that drops only a call read once, or none the output reads,
    or that rewires only the next node, is seen too) and which ends in a view as its own dtype (a
    no-op: a pass that skips every view(dtype) keeps it); the settled chain ends in a view of the
    float values as integers of the same size (its shape kept, not its dtype: a pass must keep it),
    one such step written with -1 (a pass that compares the sizes a call asks for with its
    input's shape keeps it); dtypes drawn. Every chain ends in `x.mul(2)`, a call_method node
    whose result has its input's shape: a pass that ignores the target removes it too. Every
    run also reads a size from the step's input, as the chapter's `x.reshape(x.shape[0], -1)`
    does: in a step that keeps the shape (a pass that drops only calls whose sizes are all
    numbers keeps it) and in the settled chain's first step, which changes it (a pass that
    calls every size read from x a no-op drops it)."""
    rows, cols = make.integer(2, 5), 2 * make.integer(2, 4)
    forms = {"flat": [(rows, cols), (-1, cols), (rows, -1)]}
    forms["split"] = [(rows, cols // 2, 2), (rows, -1, 2)]
    forms |= {
        "tall": [(2 * rows, cols // 2), (-1, cols // 2)],
        "pairs": [(rows * cols // 2, 2), (-1, 2)],
        "lifted": [(rows, 1, cols), (rows, 1, -1)],
        "column": [(rows, cols, 1), (-1, cols, 1)],
    }
    free = list(forms)  # what a drawn chain picks from
    forms |= {
        "wide": [(rows, 1, cols // 2, 2), (rows, 1, -1, 2)],
        "deep": [(rows, cols // 2, 1, 2), (-1, cols // 2, 1, 2)],
        "batched": [(1, rows, cols), (1, -1, cols)],
    }
    settled = make.each([True, False])
    names = list(SETTLED) if settled else [make.choice(free) for _ in range(make.integer(4, 5))]
    returned = None
    if not settled:  # two steps keep the shape, always: a pass that drops one per call is seen
        first, second = sorted(make.rng.sample(range(1, len(names)), 2))
        names[first] = names[first - 1]
        names[second] = names[second - 1]  # after the first: it may read that one
        returned = second  # read by the next call and returned as well: two readers
    steps = [(make.choice(["reshape", "view"]), make.choice(forms[name])) for name in names]
    if not settled:  # a step that keeps the shape asks for -1: its sizes are not the input's
        before = ["flat", *names[:-1]]
        at = next(i for i, name in enumerate(names) if name == before[i])
        steps[at] = (steps[at][0], make.choice([f for f in forms[names[at]] if -1 in f]))
        if make.each_of_case([False, True], make.index // 2):  # the chapter's x.shape[0]
            steps[at] = (steps[at][0], _one_size_read(steps[at][1]))
    else:  # a size read from x that changes the shape all the same: (rows, x.shape[1], 1)
        steps[0] = (steps[0][0], _one_size_read(steps[0][1], at=1))
    dtype = make.dtype()
    # a view as integers of the same size keeps the shape, not the dtype; one as its own dtype
    # keeps both: a no-op that a pass skipping every view(dtype) leaves
    steps.append(("view", (SAME_SIZE_INTEGERS[dtype] if settled else dtype,)))
    make.note(_("x of shape {shape}, then {steps}").format(shape=(rows, cols), steps=steps))
    if returned is not None:
        make.note(_("step {number}'s result is returned too").format(number=returned + 1))
    return Reshapes(steps, returned), make.tensor(rows, cols, dtype=dtype)


def _one_size_read(shape: tuple, at: int | None = None) -> tuple:
    """`shape` with one size (the one `at`, or the first that is not -1) read from the step's
    input instead of written: a pass that only compares the numbers a call asks for keeps that
    step whether or not it changes the shape."""
    at = next(i for i, size in enumerate(shape) if size != -1) if at is None else at
    return (*shape[:at], SizeOf(at), *shape[at + 1 :])


def tidied(shape_pass, dead_code):
    """A function of the answer: its pass run alone on the traced model (what it reports, and
    the calls left in its graph: a pass that only redirects the users leaves them to
    dead_code), then in a PassManager with the chapter's `shape_pass` and `dead_code`: the calls
    kept, the output, and whether a second round still reports a change. None for no
    PassResult."""

    def calls(gm: fx.GraphModule) -> list[str]:
        return [n.target for n in gm.graph.nodes if n.op == "call_method"]

    def tidy(answer, model: nn.Module, x: torch.Tensor):
        manager = PassManager([shape_pass(x), answer.drop_noop_reshapes, dead_code], steps=3)
        first = answer.drop_noop_reshapes(shape_pass(x)(fx.symbolic_trace(model)).graph_module)
        if not isinstance(first, PassResult):
            return None
        alone = calls(first.graph_module)
        result = manager(fx.symbolic_trace(model))
        again = manager(result.graph_module).modified
        return first.modified, calls(result.graph_module), result.graph_module(x), again, alone

    return tidy


def made_by_create_feature_extractor(kind: type) -> bool:
    """8.1: whether what probe_for returned is of the type create_feature_extractor builds."""
    return issubclass(kind, DualGraphModule)
