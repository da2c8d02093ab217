"""fxcourse.timing: timing in rounds, and the sign test that decides what the rounds show."""

from __future__ import annotations

import pytest

from fxcourse.timing import Comparison, quartiles, sign_test, time_callables, timing_table


def test_sign_test_matches_the_binomial_distribution():
    assert sign_test(15, 15) == pytest.approx(2 / 2**15)
    assert sign_test(0, 15) == sign_test(15, 15)
    assert sign_test(12, 15) == pytest.approx(2 * (455 + 105 + 15 + 1) / 2**15)
    assert sign_test(7, 15) == 1.0  # as even as an odd count allows


def test_quartiles_interpolate_like_numpy():
    assert quartiles([4.0, 1.0, 3.0, 2.0, 5.0]) == (2.0, 3.0, 4.0)
    assert quartiles([1.0, 2.0]) == (1.25, 1.5, 1.75)
    assert quartiles([7.0]) == (7.0, 7.0, 7.0)


def test_a_difference_every_round_agrees_on_is_measurable():
    comparison = Comparison("new", "old", [0.9 + 0.001 * i for i in range(15)])
    assert comparison.wins == 15 and comparison.measurable
    assert comparison.describe().startswith("new vs old: 9.3% faster\n")
    slower = Comparison("interpreter", "code", [3.0 + 0.01 * i for i in range(7)])
    assert slower.measurable and slower.wins == 0
    assert slower.describe().startswith("interpreter vs code: 203.0% slower (3.03x the time)\n")


def test_a_difference_inside_the_noise_is_called_not_measurable():
    comparison = Comparison("new", "old", [0.9 if i % 2 else 1.1 for i in range(15)])
    assert comparison.wins == 7 and not comparison.measurable
    described = comparison.describe()
    assert "below the noise of repeated runs, none measurable here" in described
    assert "faster in 7 of 15 rounds" in described


def test_too_few_rounds_never_count_as_measurable():
    comparison = Comparison("new", "old", [0.9] * 5)
    assert comparison.wins == 5 and not comparison.measurable  # 2 / 2**5 = 6% by chance


def test_time_callables_gives_one_time_per_round_and_orders_cpu_work():
    def little():
        return sum(range(200))

    def much():
        return sum(range(20_000))

    times = time_callables({"little": little, "much": much}, rounds=5, min_run_time=0.05)
    assert [len(times["little"]), len(times["much"])] == [5, 5]
    assert all(m > 10 * s for s, m in zip(times["little"], times["much"], strict=True))


def test_timing_table_shows_medians_spreads_and_ratios():
    times = {"code": [1e-4, 2e-4, 3e-4], "interpreter": [3e-4, 6e-4, 9e-4]}
    lines = timing_table(times, baseline="code").splitlines()
    assert lines[0].split() == ["median", "IQR", "time", "/", "code"]
    assert lines[1].split() == ["code", "200.0µs", "100.0µs", "1.00"]
    assert lines[2].split() == ["interpreter", "600.0µs", "300.0µs", "3.00"]
    assert lines[3].startswith("medians and IQRs over 3 rounds")
