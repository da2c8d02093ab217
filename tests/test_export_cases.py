"""Chapter 7's case builders (fxcourse.export_cases): what every checkpoint run holds, so that
an answer wrong on one kind of case hears "Not yet" in every run, not in some (the red-team
review's answers: a bound off by one past the end, a written-state finder blind to
aten.batch_norm's unsuffixed writes)."""

from __future__ import annotations

import random

from torch import nn

from fxcourse import export_cases
from fxcourse.cases import makers_of


def runs(builder, count: int, how_many: int = 200):
    for run_seed in random.Random().sample(range(10**6), how_many):
        yield run_seed, [builder(make) for make in makers_of(run_seed, count)]


def test_checkpoint_7_2_runs_the_first_row_past_the_end_every_time():
    for run_seed, drawn in runs(export_cases.row_picks, 6):
        picked = [(len(table), int(row)) for table, row in drawn]
        assert any(row == rows for rows, row in picked), (run_seed, picked)
        assert any(row > rows for rows, row in picked) and any(row < 0 for _, row in picked)


def test_checkpoint_7_3_runs_a_batchnorm_in_training_mode_every_time():
    def training_batchnorm(model: nn.Module) -> bool:
        return any(isinstance(m, nn.BatchNorm1d) and m.training for m in model.modules())

    for run_seed, drawn in runs(export_cases.stateful_models, 5, 100):
        assert any(training_batchnorm(model) for model, _x in drawn), run_seed
