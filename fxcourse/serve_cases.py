"""Try it 10.2's checkpoint (chapter 10): the requests it draws fresh from a seed at every run
(fxcourse.tryit's `check.cases`), a run of the learner's `serve` measured under Dynamo's default
settings, and what the chapter's Scorer computes. The checkpoint cell words the messages.

    request_stream(make)                     requests (batch sizes, temperatures) and weights
    serve_run(serve, scorer, requests)       outputs, compiles, recompile reasons, eager requests
    first_recompile(run)                     its first recompile's reason, as a learner reads it
    reference_outputs(seed, requests)        what the chapter's Scorer computes for them
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from fxcourse.capture import torch_logs, unprofiled_guards
from fxcourse.messages import _


def request_stream(make) -> tuple[list[tuple[torch.Tensor, float]], int]:
    """(requests, weights seed): 5 to 7 (x, temperature) pairs whose batch sizes and temperatures
    change and come back; now and then inputs large enough to be clamped, and one request whose
    logits pass 4 on one side only (below -4 or above 4, each in every run: a rewrite that tests
    max() or min() instead of abs().max() leaves it unclamped). Batch sizes are 5 or more: a
    batch of 3 or 4, equal to a width, would be duck-sized into the width's symbol. Temperatures
    have three decimals, the third never 0 (red team redY: round(t, 2) passed every run)."""
    sizes = [make.integer(5, 40) for _ in range(3)]
    # a third decimal, 3 to 7: a serve that rounds the temperature to two decimals changes it
    temperatures = [
        round(make.integer(20, 400) / 100 + make.integer(3, 7) / 1000, 3) for _ in range(3)
    ]
    count, weights_seed = make.integer(4, 6), make.integer(0, 10**6)  # and the one-sided one
    clamped = make.integer(0, count - 1)  # at least one request large enough to be clamped
    requests = []
    for index in range(count):
        scale = 20.0 if index == clamped else make.choice((1.0, 1.0, 20.0))
        requests.append(
            (make.tensor(make.choice(sizes), 4, scale=scale), make.choice(temperatures))
        )
    temperature = make.choice(temperatures)
    side = _one_sided(make, make.choice(sizes), temperature, weights_seed, make.each((-1.0, 1.0)))
    requests.insert(make.integer(0, count), (side, temperature))
    make.note(f"{[tuple(x.shape)[0] for x, _ in requests]}, {[t for _, t in requests]}")
    return requests, weights_seed


def _one_sided(make, rows: int, temperature: float, weights_seed: int, sign: float):
    """A batch whose logits, after the temperature, lie within (-3, 3) but one, which lies past 4
    on the side `sign`: made for the chapter's Scorer, whose nn.Linear(4, 3) the seed draws first,
    by solving its weight's system for each row (the weight's pseudo-inverse)."""
    with torch.random.fork_rng():
        torch.manual_seed(weights_seed)
        linear = nn.Linear(4, 3)
    logits = torch.rand(rows, 3, generator=make.generator) * 6 - 3
    logits[make.integer(0, rows - 1), make.integer(0, 2)] = sign * make.rng.uniform(5, 8)
    with torch.no_grad():
        return (logits * temperature - linear.bias) @ torch.linalg.pinv(linear.weight).T


@dataclass
class ServeRun:
    """What one call of a learner's `serve` did: its outputs, how many graphs Dynamo handed a
    backend (first compiles and recompiles), and the reason of each recompile."""

    outputs: list
    compiles: int
    recompiles: list[str]
    uncompiled: list[int]  # 1-based requests whose output no compiled graph returned
    set_aside: list[str]  # Dynamo settings set outside serve, at their defaults for its run


def _recording(backend, runs: list, graphs: list) -> Callable:
    """`backend` (a name or a callable), whose compiled graphs record each run, the tensors they
    are given and return, in `runs`, so that a request served eagerly can be told apart; each
    graph it is handed goes into `graphs` (Dynamo's frame counter misses the compiles of
    fullgraph=True: honQ)."""
    from torch._dynamo.backends.registry import lookup_backend

    inner = lookup_backend(backend)

    def recording_backend(gm, example_inputs, **kwargs):
        graphs.append(gm)
        compiled = inner(gm, example_inputs, **kwargs)

        def run(*args):
            result = compiled(*args)
            leaves = torch.utils._pytree.tree_leaves
            runs.append((_tensors(leaves(args)), _tensors(leaves(result))))
            return result

        return run

    return recording_backend


# Dynamo settings that decide whether and how a frame recompiles: serve_run restores their
# defaults for its block, whatever an earlier cell set (a recompile_limit lowered to 1 there made
# every answer's second compile run eagerly instead). A serve that sets one itself still has its
# recompiles logged, and refused.
RECOMPILE_SETTINGS = (
    "recompile_limit",
    "accumulated_recompile_limit",
    "automatic_dynamic_shapes",
    "assume_static_by_default",
    "specialize_int",
    "specialize_float",
    "error_on_recompile",
)


def dynamo_defaults(names=RECOMPILE_SETTINGS) -> dict:
    """torch._dynamo.config's defaults for `names` (its private table of entries)."""
    table = torch._dynamo.config._config
    return {name: table[name].default for name in names if name in table}


def serve_run(serve: Callable, scorer: nn.Module, requests: list) -> ServeRun:
    """Call serve(scorer, requests) from an empty cache, counting the graphs Dynamo compiles,
    noting which requests' outputs no compiled model returned (`_uncompiled`), whatever the
    backend. It runs under the default stance and Dynamo's default recompile settings: a stance
    an earlier cell left set (force_eager, tried after 10.1) would stop every answer compiling,
    the reference's too, and a lowered recompile_limit would hide recompiles."""
    from unittest import mock

    from torch._dynamo import eval_frame

    torch.compiler.reset()
    runs: list = []
    graphs: list = []
    defaults = dynamo_defaults()
    set_aside = [name for name in defaults if getattr(torch._dynamo.config, name) != defaults[name]]
    inputs = [(x.clone(), t) for x, t in requests]
    real = eval_frame.get_compiler_fn
    with (
        mock.patch.object(
            eval_frame, "get_compiler_fn", lambda fn: real(_recording(fn, runs, graphs))
        ),
        torch_logs(recompiles=True) as logs,
        unprofiled_guards(),
        warnings.catch_warnings(),
        torch.compiler.set_stance("default"),
        torch._dynamo.config.patch(defaults),
    ):
        warnings.simplefilter("ignore")
        outputs = serve(scorer, inputs)
        # a serve that yields its outputs runs as they are taken: here, where Dynamo is watched
        outputs = list(outputs) if outputs is not None else []
    compiles = len(graphs)
    reasons = [guard_reason(line) for line in logs.text().splitlines() if "- " in line[:8]]
    torch.compiler.reset()
    weights = list(scorer.parameters())  # alive: no address reused
    return ServeRun(outputs, compiles, reasons, _uncompiled(outputs, runs, weights), set_aside)


def _tensors(leaves: list) -> list[torch.Tensor]:
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


def _uncompiled(outputs: list, runs: list, weights: list) -> list[int]:
    """1-based requests whose output no compiled graph computed from the model's weights: a
    graph given the weights, or what such a graph returned (the graph after a break), returns
    the output, a view of it (one call for many requests, split: redL4) or its values (a clone:
    redJ3), in any order (requests served reversed or grouped: redL4). A pass-through or a
    compiled tail behind an eager model is given no such tensor (redJ3); an output computed
    eagerly could never recompile. A graph given a copy of the weights counts (honS: a compiled
    deep copy of the scorer)."""
    from_weights, served = {_storage(w) for w in weights}, []
    for given, returned in runs:  # in the order they ran: what each hands on is known
        copies = any(_holds_rows_of(w, t) and len(t) == len(w) for t in given for w in weights)
        if copies or any(_storage(t) in from_weights for t in given):
            from_weights.update(_storage(t) for t in returned)
            served.extend(returned)
    return [
        number
        for number, out in enumerate(outputs, start=1)
        if not (isinstance(out, torch.Tensor) and _among(out, served))
    ]


def _among(out: torch.Tensor, returned: list[torch.Tensor]) -> bool:
    """Whether `out` is one of `returned` or a view of one, or holds the values of one or of
    some of its rows (a clone)."""
    return any(_storage(out) == _storage(t) or _holds_rows_of(t, out) for t in returned)


def _holds_rows_of(whole: torch.Tensor, out: torch.Tensor) -> bool:
    if out.dim() == 0 or (out.dtype, out.shape[1:]) != (whole.dtype, whole.shape[1:]):
        return False
    rows = len(out)
    return any(
        torch.equal(whole[start : start + rows], out) for start in range(len(whole) - rows + 1)
    )


def guard_reason(line: str) -> str:
    """A recompile reason as Dynamo logs it ("- 0/0: self.temperature == 1.5   # cell:8 in
    forward"), without its compile id, its column padding and the source it quotes after "#"."""
    guard = " ".join(line.strip("- ").split(" #")[0].split())
    return re.sub(r"^\d+/\d+: ", "", guard)


def first_recompile(run: ServeRun) -> str:
    """Dynamo's guard that failed first, or for a frame that a second torch.compile met
    (BACKEND_MATCH: a backend other than the one it was compiled with) what that means."""
    if not run.recompiles:
        return ""
    reason = run.recompiles[0]
    if reason.startswith("BACKEND_MATCH"):
        return _(
            "a second torch.compile met a frame that another one had compiled: is torch.compile"
            " called anew for each request? (10.4)"
        )
    reason = reason if len(reason) <= 120 else reason[:117] + "..."
    if run.set_aside:  # honR: set in an earlier cell, they did not reach serve's run here
        reason += _(
            " (serve ran with Dynamo's default {names}: set what serve needs inside it, with"
            " torch._dynamo.config.patch)"
        ).format(names=", ".join(run.set_aside))
    return reason


def _storage(value) -> int | None:
    return value.untyped_storage().data_ptr() if isinstance(value, torch.Tensor) else None


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


def reference_outputs(weights_seed: int, requests: list) -> list[torch.Tensor]:
    """What the chapter's Scorer, its weights drawn after torch.manual_seed(weights_seed) as
    `served` draws the answer's, computes for each request, eagerly. (Not the answer's Scorer's
    state_dict: a Scorer given a temperature buffer of its own is an honest answer, honN.)"""
    torch.manual_seed(weights_seed)
    reference = ReferenceScorer()
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


def served_by(reference) -> Callable:
    """10.2: (answer, requests, weights_seed) -> the answer's serve run on the Scorer its cells
    define, whose weights come from `weights_seed`; `reference`'s on the chapter's Scorer, the
    one it is written for (a learner's Scorer with a temperature buffer is theirs, honN)."""

    def served(answer, requests: list, weights_seed: int) -> ServeRun:
        torch.manual_seed(weights_seed)
        scorer = ReferenceScorer() if answer is reference else answer.Scorer()
        return serve_run(answer.serve, scorer, requests)

    return served


served = served_by(None)  # the learner's side
