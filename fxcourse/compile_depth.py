"""Chapter 10's checkpoints: the case builders they give `check.cases` (fxcourse.tryit, cases
drawn fresh from a seed at every run) and the measurements they compare. The checkpoint cells
word the messages, so that they are translated with the chapter. Try it 10.2's are in
fxcourse.serve_cases.

    batch_sequence(make)                     10.1: batch sizes of successive calls, and a width
    words_under_force_eager(rule, batches)   10.1: the learner's rule, run with compiling off
    minifier_case(make)                      10.3: a graph with one operator a backend gets wrong
    minified(case, results_differ)           10.3: the minifier's result with that predicate
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import math
import os
import random
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from unittest import mock

import torch
from torch import fx

from fxcourse.messages import _

CHAPTER_BATCHES = (3, 3, 5, 1, 8, 0, 6)


# How a fresh case's calls begin, each kind once in every four cases: after 0s only or 1s only,
# both, or another size (red team redP6: a rule wrong after 1s alone passed runs without one).
OPENINGS = ("after one special size", "after 0 and 1", "after a size and a special one", "drawn")


def batch_sequence(make) -> tuple[tuple[int, ...], int]:
    """(batches, width): the chapter's example in a run's first case, then 6 to 9 calls drawn
    from three sizes of 2 or more and 0 and 1, after an opening of the case's OPENINGS kind."""
    if make.index == 0:
        make.note(f"{CHAPTER_BATCHES}")
        return CHAPTER_BATCHES, 3
    sizes = make.rng.sample(range(2, 33), 3)
    special = (make.choice([0, 1]),) * make.integer(1, 2)
    opening = {
        "after one special size": (*special, sizes[0]),
        "after 0 and 1": (*make.rng.sample([0, 1], 2), sizes[0]),
        "after a size and a special one": (sizes[0], *special, sizes[1]),
    }.get(make.each(OPENINGS), ())
    drawn = tuple(make.choice(sizes + [0, 1]) for _ in range(make.integer(6, 9) - len(opening)))
    make.note(f"{opening + drawn}")
    return opening + drawn, make.integer(2, 6)


def words_under_force_eager(rule: Callable, batches: Sequence[int]) -> object:
    """The rule's answer for `batches`, computed with torch.compile turned off: a rule that
    measures instead of predicting sees no compile at all. Dynamo's `disable` setting keeps it
    off for a rule that sets the stance back to "default". Words in a tuple count as a list:
    the try-it asks for one word per call (red team redY: a tuple was refused). A Python the
    rule starts reads TORCH_COMPILE_DISABLE=1 as its default (red team redF2: a rule measured
    in a child process)."""
    torch.compiler.reset()
    with (
        torch.compiler.set_stance("force_eager"),
        torch._dynamo.config.patch(disable=True),
        mock.patch.dict(os.environ, {"TORCH_COMPILE_DISABLE": "1"}),
    ):
        words = rule(tuple(batches))
    return list(words) if isinstance(words, tuple) else words


def differing_calls(predicted: Sequence[str], measured: Sequence[str]) -> list[int]:
    """1-based positions where the words differ."""
    return [i + 1 for i, (p, m) in enumerate(zip(predicted, measured, strict=True)) if p != m]


# ----------------------------------------------------------------------------- 10.3

UNARY = {
    "tanh": torch.ops.aten.tanh.default,
    "sigmoid": torch.ops.aten.sigmoid.default,
    "sin": torch.ops.aten.sin.default,
    "exp": torch.ops.aten.exp.default,
    "relu": torch.ops.aten.relu.default,
    "neg": torch.ops.aten.neg.default,
}


FAULTS = ("plus one", "rolled", "slightly off", "NaN", "inf", "a number for NaN")  # to a result
FINITE = FAULTS[:3]
NON_FINITE = FAULTS[3:]  # never in a balanced output: its sum would show them
SLIGHTLY = 3e-3  # "slightly off": far beyond float32's rounding, within a 1 % tolerance


class _Planted(fx.Interpreter):
    """Runs a graph node by node, doing `fault` (FAULTS) to what every call of `target` returns:
    adding 1 (at place `spot` of the last dimension only, when given), moving its values one
    place along the last dimension, scaling it by 1 + SLIGHTLY, making its first value NaN or inf,
    or making its NaN 0."""

    def __init__(self, gm: fx.GraphModule, target, fault: str = "plus one", spot=None):
        super().__init__(gm)
        self.target, self.fault, self.spot = target, fault, spot

    def call_function(self, target, args, kwargs):
        result = super().call_function(target, args, kwargs)
        if target is not self.target:
            return result
        if self.fault == "a number for NaN":
            return result.nan_to_num(nan=0.0, posinf=math.inf, neginf=-math.inf)
        if self.fault == "slightly off":
            return result * (1 + SLIGHTLY)
        if self.fault == "rolled":
            return result.roll(1, -1)
        if self.fault in ("NaN", "inf"):
            first = torch.full_like(result[..., :1], float(self.fault.lower()))
            return torch.cat([first, result[..., 1:]], -1)
        if self.spot is None or result.dim() == 0:
            return result + 1
        one = torch.zeros_like(result)
        one[..., self.spot % result.shape[-1]] = 1
        return result + one


def planted_backend(target, fault: str = "plus one", spot: int | None = None) -> Callable:
    """A backend with a planted bug: it runs the graph it is given, except that every call of
    the ATen operator `target` also adds 1 to its result (at place `spot` only, when given: a
    comparison of one place, the first say, sees nothing wrong); or ("rolled") returns its
    values moved one place, as a wrong stride would: the same values, so the same sum, mean,
    norm and sorted values; or ("slightly off") its values times 1 + SLIGHTLY, as a wrong
    constant would (a comparison with a 1 % tolerance sees nothing wrong); or ("NaN") returns
    NaN in its first place, where the graph computes a number (a comparison that skips every
    NaN, or zeroes them, sees nothing wrong); or ("inf")
    returns inf there (a comparison of the finite places only sees nothing wrong); or ("a number
    for NaN") returns 0 where it computes NaN (a comparison that skips the places where gm has
    NaN sees nothing wrong). Right wherever `target` is absent. (It interprets the graph: a copy
    recompiled for each of the minifier's queries cost a third of checkpoint 10.3's time.)"""

    def backend(gm: fx.GraphModule, example_inputs) -> Callable:
        return lambda *args: _Planted(gm, target, fault, spot).run(*args)

    return backend


@dataclass
class MinifierCase:
    """A chain of ATen operators traced with make_fx, its inputs, and the operator that the
    case's backend gets wrong (it appears once, somewhere in the chain)."""

    gm: fx.GraphModule
    inputs: list[torch.Tensor]
    wrong_op: object
    backend: Callable
    fault: str = "plus one"  # what the backend does to wrong_op's result (FAULTS)

    @property
    def wrong_name(self) -> str:
        return str(self.wrong_op).removeprefix("aten.").removesuffix(".default")


def minifier_case(make) -> MinifierCase:
    """A chain of 4 to 7 unary operators with additions and products between them; the wrong
    operator is drawn each time (each one in turn over a run), and its place in the chain too.
    The graph returns a tuple of 2 or 3 vectors: one computed through the wrong operator, the
    others taken before it. Where that one stands is a kind drawn with `make.each`, so every run
    has each: last (comparing only the first output sees nothing wrong), first and middle
    (comparing only the last output sees nothing wrong), and balanced: the wrong vector, its
    negation and a large constant, first (a summary of each output or of all of them, their
    sum, mean, largest magnitude or norm, stays the same to within rounding). In every run some
    planted backends roll the wrong operator's values instead of adding 1 (a comparison blind to
    the values' places, such as sorted values, sees nothing wrong), some scale them by
    1 + SLIGHTLY (a comparison with a 1 % tolerance sees nothing wrong), and some (NON_FINITE, never
    in a balanced output, whose summaries they would change) put NaN in its first place where
    the graph computes a number (a comparison that skips NaN, or zeroes it, sees nothing wrong;
    the graph then makes its result's first value 0, so that NaN made 0 on both sides is unseen),
    or inf there (a comparison of the finite places only sees nothing wrong), or a number where
    the graph computes NaN (NaN enters the wrong operator at its first place: a comparison that
    skips the places where gm has NaN sees nothing wrong) (_fault_of). In half the cases of every
    run the graph also returns, second, a NaN output (the log of values below their mean, NaN
    in eager as in every backend: a comparison that calls NaN != NaN a difference says so of a
    healthy backend), and the same NaN after the result unless balanced (a comparison of the
    largest difference, NaN there, sees nothing wrong). A chain whose result hides the planted
    error (a saturated tanh downstream) or reaches LARGEST is drawn again."""
    wrong = make.each(list(UNARY))
    kind = make.each(CHAIN_KINDS)
    fault = _fault_of(make, kind)
    nan = make.each(["a NaN output", "no NaN"]) == "a NaN output"
    others = [name for name in UNARY if name != wrong]
    while True:
        chain = [make.choice(others) for _ in range(make.integer(4, 7))]
        place = make.integer(0, len(chain) - 1)
        chain[place] = wrong
        early = sorted(make.integer(0, place) for _ in range(2 if kind == "middle" else 1))
        bad = {"last": len(early), "first": 0, "middle": 1, "balanced": 0}[kind]
        width = make.integer(3, 8)
        looks = ChainLooks(kind == "balanced", nan, zeroed=fault == "NaN")
        looks.holed = place if fault == "a number for NaN" else None  # NaN enters the wrong op
        gm = _traced_chain(chain, width, early, bad, looks)
        inputs = [make.tensor(width)]
        spot = make.integer(1, width - 1)  # where "plus one" adds: never the first place
        backend = planted_backend(UNARY[wrong], fault, spot)
        case = MinifierCase(gm, inputs, UNARY[wrong], backend, fault)
        got, want = case.backend(gm, inputs)(*inputs), gm(*inputs)
        bad += 1 if nan and bad >= 1 else 0  # the NaN output comes second
        if _shows(got[bad][:width], want[bad][:width], fault, kind):
            chain_text = " -> ".join(chain)
            said = _said_of(fault)
            make.note(said.format(chain=chain_text, wrong=wrong, number=bad + 1, outputs=len(want)))
            return case


def _said_of(fault: str) -> str:
    return {
        "rolled": _("{chain}; {wrong} rolled; output {number} of {outputs}"),
        "plus one": _("{chain}; {wrong} + 1 in one place; output {number} of {outputs}"),
        "slightly off": _("{chain}; {wrong} 0.3 % off; output {number} of {outputs}"),
        "NaN": _("{chain}; {wrong} NaN in its first place; output {number} of {outputs}"),
        "inf": _("{chain}; {wrong} inf in its first place; output {number} of {outputs}"),
        "a number for NaN": _(
            "{chain}; {wrong} 0 in its first place, where gm has NaN; output {number} of {outputs}"
        ),
    }[fault]


def _shows(result: torch.Tensor, wanted: torch.Tensor, fault: str, kind: str) -> bool:
    """Whether the chain's result from the planted backend shows the fault beside gm's (a
    saturated tanh downstream hides it), both below LARGEST, gm's finite but in the first place
    for "a number for NaN" (NaN in gm, a number in the backend there)."""
    moved = (result - wanted).abs().nan_to_num(nan=math.inf).max() > 1e-2  # NaN made or filled
    if fault == "slightly off":  # beyond rounding everywhere it shows, within 1 % everywhere
        off = (result - wanted).abs()
        moved = (off > 1e-3 * wanted.abs() + 1e-5).any() and (off < 5e-3 * (1 + wanted.abs())).all()
    finite = [t.nan_to_num(nan=0.0, posinf=0.0, neginf=0.0) for t in (result, wanted)]
    largest = max(t.abs().max() for t in finite)
    if fault == "a number for NaN":
        first = wanted[:1].isnan().all() and result[:1].isfinite().all()
    else:
        first = wanted[:1].isfinite().all()
    hidden = kind != "balanced" or result.isfinite().all()  # NaN would show in its sum
    return moved and largest < LARGEST and first and wanted[1:].isfinite().all() and hidden


def _fault_of(make, kind: str) -> str:
    """The case's fault (FAULTS): every run of six has each. A balanced case takes one of
    FINITE (NON_FINITE would show in its sum); the others take NON_FINITE's first, in an order
    the run's seed draws, then FINITE's from the other end."""
    rng = random.Random(f"{make.run_seed}:faults")
    finite, non_finite = list(FINITE), list(NON_FINITE)
    rng.shuffle(finite)
    rng.shuffle(non_finite)
    kinds = [make.each_of_case(CHAIN_KINDS, index) for index in range(make.index)]
    if kind == "balanced":
        return finite[kinds.count("balanced") % len(finite)]
    return (non_finite + finite[::-1])[(len(kinds) - kinds.count("balanced")) % len(FAULTS)]


CHAIN_KINDS = ["last", "first", "middle", "balanced"]  # where the wrong vector stands


def missed_fault(case: MinifierCase) -> str:
    """A hint for a predicate that found no difference in the whole graph, by the case's fault."""
    if case.fault == "NaN":
        return _(" Here the backend makes NaN where gm has a number: does your predicate see it?")
    if case.fault == "inf":
        return _(" Here the backend makes inf where gm has a number: does your predicate see it?")
    if case.fault == "slightly off":
        return _(" Here the backend is off by a fraction of a percent: is that within rounding?")
    if case.fault == "a number for NaN":
        return _(" Here the backend makes a number where gm has NaN: does your predicate see it?")
    return ""


def differs_from_itself(case: MinifierCase, results_differ: Callable) -> object:
    """What the predicate says of a backend that runs the graph as it is, as it says it (None
    for one that forgot its return): a right predicate says False. One that takes NaN != NaN for
    a difference says True where the graph computes NaN (and then the minifier may keep the NaN
    output, or by luck the planted operator)."""
    return results_differ(copy.deepcopy(case.gm), case.inputs, lambda gm, _inputs: gm)


def handed_dynamos_graph(case: MinifierCase, results_differ: Callable) -> bool:
    """Whether the predicate handed the backend a graph Dynamo captured (torch.compile around
    the backend), not gm as the minifier does with backend(gm, inputs). The red team's (redQ):
    torch.compile(gm, backend=backend) passed every case, Dynamo tracing each of the
    minifier's candidates again (7 to 12 s a run)."""
    handed: list[bool] = []

    def backend(gm: fx.GraphModule, _inputs) -> Callable:
        handed.append("dynamo_compile_id" in getattr(gm, "meta", {}))
        return gm

    results_differ(copy.deepcopy(case.gm), case.inputs, backend)
    return any(handed)


def differs_by_rounding(case: MinifierCase, results_differ: Callable) -> object:
    """What the predicate says of a healthy backend whose every finite output is one step of
    its dtype higher than gm's (what summing in another order gives): a right predicate says
    False. An exact comparison says True, and the minifier would chase rounding."""
    return results_differ(copy.deepcopy(case.gm), case.inputs, _one_step_up)


def _one_step_up(gm: fx.GraphModule, _inputs) -> Callable:
    def run(*inputs):
        outputs = gm(*inputs)
        up = [torch.nextafter(t, torch.full_like(t, math.inf)) for t in outputs]
        return tuple(torch.where(t.isfinite(), u, t) for t, u in zip(outputs, up, strict=True))

    return run


BALANCE = 1e6  # the balanced output's constant: beside it, every value of the chain moves its
LARGEST = 300.0  # sum, mean, largest magnitude and norm by less than allclose's rtol


@dataclass
class ChainLooks:
    """What a traced chain returns beside its values: with `balanced`, the result, its negation
    (a product by -1: neg may be the planted operator) and BALANCE in one vector; with `nan`, the
    log of the input minus its mean (NaN wherever the input is below its mean) second, and after
    the result when not balanced; with `zeroed`, the result's first value multiplied by 0 (0 in
    gm, NaN where the backend made NaN); with `holed`, the link of that index gets NaN in the
    first place of its operator's input (NaN there in gm, a number where the backend made one)."""

    balanced: bool = False
    nan: bool = False
    zeroed: bool = False
    holed: int | None = None


def _traced_chain(
    chain: list[str], width: int, early: list[int], bad: int, looks: ChainLooks
) -> fx.GraphModule:
    """make_fx of the chain; it returns the values entering the links `early` (each before the
    wrong operator, a different multiple for each), with the chain's result inserted at `bad`,
    as `looks` says."""
    ops = [getattr(torch, name) for name in chain]

    def run(x):
        holes = torch.log(x - x.mean()) if looks.nan else None  # no UNARY operator: never planted
        outputs = []
        for index, op in enumerate(ops):
            for _repeat in range(early.count(index)):
                outputs.append(x * float(len(outputs) + 1))
            y = op(torch.cat([x[:1] * math.nan, x[1:]]) if index == looks.holed else x)
            x = y * 0.5 + x if index % 2 else y + 1
        if looks.zeroed:
            x = torch.cat([x[:1] * 0.0, x[1:]])
        if looks.balanced:
            x = torch.cat([x, x * -1.0, torch.full((1,), BALANCE)])
        elif looks.nan:  # NaN beside the planted error too: its largest difference is NaN
            x = torch.cat([x, holes])
        outputs.insert(bad, x)
        if looks.nan:
            outputs.insert(1, holes)
        return tuple(outputs)

    return fx.experimental.proxy_tensor.make_fx(run)(torch.randn(width))


def minified(case: MinifierCase, results_differ: Callable) -> fx.GraphModule | None:
    """The minifier's smallest graph for which `results_differ(gm, inputs, case.backend)` still
    holds, or None when it does not hold for the whole graph (the minifier then refuses). An
    error raised by `results_differ` itself is raised again, not taken for a refusal."""
    from torch._functorch.fx_minifier import minifier

    raised: list[Exception] = []

    def still_fails(gm, inputs):
        try:
            return results_differ(gm, inputs, case.backend)
        except Exception as error:
            raised.append(error)
            raise

    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        logging.getLogger("torch._functorch.fx_minifier").setLevel(logging.ERROR)
        try:
            small, _ = minifier(
                copy.deepcopy(case.gm), case.inputs, still_fails, dump_state=lambda gm, inputs: None
            )
        except RuntimeError as error:
            if raised:
                raise raised[0] from None
            if "did not fail the tester" in str(error):
                return None
            raise
    return small


def call_targets(gm: fx.GraphModule) -> list:
    return [node.target for node in gm.graph.nodes if node.op == "call_function"]
