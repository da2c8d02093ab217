"""How accurate, how big and how fast a model is: the measurements behind chapter 7's tables.

    rows = [measure("float32", model, inputs, labels), measure("int8", quantized, inputs, labels)]
    print(comparison_table(rows))      # accuracy, size of the constants, best time per call

Sizes count what a graph reads: the tensors behind its get_attr nodes. A GraphModule can keep
attributes its graph no longer uses (after a pass replaced them), and those are not counted.
Times are the best of a few rounds on this machine (the round least disturbed by other work);
compare them only with each other.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.fx
from tabulate import tabulate


def best_ms(fn: Callable, *args, repeat: int = 5, number: int = 3) -> float:
    """Time of one call of fn(*args) in milliseconds: the best of `repeat` rounds of `number`
    calls each, after one warm-up call."""
    with torch.no_grad():
        fn(*args)
        rounds = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                fn(*args)
            rounds.append((time.perf_counter() - start) / number)
    return min(rounds) * 1e3


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


def measure(name: str, model, inputs: torch.Tensor, labels: torch.Tensor, **timing) -> Measurement:
    """Accuracy on (inputs, labels), size of the constants in KiB, best milliseconds per call."""
    return Measurement(
        name,
        accuracy(model, inputs, labels),
        constant_bytes(model) / 1024,
        best_ms(model, inputs, **timing),
    )


def comparison_table(rows: list[Measurement]) -> str:
    """A text table; the last two columns compare each row with the first."""
    base = rows[0]
    body = [
        (r.name, f"{r.accuracy:.1%}", f"{r.kib:.1f}", f"{r.ms:.2f}", f"{base.kib / r.kib:.2f}x")
        + (f"{base.ms / r.ms:.2f}x",)
        for r in rows
    ]
    headers = ["model", "accuracy", "weights KiB", "ms per call", "smaller by", "speed-up"]
    return tabulate(body, headers=headers, colalign=("left",) + ("right",) * 5)
