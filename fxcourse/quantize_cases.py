"""What chapter 8's quantization checkpoints (try its 8.4 and 8.5) draw and run; chapter 8's cells
import them from fxcourse.practice_cases, with the other checkpoints' (see its docstring).

Nothing here holds an answer; the cases are drawn so that each run holds every feature an answer
must handle (make.each).
"""

from __future__ import annotations

import copy
import math
import sys
from itertools import pairwise

import torch
import torch.fx as fx
from torch import nn

from fxcourse.messages import _

# ----------------------------------------------------------------------------- try it 8.4


def stored_weights(converted: fx.GraphModule) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(q, scale) that convert_pt2e stored for each linear's weight, in graph order; None for a
    linear left in float (a quantizer of 8.5's, its model bound to the chapter's name: honR)."""
    found = []
    linears = converted.graph.find_nodes(op="call_function", target=torch.ops.aten.linear.default)
    for node in linears:
        dequantize = node.args[1]
        if "dequantize" not in str(getattr(dequantize, "target", "")):
            found.append(None)
            continue
        q_name, scale_name = dequantize.args[0].target, dequantize.args[1].target
        found.append((getattr(converted, q_name), getattr(converted, scale_name)))
    return found


def convert_pt2e_stores(prepared: fx.GraphModule):
    """A function of a weight: the (q, scale) convert_pt2e would store for it. A new copy of the
    per-channel weight observer prepare_pt2e inserted gives the scales, and the quantize op that
    convert_pt2e folds into a constant gives q (_convert_to_reference_decomposed_fx, then
    constant_fold, in torchao's pt2e/quantize_pt2e.py); faster than converting a model per case."""
    observers = [m for m in prepared.modules() if hasattr(m, "calculate_qparams")]
    per_channel = [
        o for o in observers if getattr(o, "qscheme", None) == torch.per_channel_symmetric
    ]
    weight_observer = per_channel[0]

    def stores(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        observer = copy.deepcopy(weight_observer)
        observer.reset_min_max_vals()
        observer(weight)
        scale, zero_point = observer.calculate_qparams()
        q = torch.ops.quantized_decomposed.quantize_per_channel(
            weight, scale, zero_point, 0, observer.quant_min, observer.quant_max, observer.dtype
        )
        return q, scale

    return stores


def stored_for(converted: fx.GraphModule, stores, weights: list[torch.Tensor]) -> list[tuple]:
    """(q, scale) for each of `weights` (the model's linears' now): what convert_pt2e stored in
    `converted`, or, for a weight changed since (the training cell run again after converting),
    what `stores` (convert_pt2e_stores) gives for it now, so that the learner's rule is judged on
    the weight it is handed (tester honZ: a right rule heard "the scales differ")."""
    found = []
    for weight, stored in zip(weights, stored_weights(converted), strict=True):
        now = stores(weight)
        q, scale = stored or now
        same = q.shape == now[0].shape and torch.equal(q, now[0]) and torch.equal(scale, now[1])
        found.append((q, scale) if same else now)
    return found


def weights(make):
    """Weights of other shapes whose rows' sizes spread 1x, 10x or 1000x (each in every run);
    sometimes one entry far larger than its row; a row of zeros or of values too small for
    any scale above the observer's eps; in every weight a row that reaches -128 (_end_of_range)."""
    rows, cols = make.integer(2, 40), make.integer(2, 40)
    spread, small_row = make.each([(1.0, "zeros"), (10.0, "tiny"), (1000.0, None)])
    order = torch.randperm(rows, generator=make.generator)
    sizes = torch.logspace(0, math.log10(spread), rows)[order]
    weight = make.tensor(rows, cols) * sizes[:, None] / spread**0.5
    if make.coin():
        weight[make.integer(0, rows - 1), make.integer(0, cols - 1)] *= 50
    small = make.integer(0, rows - 1)
    if small_row:
        weight[small] *= 0.0 if small_row == "zeros" else 1e-3
    _end_of_range(weight, (small + make.integer(1, rows - 1)) % rows)
    make.note(
        _("a weight of shape {shape}, rows' sizes spread over {spread:g}x").format(
            shape=(rows, cols), spread=spread
        )
    )
    if small_row == "zeros":
        make.note(_("one row of zeros"))
    elif small_row:
        make.note(_("one row of tiny values"))
    return (weight,)


def _end_of_range(weight: torch.Tensor, row: int) -> None:
    """Scale `row` so that its largest |w| is 127.5 * 2**k, at a negative entry: its scale is
    then 2**k, which w / scale and w * (1 / scale) both divide by exactly, and that entry's
    w / scale is -127.5, which rounds (half to even) to -128, the end of int8's range."""
    largest = weight[row].abs().max()
    end = 127.5 * 2.0 ** round(math.log2(largest.item() / 127.5))
    top = weight[row].abs().argmax()
    weight[row] = weight[row] / largest * end
    weight[row, top] = -end


def steps_apart(q, want_q, weight, want_scale, scale=None) -> bool:
    """At most one step off, and only where w / scale lands halfway between two integers (there
    w / scale and w * (1 / scale) may round apart), in a row whose scale is not a power of two
    equal to the answer's `scale` (there both give the same number, and rounding decides)."""
    exact = weight / want_scale[:, None]
    halfway = ((exact - exact.floor()) - 0.5).abs() < 1e-4
    exactly = torch.frexp(want_scale).mantissa.abs() == 0.5
    if scale is not None:
        exactly &= torch.as_tensor(scale).expand_as(want_scale) == want_scale
    halfway &= ~exactly[:, None]
    steps_off = (q.int() - want_q.int()).abs()
    return bool(steps_off.max() <= 1 and not (steps_off.bool() & ~halfway).any())


def lifted_rows_differ(scale, want_scale, weight) -> bool:
    """Whether a row whose stored scale is the observer's eps got another scale."""
    wrong = ~torch.isclose(scale.double(), want_scale.double(), rtol=1e-6, atol=0)
    lifted = weight.abs().amax(dim=1) / 127.5 < want_scale
    return bool((wrong & lifted).any())


# ----------------------------------------------------------------------------- try it 8.5


class Branches(nn.Module):  # a trunk, then heads: some returned as they are, some read further
    def __init__(self, widths: list[int], heads: list[str], act: str, bare: bool = False) -> None:
        super().__init__()
        self.act, self.bare = act, bare  # bare: the heads read the last trunk linear's output
        self.trunk = nn.Sequential(*(nn.Linear(a, b) for a, b in pairwise(widths)))
        self.heads = nn.ModuleList(nn.Linear(widths[-1], 3 + k) for k in range(len(heads)))
        self.kinds = heads

    def forward(self, x):
        for index, layer in enumerate(self.trunk):
            x = layer(x)
            if not (self.bare and index == len(self.trunk) - 1):
                x = getattr(x, self.act)()
        outputs = []
        for head, kind in zip(self.heads, self.kinds, strict=True):
            y = head(x)
            if kind == "returned and read":
                outputs += [y, y.softmax(-1)]
            else:
                reads = {"returned": y, "read by relu": y.relu(), "read by mul": y * 2}
                reads["reshaped"] = y.reshape(-1)  # a view of y: computed from it, not y itself
                outputs.append(reads[kind])
        return tuple(outputs)


def branchy(make):
    """Trunks of 1 to 4 linears (each in every run), then heads: returned as they are, returned
    and read by another op, or read before being returned, by an op or as a reshaped view (each
    as the last head in every run of five).
    Where the last head is returned, the trunk's last linear feeds the heads directly (no
    activation between): an observer on a quantized linear's output would quantize a returned
    linear's input."""
    widths = [make.integer(3, 10) for _i in range(make.each([2, 3, 4, 5]))]
    kinds = ["returned", "returned and read", "read by relu", "read by mul", "reshaped"]
    last = make.each(kinds)
    heads = [*(make.choice(kinds) for _i in range(make.integer(0, 2))), last]
    act, bare = make.choice(["relu", "tanh"]), last.startswith("returned")
    labels = {"returned": _("returned"), "returned and read": _("returned and read")}
    labels |= {"read by relu": _("read by relu"), "read by mul": _("read by mul")}
    labels["reshaped"] = _("returned reshaped")
    make.note(
        _("trunk linears: {count}, each followed by {act}; heads: {heads}").format(
            count=len(widths) - 1, act=act, heads=[labels[head] for head in heads]
        )
    )
    if bare:
        make.note(_("but the last trunk linear feeds the heads directly"))
    model = make.parameters_of(Branches(widths, heads, act, bare)).eval()
    sample = make.tensor(16, widths[0])
    return torch.export.export(model, (sample,)).module(), sample


def observed_inputs(answer, graph: fx.GraphModule, sample: torch.Tensor) -> list[list]:
    """Per linear, the observer prepare_pt2e put on its activation and on its weight: its
    (dtype, qscheme), or None where there is none; and, after them, the one on its bias where
    there is one (x86_config leaves a bias float32: int8 biases, or per-channel ones, are an
    annotation of the answer's own)."""
    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e

    prepared = prepare_pt2e(graph, answer.ReturnedInFloatQuantizer())
    linears = prepared.graph.find_nodes(op="call_function", target=torch.ops.aten.linear.default)
    specs = []
    for node in linears:
        found = [_observer_spec(prepared, arg) for arg in node.args[:3]]
        specs.append(found if found[2:] != [None] else found[:2])
    return specs


def _observer_spec(prepared: fx.GraphModule, node: fx.Node) -> tuple | None:
    if node.op != "call_module":
        return None
    observer = prepared.get_submodule(node.target)
    return getattr(observer, "dtype", None), getattr(observer, "qscheme", None)


def observed(specs: list[list]) -> list[list[bool]]:
    """Per linear, whether its activation and its weight are observed at all."""
    return [[spec is not None for spec in pair[:2]] for pair in specs]


def observed_biases(specs: list[list]) -> int:
    """How many linears have an observer on their bias (observed_inputs lists it third)."""
    return sum(len(pair) > 2 for pair in specs)


def observer_run_by(function, weight: torch.Tensor) -> str | None:
    """8.4: the class of the first quantization observer (torchao's or torch.ao's) that
    `function(weight)` calls, or None. An answer that hands the weight to the observer
    convert_pt2e used reads the scales off it instead of finding the rule (the red team's redV:
    PerChannelMinMaxObserver and quantize_per_channel passed every case)."""
    from torch.ao.quantization.observer import ObserverBase as TorchObserverBase
    from torchao.quantization.pt2e.observer import ObserverBase

    called = []

    def seen(module: nn.Module, _inputs, _output) -> None:
        if isinstance(module, ObserverBase | TorchObserverBase):
            called.append(type(module).__name__)

    hook = nn.modules.module.register_module_forward_hook(seen)
    try:
        function(weight)
    finally:
        hook.remove()
    return called[0] if called else None


SCALE_CHOOSERS = ("choose_qparams", "determine_qparams", "calculate_qparams")


def scale_chooser_run_by(function, weight: torch.Tensor) -> str | None:
    """8.4: the first of torchao's or torch.ao's functions that choose quantization parameters
    (choose_qparams_affine, determine_qparams, an observer's calculate_qparams) that
    `function(weight)` calls, or None. The red team's (redQ): torchao's choose_qparams_affine,
    and its determine_qparams, chose the scales and passed every case, no observer run."""
    called = []

    def seen(frame, event: str, _arg) -> None:
        code = frame.f_code
        if event != "call" or called or not any(n in code.co_name for n in SCALE_CHOOSERS):
            return
        path = code.co_filename.replace("\\", "/")
        if "/torchao/" in path or "/torch/ao/" in path:
            called.append(code.co_name)

    before = sys.getprofile()
    sys.setprofile(seen)
    try:
        function(weight)
    finally:
        sys.setprofile(before)
    return called[0] if called else None
