"""Chapters 10 and 12: their checkpoints judge fresh cases made from a seed.

Each try-it's check cell runs here outside the notebook, on chosen seeds: it passes the reference
answer on every seed, and refuses an answer that is right only for the chapter's own example.
`FXCOURSE_CHECK_SEEDS=20` runs 20 seeds per try-it (the default is a few, to keep `make test`
short). Also: `structured_trace` and `tlparse` (fxcourse.capture), which chapter 10 uses.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import nbformat
import pytest
import torch

from fxcourse import authoring, compile_depth
from fxcourse.capture import structured_trace, tlparse

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = {
    "10": ROOT / "solutions" / "10_compile_and_export_in_depth.ipynb",
    "12": ROOT / "solutions" / "12_export_in_depth.ipynb",
}
SEEDS = list(range(int(os.environ.get("FXCOURSE_CHECK_SEEDS", "2"))))
# What each try-it's check needs from its chapter besides the learner's answer.
NEEDS = {
    "10.1": ["doubled_relu"],
    "10.2": ["Scorer"],
    "10.3": [],
    "12.1": ["Interleave"],
    "12.2": [],
}


class NotYet(Exception):
    pass


class Judge:
    """Stands in for fxcourse.tryit.checkpoint: keeps the first failed hint, shows nothing."""

    verdicts: list[str | None] = []

    def __init__(self, tryit_id: str, goal: str):
        self.tryit_id = tryit_id

    def __enter__(self):
        return self.check

    @staticmethod
    def check(condition, hint):
        if not condition:
            raise NotYet(hint)

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and not isinstance(exc, Exception):
            return False
        Judge.verdicts.append(None if exc is None else f"{type(exc).__name__}: {exc}")
        return True


def chapter_cells(tryit: str) -> tuple[dict, dict[str, list[str]]]:
    """A namespace with the chapter's first code cell run and the definitions the check
    needs, and the try-it's cell sources by role."""
    nb = nbformat.read(CHAPTERS[tryit.split(".")[0]], as_version=4)
    code = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    namespace: dict = {}
    exec(compile(code[0], "setup", "exec"), namespace)
    for name in NEEDS[tryit]:
        exec(compile(definition(code, name), name, "exec"), namespace)
    namespace["checkpoint"] = Judge
    roles: dict[str, list[str]] = {}
    for index in [i for indices in authoring.tryits(nb)[tryit].values() for i in indices]:
        roles.setdefault(nb.cells[index].metadata["tryit"]["role"], []).append(
            nb.cells[index].source
        )
    return namespace, roles


def definition(sources: list[str], name: str) -> str:
    """The source of the top-level function or class `name` in the chapter's code cells."""
    for source in sources:
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
                return ast.get_source_segment(source, node)
    raise LookupError(name)


def verdict(tryit: str, answer: str, seed: int, monkeypatch) -> str | None:
    namespace, roles = chapter_cells(tryit)
    monkeypatch.setattr(compile_depth, "fresh_seed", lambda: seed)
    Judge.verdicts = []
    exec(compile(answer, "answer", "exec"), namespace)
    exec(compile(roles["check"][0], "check", "exec"), namespace)
    assert len(Judge.verdicts) == 1
    return Judge.verdicts[0]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tryit", sorted(NEEDS))
def test_the_reference_answer_passes_on_fresh_cases(tryit, seed, monkeypatch):
    _, roles = chapter_cells(tryit)
    assert verdict(tryit, roles["answer"][0], seed, monkeypatch) is None


# Answers right for the chapter's own example only, written here (not in the chapter).
RIGHT_FOR_THE_EXAMPLE_ONLY = {
    "10.1": """
def what_compiles(batches):
    if tuple(batches) == (3, 3, 5, 1, 8, 0, 6):
        return ["static", "reuse", "symbolic", "static", "reuse", "static", "reuse"]
    return ["static"] + ["reuse"] * (len(batches) - 1)
""",
    "10.2": """
def serve(scorer, requests):  # dynamic only for the stream the chapter showed (first batch 8)
    compiled = torch.compile(scorer, backend="eager", dynamic=requests[0][0].shape[0] == 8 or None)
    outputs = []
    for x, temperature in requests:
        scorer.temperature = temperature
        outputs.append(compiled(x))
    return outputs
""",
    "10.3": """
def results_differ(gm, inputs, backend):  # the chapter's planted bug was in relu
    return any(node.target is torch.ops.aten.relu.default for node in gm.graph.nodes)
""",
    "12.1": """
def interleave_shapes(low, high):
    n, batch = Dim("n", min=2, max=32), Dim("batch")
    return {"x": {0: batch, 1: n}, "y": {0: batch, 1: 2 * n}}
""",
    "12.2": """
class Gcd(nn.Module):
    def forward(self, a, b):  # a loop, but of the steps (12, 18) needs, unrolled
        for _ in range(3):
            nonzero = b != 0
            a, b = torch.where(nonzero, b, a), torch.where(nonzero, a % b.clamp(min=1), b)
        return a
""",
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tryit", sorted(RIGHT_FOR_THE_EXAMPLE_ONLY))
def test_an_answer_right_only_for_the_chapters_example_is_refused(tryit, seed, monkeypatch):
    problem = verdict(tryit, RIGHT_FOR_THE_EXAMPLE_ONLY[tryit], seed, monkeypatch)
    assert problem is not None


def test_dynamic_with_bounds_is_an_honest_alternative_for_12_1(monkeypatch):
    alternative = """
def interleave_shapes(low, high):
    return {"x": {0: Dim.AUTO, 1: Dim.DYNAMIC(min=low, max=high)}, "y": {0: Dim.AUTO, 1: Dim.AUTO}}
"""
    assert verdict("12.1", alternative, 5, monkeypatch) is None


def test_marks_and_a_tensor_temperature_without_the_break_are_an_honest_alternative(monkeypatch):
    alternative = """
class Scorer(nn.Module):  # the same outputs: clamping values within [-4, 4] changes nothing
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)
        self.temperature = 1.0

    def forward(self, x):
        return (self.linear(x) / self.temperature).clamp(-4, 4).softmax(-1)


def serve(scorer, requests):
    compiled = torch.compile(scorer, backend="eager")
    outputs = []
    for x, temperature in requests:
        scorer.temperature = torch.tensor(temperature)
        torch._dynamo.mark_dynamic(x, 0)
        outputs.append(compiled(x))
    return outputs
"""
    assert verdict("10.2", alternative, 3, monkeypatch) is None


def test_a_trace_of_a_recompile_reads_back_from_tlparse(tmp_path):
    def scaled(x, factor):
        return x * factor

    torch.compiler.reset()
    compiled = torch.compile(scaled, backend="eager", dynamic=False)
    with structured_trace(tmp_path / "trace.log"):
        compiled(torch.ones(2), 2.0)
        compiled(torch.ones(2), 3.0)
    report = tlparse(tmp_path / "trace.log", tmp_path / "report")
    assert report.index.exists()
    assert report.compile_ids() == ["[0/0]", "[0/1]"]
    assert report.function_names() == {"[0/0]": "scaled", "[0/1]": "scaled"}
    assert report.recompile_reasons("[0/0]") == []
    (reason,) = report.recompile_reasons("[0/1]")
    assert reason.startswith("0/0: factor == 2.0")
    assert "test_depth_checkpoints.py" in report.artifact("[0/1]", "recompile_reasons")


def test_the_trace_handler_is_removed_after_the_block(tmp_path):
    from torch._logging._internal import trace_log

    before = list(trace_log.handlers)
    with structured_trace(tmp_path / "trace.log"):
        assert len(trace_log.handlers) == len(before) + 1
    assert trace_log.handlers == before


def test_a_planted_backend_is_wrong_exactly_where_its_operator_is():
    backend = compile_depth.planted_backend(torch.ops.aten.tanh.default)
    for case in compile_depth.minifier_cases(11):
        x = case.inputs
        assert torch.allclose(case.backend(case.gm, x)(*x), case.gm(*x)) is False
        uses_tanh = torch.ops.aten.tanh.default in compile_depth.call_targets(case.gm)
        assert torch.allclose(backend(case.gm, x)(*x), case.gm(*x)) is not uses_tanh
