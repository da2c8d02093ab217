"""Chapter 10's checkpoints: cases made fresh from a seed at every run, judged against what
torch.compile and the minifier actually do. The checkpoint cells word the messages (so they are
translated with the chapter); this module makes the cases and measures.

    seed = fresh_seed()                        a seed drawn now; the messages name it
    batch_cases(seed)                          10.1: batch sequences (0s, 1s, repeats, new sizes)
    words_under_force_eager(rule, batches)     10.1: the learner's rule, run with compiling off
    serve_cases(seed)                          10.2: request streams (batch sizes, temperatures)
    reference_outputs(scorer, requests)        10.2: what the chapter's Scorer computes for them
    serve_run(serve, scorer, requests)         10.2: outputs, compiles and recompile reasons
    minifier_cases(seed)                       10.3: a graph with one operator a backend gets wrong
    minified(case, results_differ)             10.3: the minifier's result with that predicate

Every case is rebuilt from its seed, so a learner can rerun the one a message names:
`batch_cases(1234)` gives the same batches again.
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import os
import random
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import fx, nn

from fxcourse.capture import torch_logs

CHAPTER_BATCHES = (3, 3, 5, 1, 8, 0, 6)


def fresh_seed() -> int:
    """A seed drawn from the operating system, different at every run."""
    return int.from_bytes(os.urandom(3), "big")


# ----------------------------------------------------------------------------- 10.1


def batch_cases(seed: int, count: int = 6) -> list[tuple[tuple[int, ...], int]]:
    """(batches, width) pairs: the chapter's example, then `count` sequences of 6 to 9 calls
    drawn from three sizes of 2 or more and the special sizes 0 and 1, with repeats."""
    rng = random.Random(seed)
    cases = [(CHAPTER_BATCHES, 3)]
    for _ in range(count):
        sizes = [*rng.sample(range(2, 33), 3), 0, 1]
        batches = tuple(rng.choice(sizes) for _ in range(rng.randint(6, 9)))
        cases.append((batches, rng.randint(2, 6)))
    return cases


def words_under_force_eager(rule: Callable, batches: Sequence[int]) -> object:
    """The rule's answer for `batches`, computed with torch.compile turned off: a rule that
    measures instead of predicting sees no compile at all."""
    torch.compiler.reset()
    with torch.compiler.set_stance("force_eager"):
        return rule(tuple(batches))


def differing_calls(predicted: Sequence[str], measured: Sequence[str]) -> list[int]:
    """1-based positions where the words differ."""
    return [i + 1 for i, (p, m) in enumerate(zip(predicted, measured, strict=True)) if p != m]


# ----------------------------------------------------------------------------- 10.2


def serve_cases(seed: int, count: int = 5) -> list[list[tuple[torch.Tensor, float]]]:
    """Request streams of 5 to 8 (x, temperature) pairs: batch sizes of 2 or more that change
    and come back, temperatures that change, inputs large enough now and then to take the
    clamping branch."""
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    streams = []
    for _ in range(count):
        sizes = rng.sample(range(2, 41), 3)
        temperatures = [round(rng.uniform(0.2, 4.0), 2) for _ in range(3)]
        stream = []
        for _ in range(rng.randint(5, 8)):
            scale = rng.choice((1.0, 1.0, 20.0))
            x = torch.randn(rng.choice(sizes), 4, generator=generator) * scale
            stream.append((x, rng.choice(temperatures)))
        streams.append(stream)
    return streams


@dataclass
class ServeRun:
    """What one call of a learner's `serve` did: its outputs, how many frames Dynamo compiled
    (first compiles and recompiles), and the reason of each recompile."""

    outputs: list
    compiles: int
    recompiles: list[str]


def serve_run(serve: Callable, scorer: nn.Module, requests: list) -> ServeRun:
    """Call serve(scorer, requests) from an empty cache, counting Dynamo's compiles."""
    from torch._dynamo.utils import counters

    torch.compiler.reset()
    before = counters["frames"]["ok"]
    with torch_logs(recompiles=True) as logs, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outputs = serve(scorer, [(x.clone(), t) for x, t in requests])
    compiles = counters["frames"]["ok"] - before
    reasons = [line.strip("- ").strip() for line in logs.text().splitlines() if "- " in line[:8]]
    torch.compiler.reset()
    return ServeRun(list(outputs) if outputs is not None else [], compiles, reasons)


class ReferenceScorer(nn.Module):
    """Chapter 10's `Scorer` as the chapter defines it: the outputs a fixed `serve` must keep."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)
        self.temperature = 1.0

    def forward(self, x):
        logits = self.linear(x) / self.temperature
        if logits.abs().max() > 4:
            logits = logits.clamp(-4, 4)
        return logits.softmax(-1)


def reference_outputs(scorer: nn.Module, requests: list) -> list[torch.Tensor]:
    """What the chapter's Scorer, with `scorer`'s weights, computes for each request, eagerly."""
    reference = ReferenceScorer()
    reference.load_state_dict(scorer.state_dict())
    outputs = []
    with torch.no_grad():
        for x, temperature in requests:
            reference.temperature = temperature
            outputs.append(reference(x))
    return outputs


def same_outputs(got: Sequence, want: Sequence) -> bool:
    return len(got) == len(want) and all(
        isinstance(g, torch.Tensor) and g.shape == w.shape and torch.allclose(g, w, atol=1e-6)
        for g, w in zip(got, want, strict=True)
    )


# ----------------------------------------------------------------------------- 10.3

UNARY = {
    "tanh": torch.ops.aten.tanh.default,
    "sigmoid": torch.ops.aten.sigmoid.default,
    "sin": torch.ops.aten.sin.default,
    "exp": torch.ops.aten.exp.default,
    "relu": torch.ops.aten.relu.default,
    "neg": torch.ops.aten.neg.default,
}


def planted_backend(target) -> Callable:
    """A backend with a planted bug: it runs the graph it is given, except that every call of
    the ATen operator `target` also adds 1 to its result. Right wherever `target` is absent."""

    def backend(gm: fx.GraphModule, example_inputs) -> Callable:
        wrong = copy.deepcopy(gm)
        for node in list(wrong.graph.nodes):
            if node.op == "call_function" and node.target is target:
                with wrong.graph.inserting_after(node):
                    shifted = wrong.graph.call_function(torch.ops.aten.add.Tensor, (node, 1))
                node.replace_all_uses_with(
                    shifted, delete_user_cb=lambda user, s=shifted: user is not s
                )
        wrong.recompile()
        return wrong

    return backend


@dataclass
class MinifierCase:
    """A chain of ATen operators traced with make_fx, its inputs, and the operator that the
    case's backend gets wrong (it appears once, somewhere in the chain)."""

    gm: fx.GraphModule
    inputs: list[torch.Tensor]
    wrong_op: object
    backend: Callable

    @property
    def wrong_name(self) -> str:
        return str(self.wrong_op).removeprefix("aten.").removesuffix(".default")


def minifier_cases(seed: int, count: int = 5) -> list[MinifierCase]:
    """Chains of 4 to 7 unary operators with additions and products between them; the wrong
    operator is drawn each time, and its place in the chain too. A chain whose result hides the
    planted error (a saturated tanh downstream, say) is drawn again."""
    rng = random.Random(seed)
    cases = []
    while len(cases) < count:
        names = list(UNARY)
        wrong = rng.choice(names)
        others = [name for name in names if name != wrong]
        chain = [rng.choice(others) for _ in range(rng.randint(4, 7))]
        chain[rng.randrange(len(chain))] = wrong
        width = rng.randint(3, 8)
        gm = _traced_chain(chain, width)
        inputs = [torch.randn(width, generator=torch.Generator().manual_seed(seed + len(cases)))]
        case = MinifierCase(gm, inputs, UNARY[wrong], planted_backend(UNARY[wrong]))
        if (case.backend(gm, inputs)(*inputs) - gm(*inputs)).abs().max() > 1e-2:
            cases.append(case)
    return cases


def _traced_chain(chain: list[str], width: int) -> fx.GraphModule:
    ops = [getattr(torch, name) for name in chain]

    def run(x):
        for index, op in enumerate(ops):
            y = op(x)
            x = y * 0.5 + x if index % 2 else y + 1
        return x.sum()

    return fx.experimental.proxy_tensor.make_fx(run)(torch.randn(width))


def minified(case: MinifierCase, results_differ: Callable) -> fx.GraphModule | None:
    """The minifier's smallest graph for which `results_differ(gm, inputs, case.backend)` still
    holds, or None when it does not hold for the whole graph (the minifier then refuses)."""
    from torch._functorch.fx_minifier import minifier

    def still_fails(gm, inputs):
        return results_differ(gm, inputs, case.backend)

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
        except RuntimeError:  # "Input graph did not fail the tester"
            return None
    return small


def call_targets(gm: fx.GraphModule) -> list:
    return [node.target for node in gm.graph.nodes if node.op == "call_function"]
