"""How accurate, how big and how fast models are: the measurements behind chapter 8's table.

    rows = measure({"float32": model, "int8": quantized}, inputs, labels)
    print(comparison_table(rows))      # accuracy, size of the constants, time per call

Sizes count what a graph reads: the tensors behind its get_attr nodes. A GraphModule can keep
attributes its graph no longer uses (after a pass replaced them), and those are not counted.

Times are taken on one CPU thread and its CPU clock, with the models taking turns round after
round (fxcourse.timing, as chapters 4 and 5 time), and each model's median round kept: other work
on the machine then disturbs the comparison as little as possible. Compare the times only with
each other.
"""

from __future__ import annotations

import functools
import operator
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.fx
from tabulate import tabulate

from fxcourse.messages import _
from fxcourse.timing import time_callables


@contextmanager
def one_thread() -> Iterator[None]:
    """Run the block with torch using a single CPU thread, then restore the thread count."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def median_times_ms(
    models: dict[str, Callable], inputs: torch.Tensor, rounds: int = 7, min_run_time: float = 0.3
) -> dict[str, float]:
    """Milliseconds per call for each model on one thread: the median of `rounds` rounds in which
    the models take turns (fxcourse.timing.time_callables, which also warms them up)."""
    calls = {name: functools.partial(model, inputs) for name, model in models.items()}
    with torch.no_grad(), one_thread():
        times = time_callables(calls, rounds=rounds, min_run_time=min_run_time)
    return {name: statistics.median(per_round) * 1e3 for name, per_round in times.items()}


def graph_constants(gm: torch.fx.GraphModule) -> dict[str, torch.Tensor]:
    """The tensors the graph reads through get_attr nodes, by qualified name."""
    found = {}
    for node in gm.graph.find_nodes(op="get_attr"):
        value = operator.attrgetter(node.target)(gm)
        if isinstance(value, torch.Tensor):
            found[node.target] = value
    return found


def constant_bytes(model: torch.nn.Module) -> int:
    """Bytes of the weights a model needs: a GraphModule's get_attr tensors, or else every
    parameter and buffer."""
    if isinstance(model, torch.fx.GraphModule):
        tensors = graph_constants(model).values()
    else:
        tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


def accuracy(model: Callable, inputs: torch.Tensor, labels: torch.Tensor) -> float:
    """The fraction of inputs whose highest-scoring class is the label."""
    with torch.no_grad():
        return (model(inputs).argmax(dim=-1) == labels).float().mean().item()


@dataclass
class Measurement:
    name: str
    accuracy: float
    kib: float
    ms: float


def measure(
    models: dict[str, torch.nn.Module], inputs: torch.Tensor, labels: torch.Tensor, **timing
) -> list[Measurement]:
    """For each model: accuracy on (inputs, labels), KiB of constants, milliseconds per call."""
    times = median_times_ms(models, inputs, **timing)
    return [
        Measurement(
            name, accuracy(model, inputs, labels), constant_bytes(model) / 1024, times[name]
        )
        for name, model in models.items()
    ]


def comparison_table(rows: list[Measurement]) -> str:
    """A text table; the last two columns compare each row with the first."""
    base = rows[0]
    body = [
        (r.name, f"{r.accuracy:.1%}", f"{r.kib:.1f}", f"{r.ms:.2f}", f"{base.kib / r.kib:.2f}x")
        + (f"{base.ms / r.ms:.2f}x",)
        for r in rows
    ]
    headers = [_("model"), _("accuracy"), _("weights KiB"), _("ms per call"), _("smaller by")]
    headers.append(_("speed-up"))
    return tabulate(body, headers=headers, colalign=("left",) + ("right",) * 5)
