"""fxcourse.measure counts what a graph reads and compares models; fxcourse.toytask makes data."""

from __future__ import annotations

import pytest
import torch
import torch.fx
from torch import nn

from fxcourse.measure import (
    Measurement,
    accuracy,
    comparison_table,
    constant_bytes,
    graph_constants,
    measure,
    median_times_ms,
    one_thread,
)
from fxcourse.toytask import labelled_points, train_classifier


class Affine(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4, 3))
        self.bias = nn.Parameter(torch.zeros(3))

    def forward(self, x):
        return x @ self.weight + self.bias


def test_constant_bytes_counts_the_tensors_the_graph_reads_and_nothing_else():
    gm = torch.fx.symbolic_trace(Affine())
    assert sorted(graph_constants(gm)) == ["bias", "weight"]
    assert constant_bytes(gm) == (12 + 3) * 4
    gm.register_buffer("unused", torch.zeros(1000))  # kept by the module, never read
    assert constant_bytes(gm) == (12 + 3) * 4
    bias_node = next(n for n in gm.graph.nodes if n.op == "get_attr" and n.target == "bias")
    add_node = next(iter(bias_node.users))
    add_node.replace_all_uses_with(add_node.args[0])
    gm.graph.erase_node(add_node)
    gm.graph.erase_node(bias_node)
    assert constant_bytes(gm) == 12 * 4


def test_constant_bytes_of_a_plain_module_counts_parameters_and_buffers():
    assert constant_bytes(nn.Linear(4, 3)) == (12 + 3) * 4
    assert constant_bytes(nn.BatchNorm1d(5)) == 4 * 5 * 4 + 8  # 4 float vectors + int64 count


def test_accuracy_is_the_fraction_of_right_argmaxes():
    scores = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    labels = torch.tensor([1, 0, 0, 0])
    assert accuracy(lambda inputs: inputs, scores, labels) == 0.5


def test_median_times_time_every_model_on_one_thread_without_grad():
    seen = []

    def model(x):
        seen.append((torch.get_num_threads(), torch.is_grad_enabled()))
        return x

    threads = torch.get_num_threads()
    times = median_times_ms({"a": model, "b": model}, torch.zeros(1), rounds=2, min_run_time=0.02)
    assert sorted(times) == ["a", "b"] and all(t >= 0.0 for t in times.values())
    assert set(seen) == {(1, False)} and torch.get_num_threads() == threads


def test_one_thread_restores_the_thread_count_even_after_an_error():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError), one_thread():
        assert torch.get_num_threads() == 1
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before


def test_measure_reports_accuracy_size_and_time_per_model():
    linear, negated = nn.Linear(4, 2), nn.Linear(4, 2)
    with torch.no_grad():
        negated.weight.copy_(-linear.weight)
        negated.bias.copy_(-linear.bias)
    inputs = torch.randn(8, 4)
    labels = linear(inputs).argmax(dim=-1).detach()
    rows = measure({"right": linear, "wrong": negated}, inputs, labels, rounds=1)
    assert [row.name for row in rows] == ["right", "wrong"]
    assert rows[0].accuracy == 1.0 and rows[1].accuracy == 0.0
    assert rows[0].kib == (8 + 2) * 4 / 1024
    assert rows[0].ms >= 0.0


def test_comparison_table_compares_every_row_with_the_first():
    rows = [Measurement("float", 0.9, 100.0, 10.0), Measurement("int8", 0.875, 25.0, 5.0)]
    table = comparison_table(rows)
    int8_line = next(line for line in table.splitlines() if line.startswith("int8"))
    assert "87.5%" in int8_line and "4.00x" in int8_line and "2.00x" in int8_line
    float_line = next(line for line in table.splitlines() if line.startswith("float"))
    assert float_line.count("1.00x") == 2


def test_labelled_points_are_reproducible_and_use_every_class():
    points, labels = labelled_points(512, features=8, classes=4, seed=3)
    again, same_labels = labelled_points(512, features=8, classes=4, seed=3)
    assert points.shape == (512, 8) and labels.shape == (512,)
    assert torch.equal(points, again) and torch.equal(labels, same_labels)
    assert set(labels.tolist()) == {0, 1, 2, 3}
    assert not torch.equal(labelled_points(512, seed=4)[1], labels)


def test_train_classifier_learns_the_task_and_leaves_eval_mode():
    torch.manual_seed(0)
    points, labels = labelled_points(2048)
    model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 4))
    chance = torch.bincount(labels[1536:]).max().item() / 512
    train_classifier(model, points[:1536], labels[:1536], steps=60)
    assert not model.training
    assert accuracy(model, points[1536:], labels[1536:]) > chance + 0.2
