"""Chapter 11's checkpoints: the case builders they give `check.cases` (fxcourse.tryit, cases
drawn fresh from a seed at every run) and what they read off the learner's and the reference's
results. The checkpoint cells word the messages, so that they are translated with the chapter;
the chapter's own quantizers are handed in, so the cases test the classes the chapter built.

    concatenations(make)                     11.1: an exported model that concatenates 2-4 tensors
    one_grid_facts(quantizer, graph, data)   11.1: the cat's annotation, observers and grids
    mlps(make)                               11.2: an MLP, its data, weights per tensor or channel
    bias_grids(quantizer, graph, data)       11.2: each linear's bias grid after convert_pt2e
    damaged_mlps_for(quantizer_class)        11.3: a builder of 8-bit MLPs with coarse linears
    first_loss_of(answer, *case)             11.3: the answer's node, and the float graph's names

Nothing here holds an answer: each function runs whatever quantizer or answer it is given.
"""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import Callable

import torch
from torch import fx, nn

from fxcourse.messages import _
from fxcourse.quiet import hushed

with hushed("torch.utils._pytree"):  # importing torchao logs a deprecation warning
    from torchao.quantization import pt2e
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import (
        QuantizationSpec,
        Quantizer,
        SharedQuantizationSpec,
    )

aten = torch.ops.aten


def exported(model: nn.Module, data: torch.Tensor) -> fx.GraphModule:
    return torch.export.export(model.eval(), (data,)).module()


def nodes_calling(graph_module: fx.GraphModule, target) -> list[fx.Node]:
    return graph_module.graph.find_nodes(op="call_function", target=target)


# ----------------------------------------------------------------------------- try it 11.1


class Concat(nn.Module):
    """Branches of their own widths and gains, concatenated in `order` (an index may repeat)."""

    def __init__(self, widths: list[int], gains: list[float], order: list[int]):
        super().__init__()
        self.branches = nn.ModuleList(nn.Linear(3, width) for width in widths)
        self.gains, self.order = gains, order

    def forward(self, x):
        outs = [branch(x) * gain for branch, gain in zip(self.branches, self.gains, strict=True)]
        return torch.cat([outs[i] for i in self.order], dim=1)


def concatenations(make) -> tuple[fx.GraphModule, torch.Tensor]:
    """Two to four tensors of their own ranges, in any order; every run has a case with none
    concatenated twice, one with the first tensor twice and one with another tensor twice."""
    count = make.integer(2, 4)
    widths = [make.integer(1, 4) for _ in range(count)]
    gains = [make.choice([0.25, 1.0, 4.0, 16.0]) for _ in range(count)]
    order = make.rng.sample(range(count), count)
    twice = make.each(["none", "the first", "another"])
    if twice != "none":
        order.append(order[0] if twice == "the first" else order[make.integer(1, count - 1)])
        order += [make.integer(0, count - 1) for _ in range(make.integer(0, 1))]
    make.note("torch.cat([" + ", ".join(f"{gains[i]} * b{i}" for i in order) + "])")
    data = make.tensor(32, 3)
    return exported(make.parameters_of(Concat(widths, gains, order)), data), data


def shares_in_a_circle(cat: fx.Node) -> bool:
    """Following the cat's SharedQuantizationSpecs that name its own edges or output comes back
    to where it started: no member holds a real spec (prepare_pt2e would recurse forever)."""
    spec = cat.meta["quantization_annotation"]
    specs = {(t, cat): s for t, s in spec.input_qspec_map.items()} | {cat: spec.output_qspec}
    for start in specs:
        seen, member = set(), start
        while isinstance(specs.get(member), SharedQuantizationSpec) and member not in seen:
            seen.add(member)
            member = specs[member].edge_or_node
        if member in seen:
            return True
    return False


def grids_of(nodes: list[fx.Node]) -> list[tuple[float, int]]:
    """(scale, zero point) of each quantize or dequantize node, rounded to 5 decimals."""
    return [(round(node.args[1], 5), node.args[2]) for node in nodes]


def one_grid_facts(quantizer: Quantizer, graph: fx.GraphModule, data: torch.Tensor) -> dict:
    """What 11.1 is about, for a quantizer that annotates the cat with the answer: whether it
    annotated it, whether its specs share in a circle or name a member without an observer, how
    many of the cat's tensors go unobserved, how many observers (groups) and of which kind, and
    the grids around the cat after conversion."""
    (annotated,) = nodes_calling(quantizer.annotate(graph), aten.cat.default)
    if annotated.meta.get("quantization_annotation") is None:
        return {"annotated": False}
    facts = {"annotated": True, "shares_itself": shares_in_a_circle(annotated)}
    if facts["shares_itself"]:
        return facts
    try:  # prepare_pt2e annotates again, from the unchanged graph's point of view
        prepared = prepare_pt2e(graph, quantizer)
    except (KeyError, AssertionError):  # a shared spec names a member with no observer (yet)
        prepared = None
    facts["dangling"] = prepared is None
    if prepared is None:
        return facts
    (cat,) = nodes_calling(prepared, aten.cat.default)
    around = [n for n in list(cat.args[0]) + list(cat.users) if n.op == "call_module"]
    facts["unobserved"] = len(cat.args[0]) + 1 - len(around)
    observers = {id(prepared.get_submodule(n.target)) for n in around}
    facts["groups"] = len(observers)
    facts["observer"] = type(prepared.get_submodule(around[0].target)).__name__ if around else ""
    if not facts["unobserved"]:
        prepared(data)  # calibrate
        (cat,) = nodes_calling(convert_pt2e(prepared), aten.cat.default)
        after = [n for n in cat.users if "quantize_per_tensor" in str(n.target)]
        facts["grids"] = grids_of(list(cat.args[0]) + after)
    return facts


# ----------------------------------------------------------------------------- try it 11.2


def mlps(make) -> tuple[fx.GraphModule, torch.Tensor, torch.qscheme]:
    """An MLP of 2-4 linears (each followed by a ReLU) of other widths, data of another range
    (each of four in every run, one so small that the bias's scale falls below float32's eps),
    and the qscheme of its weights: every run has both per-tensor and per-channel weights."""
    widths = [make.integer(2, 9) for _ in range(make.integer(2, 4))] + [3]
    layers = [nn.Linear(a, b) for a, b in zip(widths, widths[1:], strict=False)]
    model = make.parameters_of(nn.Sequential(*(m for layer in layers for m in (layer, nn.ReLU()))))
    weights = make.each([torch.per_tensor_symmetric, torch.per_channel_symmetric])
    make.note(f"{weights}; nn.Linear: " + " → ".join(map(str, widths)))
    # 1e-6: the activation's scale is the observer's eps, the bias's far below it (a bias scale
    # clamped at eps too is refused)
    data = make.tensor(32, widths[0], scale=make.each([0.5, 3.0, 20.0, 1e-6]))
    return exported(model, data), data, weights


def bias_grids(quantizer: Quantizer, graph: fx.GraphModule, data: torch.Tensor) -> list[tuple]:
    """Per linear, the bias's (scales, zero points) as convert_pt2e wrote them into the graph;
    an empty list when a bias is not dequantized (the derived spec was not applied)."""
    prepared = prepare_pt2e(graph, quantizer)
    prepared(data)  # calibrate
    converted = convert_pt2e(prepared)

    def value(arg):
        return getattr(converted, arg.target) if isinstance(arg, fx.Node) else torch.tensor(arg)

    found = []
    for node in nodes_calling(converted, aten.linear.default):
        bias = node.args[2]
        if not isinstance(bias, fx.Node) or "dequantize" not in str(bias.target):
            return []
        found.append((value(bias.args[1]).double(), value(bias.args[2])))
    return found


# ----------------------------------------------------------------------------- try it 11.3

# The kinds of a run's cases: one coarse linear under four floors (one above what clean 8-bit
# layers reach; one, None, between the clean layers' own SQNRs, so that the first node below it
# is a clean one a few dB under the node before it, where an answer that waits for a sudden drop
# goes on to the damaged layer), two coarse linears (the second worse) under two.
# (two damaged layers?, floor in dB, where one layer's damage enters: its weights or its relu's
# output, where an answer that looks only at linear nodes finds the linear after it)
DAMAGES = ((False, 12.0, "weights"), (False, 20.0, "relu"), (False, 45.0, "weights"))
DAMAGES += ((False, None, "weights"), (True, 12.0, "weights"), (True, 20.0, "weights"))


def sqnrs_in_order(float_graph, quantized, data) -> list[tuple[str, float]]:
    """(name, SQNR) of each float-graph node the numeric debugger compares, in the graph's order."""
    logged = [pt2e.prepare_for_propagation_comparison(m) for m in (float_graph, quantized)]
    with torch.no_grad():
        for model in logged:
            model(data)
    results = pt2e.compare_results(*(pt2e.extract_results_from_loggers(m) for m in logged))
    by_name = {node.name: s.results[0].sqnr.item() for node, s in results.items()}
    return [(n.name, by_name[n.name]) for n in float_graph.graph.nodes if n.name in by_name]


def floor_among_clean(float_graph, quantized, data, first_damaged: str) -> float:
    """A floor that a clean node (one before `first_damaged`, not the first) is the first to go
    below: of the clean nodes whose SQNR is below every earlier one's, the one that lies the
    least under the node before it; the floor halfway between it and the lowest earlier SQNR.
    Above every SQNR (the first node is below it) when no clean node is a new low."""
    compared = sqnrs_in_order(float_graph, quantized, data)
    names = [name for name, _ in compared]
    clean = [sqnr for _, sqnr in compared[: names.index(first_damaged)]]
    lows = [i for i in range(1, len(clean)) if clean[i] < min(clean[:i])]
    if not lows:
        return 45.0
    at = min(lows, key=lambda i: clean[i - 1] - clean[i])
    return (clean[at] + min(clean[:at])) / 2


def coarse_weight(levels: int) -> QuantizationSpec:
    """A per-tensor int8 weight spec with `levels` steps (5 or 3): far coarser than 8 bits."""
    half = levels // 2
    return QuantizationSpec(
        torch.int8, pt2e.MinMaxObserver, -half, half, torch.per_tensor_symmetric
    )


def coarse_activation(levels: int) -> QuantizationSpec:
    """A per-tensor uint8 activation spec with `levels` steps: a relu's output on it loses most
    of what it carries."""
    return QuantizationSpec(
        torch.uint8, pt2e.MinMaxObserver, 0, levels - 1, torch.per_tensor_affine
    )


class Planting(Quantizer):
    """`base`'s annotations, with the weights of the linears numbered in `coarse`, and the
    outputs of the relus numbered in `relus`, on coarser grids."""

    def __init__(self, base: Quantizer, coarse: dict[int, int], relus: dict | None = None):
        super().__init__()
        self.base, self.coarse, self.relus = base, coarse, relus or {}

    def annotate(self, model: fx.GraphModule) -> fx.GraphModule:
        self.base.annotate(model)
        linears = nodes_calling(model, aten.linear.default)
        for index, levels in self.coarse.items():
            weights = linears[index].meta["quantization_annotation"].input_qspec_map
            weights[linears[index].args[1]] = coarse_weight(levels)
        relus = nodes_calling(model, aten.relu.default)
        for index, levels in self.relus.items():
            relus[index].meta["quantization_annotation"].output_qspec = coarse_activation(levels)
        return model

    def validate(self, model: fx.GraphModule) -> None:
        pass


@functools.lru_cache(maxsize=16)
def _exported_mlp(depth: int, width: int, bare: int) -> fx.GraphModule:
    """One export per architecture (an export costs more than all else a case does); each case
    loads its own weights into a copy. Linear number `bare` has no ReLU after it, so that from
    there on relu_k follows linear_(k+1): the numbers in the names are not the graph's order
    (red team redP6: candidates ranked by the number that ends their names passed)."""
    layers = [
        m for i in range(depth) for m in (nn.Linear(width, width), nn.ReLU())[: 1 + (i != bare)]
    ]
    return exported(nn.Sequential(*layers), torch.zeros(64, width))


def damaged_mlps_for(quantizer_class: type[Quantizer]) -> Callable:
    """A case builder for 11.3: an MLP of linears of one width, a ReLU after each but the first
    or the second, 8-bit as `quantizer_class()` annotates it but for one linear on a far coarser
    grid (5 to 8 linears),
    or one relu's output (3 levels), or two linears, the second worse and past the tenth (11 or
    12 linears); a floor in dB from DAMAGES, every kind in every run; the quantized graph's
    linear and relu nodes renamed (a quantized graph's names need not be the float graph's).
    The width and the two depths are drawn once per run,
    so that one export per architecture serves the run's cases, each with weights of its own.
    Conversion leaves the weights' quantize nodes unfolded: the numeric debugger finds the same
    values (the same first_loss on 30 drawn cases), and folding cost a third of a case's time."""

    def damaged_mlps(make) -> tuple[fx.GraphModule, fx.GraphModule, torch.Tensor, float]:
        run = random.Random(f"{make.run_seed}:11.3")
        width, depths = run.randint(8, 12), (run.randint(5, 8), run.randint(11, 12))
        bare = run.choice([0, 1])
        two, floor_db, enters = make.each(DAMAGES)
        depth = depths[two]
        first = make.integer(2, 8) if two else make.integer(2, depth - 3)
        coarse = {first: 5 if two else 3}
        if two:  # a worse one later, where sorting names as strings misplaces it
            coarse[make.choice([9, 10])] = 3
        relus = {first: 3} if enters == "relu" else {}  # about 7 dB, the layers before 30 or more
        coarse = {} if relus else coarse
        float_graph = copy.deepcopy(_exported_mlp(depth, width, bare))
        make.parameters_of(float_graph)
        data = make.tensor(64, width)
        planting = Planting(quantizer_class(), coarse, relus)
        prepared = prepare_pt2e(copy.deepcopy(float_graph), planting)
        prepared(data)  # calibrate
        quantized = convert_pt2e(prepared, fold_quantize=False)
        if floor_db is None:  # read before the renaming below: the debugger pairs nodes by handle
            floor_db = floor_among_clean(float_graph, quantized, data, f"linear_{first}")
        bare_name = ["linear", "linear_1"][bare]
        layers = f"{depth} x (nn.Linear({width}, {width}), nn.ReLU())"
        layers += _(", no ReLU after {bare}").format(bare=bare_name)
        linears = ", ".join(f"linear_{i}" for i in sorted(coarse))
        note = _("{layers}; weights on a coarse grid in {linears}; floor_db={floor_db}")
        if relus:
            note = _("{layers}; the output of relu_{first} on a coarse grid; floor_db={floor_db}")
        floor_text = f"{floor_db:.6g}"
        make.note(note.format(layers=layers, linears=linears, first=first, floor_db=floor_text))
        for node in quantized.graph.nodes:
            if node.target in (aten.linear.default, aten.relu.default):
                node._rename(f"int8_{node.name}")  # private Node method
        quantized.recompile()
        return float_graph, quantized, data, floor_db

    return damaged_mlps


def first_loss_of(answer, float_graph, quantized, data, floor_db) -> tuple[object, set[str]]:
    """(the answer's first_loss on the case, the float graph's node names, read before)."""
    names = {node.name for node in float_graph.graph.nodes}
    return answer.first_loss(float_graph, quantized, data, floor_db), names


def bias_grids_quantized_by(quantizers: dict, bias_spec_with: Callable) -> Callable:
    """11.2: (answer, graph, data, the weights' qscheme) -> bias_grids under the chapter's
    quantizer for that qscheme (`quantizers`), its bias spec derived by answer.bias_qparams."""

    def grids(answer, graph, data, weights) -> list[tuple]:
        quantizer = quantizers[weights](bias_spec=bias_spec_with(answer.bias_qparams))
        return bias_grids(quantizer, graph, data)

    return grids
