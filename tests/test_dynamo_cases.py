"""Chapter 6's case builders (fxcourse.dynamo_cases) judged as the checkpoints judge them: on the
cases of a run, honest answers other than the chapter's pass beside the reference, and wrong ones
(a climb that keeps Dynamo's cache, one that asks for the same bits, one that lets a crash end the
climb, one that blames every crash on Dynamo, one that skips aot_eager or passes over a later
crash, a backend that counts buffers or only trainable weights) fail in every run.

test_tryits runs the chapter's own mistakes and answer; this adds what else a learner may write.
FXCOURSE_CASE_SEEDS=20 judges twenty runs (the default, 1, keeps `make test` short).
"""

from __future__ import annotations

import os
import random
import types
from types import SimpleNamespace

import check_cells
import pytest
import torch
from torch import nn

from fxcourse import dynamo_cases as cases
from fxcourse.backend_cases import counted, drawn_models, handed_over
from fxcourse.cases import CaseMaker, makers_of
from fxcourse.reference import close_enough

RUNS = int(os.environ.get("FXCOURSE_CASE_SEEDS", "1"))
RUN_SEEDS = [random.Random(n).randrange(10**6) for n in range(RUNS)]
HEALTHY_RUNS = 40 if RUNS >= 20 else 12  # runs drawn afresh: make test-checkpoints draws 40
LADDER = ("eager", "aot_eager", "aot_eager_decomp_partition")


def makers(run_seed: int, count: int = 5) -> list[CaseMaker]:
    return makers_of(run_seed, count)


def test_unfilled_tells_a_scaffold_from_an_answer():
    def scaffold(fn, sample): ...  # your code here

    def answer(fn, sample):
        return None

    def documented(fn, sample):
        """A docstring above the scaffold's `...` leaves it unfilled."""
        ...

    assert cases.unfilled(scaffold) and cases.unfilled(...) and cases.unfilled(answer, ...)
    assert cases.unfilled(documented)
    assert not cases.unfilled(answer, torch.ones(2), lambda: ...)


def test_planted_bug_breaks_only_inside_its_block():
    sample = torch.randn(16)
    table = cases.inductor_decompositions.select_decomp_table()
    healthy = table[torch.ops.aten.silu.default]
    with cases.planted_bug():
        broken = table[torch.ops.aten.silu.default](sample)
    assert table[torch.ops.aten.silu.default] is healthy
    assert not torch.allclose(broken, nn.functional.silu(sample))


def climb(
    compare,
    reset=True,
    catch=True,
    ladder=LADDER,
    on_error=lambda backend: backend,
    whole=False,
    wrap=False,
):
    """A learner's first_failing_backend; on_error(backend): its verdict on a crash, None: go on;
    whole: compiled with fullgraph=True; reset: before each stage, "after" it, or never; wrap:
    compiles a lambda that calls fn (a code object of its own, traced anew at each stage)."""

    def first_failing_backend(fn, sample):
        expected = fn(sample)
        for backend in ladder:
            if reset is True:
                torch.compiler.reset()
            try:
                compiled = (lambda t: fn(t)) if wrap else fn
                result = torch.compile(compiled, backend=backend, fullgraph=whole)(sample)
            except Exception:
                if not catch:
                    raise
                if on_error(backend) is None:
                    continue
                return on_error(backend)
            finally:
                if reset == "after":
                    torch.compiler.reset()
            if not compare(result, expected):
                return backend
        return None

    return SimpleNamespace(first_failing_backend=first_failing_backend)


def assert_close_holds(result, expected):
    try:
        torch.testing.assert_close(result, expected)
    except AssertionError:
        return False
    return True


REFERENCE = climb(torch.allclose)
HONEST = {"assert_close": climb(assert_close_holds)}
HONEST["looser"] = climb(lambda r, e: torch.allclose(r, e, rtol=1e-3, atol=1e-4))
HONEST["fn in a lambda"] = climb(torch.allclose, wrap=True)
WRONG = {"no reset": climb(torch.allclose, reset=False), "same bits": climb(torch.equal)}
# the red team's (redJ3): a cache cleared after each stage, so a stale graph meets the first
WRONG["reset after each stage"] = climb(torch.allclose, reset="after")
# the red team's (redR7): no reset, fn compiled in a lambda (fn's own cache still runs at a break)
WRONG["no reset, fn in a lambda"] = climb(torch.allclose, reset=False, wrap=True)
# the red team's (redL4): a comparison of some of the values (the faults were at index 3)
WRONG["first eight values"] = climb(lambda r, e: torch.allclose(r[:8], e[:8]))
WRONG["every third value"] = climb(lambda r, e: torch.allclose(r[::3], e[::3]))
WRONG["no try"] = climb(torch.allclose, catch=False)
WRONG["any crash is Dynamo's"] = climb(torch.allclose, on_error=lambda backend: "eager")
WRONG["skips aot_eager"] = climb(torch.allclose, ladder=LADDER[::2])
WRONG["passes over later crashes"] = climb(
    torch.allclose, on_error=lambda backend: backend if backend == "eager" else None
)
WRONG["sums only"] = climb(lambda r, e: torch.isclose(r.sum(), e.sum(), rtol=1e-4))
WRONG["sorted values"] = climb(lambda r, e: torch.allclose(r.sort().values, e.sort().values))
WRONG["fullgraph"] = climb(torch.allclose, whole=True)  # the red team's (redB): a break is no fault
# the red team's (redD): a tolerance far above rounding, and a comparison that NaN passes
WRONG["loose tolerance"] = climb(lambda r, e: torch.allclose(r, e, atol=0.05))
WRONG["blind to NaN"] = climb(lambda r, e: not bool((r - e).abs().max() > 1e-4))
# known fault s35e: a tolerance near 0.01 was judged differently from run to run
WRONG["tolerance of 0.01"] = climb(lambda r, e: torch.allclose(r, e, atol=0.01))
# the red team's (redL): comparisons that forgive a few wrong values, a share or on average
WRONG["99 % close"] = climb(lambda r, e: bool(torch.isclose(r, e).float().mean() >= 0.99))
WRONG["99.5 % close"] = climb(lambda r, e: bool(torch.isclose(r, e).float().mean() >= 0.995))
WRONG["mean relative error"] = climb(
    lambda r, e: (
        torch.equal(r.isnan(), e.isnan())
        and bool(((r - e).abs() / (e.abs() + 1e-6)).nanmean() <= 1e-3)
    )
)
# the red team's (redP): forgiving one or two values, or 0.1 % of them ("dynamo nan" has one place)
WRONG["forgives one value"] = climb(lambda r, e: int((~torch.isclose(r, e)).sum()) <= 1)
WRONG["forgives two values"] = climb(lambda r, e: int((~torch.isclose(r, e)).sum()) <= 2)
WRONG["99.9 % close"] = climb(lambda r, e: bool(torch.isclose(r, e).float().mean() >= 0.999))


def test_6_3_judges_a_tolerance_the_same_way_in_every_run():
    """The "dynamo off" fault is OFF * min(1, |value|) in a few places, one of them the value
    nearest 1 in size: a tolerance whose atol + rtol reaches OFF misses it in every run, one well
    below catches it in every run (the fault used to grow with the largest value drawn)."""
    for run_seed in random.Random().sample(range(10**6), 60):
        drawn = {
            case.kind: case for make in makers(run_seed, 7) for case in cases.planted_cases(make)
        }
        off = drawn["dynamo off"]
        eager = off.fn(off.sample)
        wrong = cases._wrong_in_dynamo(eager, "dynamo off", 0)
        for loose in ({"atol": 0.01}, {"rtol": 0.01}, {"atol": 0.004, "rtol": 0.004}):
            assert torch.allclose(wrong, eager, **loose), (run_seed, loose)
        for tight in ({}, {"rtol": 1e-3, "atol": 1e-4}, {"atol": 0.002}, {"rtol": 0.002}):
            assert not torch.allclose(wrong, eager, **tight), (run_seed, tight)


def test_every_run_of_6_3_moves_values_in_dynamos_graph():
    """A comparison of summaries (sum, mean, norm, sorted values) cannot see a fault that only
    moves values: each run's Dynamo case computes the same values in other places (the red
    team's sums-only climb passed every run while every planted fault negated the input); the
    fault planted in a decomposition is a move in some runs and a negated input in others."""
    planted = set()
    for run_seed in random.Random().sample(range(10**6), 30):
        drawn = {
            case.kind: case for make in makers(run_seed, 7) for case in cases.planted_cases(make)
        }
        dynamo = drawn["dynamo"]
        torch.compiler.reset()
        with cases.unprofiled_guards():
            traced = torch.compile(dynamo.fn, backend="eager")(dynamo.sample)
        eager = dynamo.fn(dynamo.sample)
        assert torch.equal(traced.sort().values, eager.sort().values), run_seed
        assert not torch.allclose(traced, eager), run_seed
        planted.add(bool(drawn["wrong"].moved))
    assert planted == {True, False}


def verdict(answer, case):
    try:
        return cases.blamed(answer, case)
    except Exception as error:  # the no-try climb: its error is its verdict
        return type(error).__name__


@pytest.mark.parametrize("run_seed", RUN_SEEDS)
def test_checkpoint_6_3_passes_honest_climbs_and_refuses_wrong_ones(run_seed):
    refused = dict.fromkeys(WRONG, False)
    for make in makers(run_seed, 7):
        (case,) = cases.planted_cases(make)
        wanted = verdict(REFERENCE, case)
        for name, answer in HONEST.items():
            assert verdict(answer, case) == wanted, (name, make.describe())
        for name, answer in WRONG.items():
            refused[name] = refused[name] or verdict(answer, case) != wanted  # once is enough
    assert all(refused.values()), refused


def test_a_healthy_stage_differs_from_eager_only_by_rounding():
    """Each run's healthy case (no fault in fn's operators) is decomposed with other bits than
    eager's, and within allclose's tolerance at every element: else the same-bits mistake would
    pass it and the reference blame a healthy stage (fn near 0 did, about 1 case in 20)."""
    healthy = []
    for run_seed in random.Random().sample(range(10**6), HEALTHY_RUNS):
        for make in makers(run_seed, 7):
            (case,) = cases.planted_cases(make)
            if not (case.crash or case.compiled_before):
                healthy.append((case, make.describe()))
    assert len(healthy) == HEALTHY_RUNS, [described for _, described in healthy]
    for case, described in healthy:
        torch.compiler.reset()
        with cases.unprofiled_guards():
            decomposed = torch.compile(case.fn, backend=LADDER[-1])(case.sample)
        eager = case.fn(case.sample)
        assert not torch.equal(decomposed, eager), described
        assert torch.allclose(decomposed, eager), described


def weights(count_of):
    counts = []

    def backend(gm, inputs):
        counts.append(count_of(gm, inputs))
        return gm.forward

    return SimpleNamespace(weight_counts=counts, weights_backend=backend)


def by_type(gm, inputs):
    return sum(t.numel() for t in inputs if isinstance(t, nn.Parameter))


def by_grad(gm, inputs):
    return sum(t.numel() for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad)


def by_name(gm, inputs):
    names = [node.name for node in gm.graph.find_nodes(op="placeholder")]
    return sum(t.numel() for n, t in zip(names, inputs, strict=True) if "_parameters_" in n)


def by_type_or_grad(gm, inputs):  # the red team's (redB): a batch that requires grad counted
    return sum(t.numel() for t in inputs if isinstance(t, nn.Parameter) or t.requires_grad)


def weights_and_biases(gm, inputs):  # the red team's (redD): parameters told by their names
    names = [node.name for node in gm.graph.find_nodes(op="placeholder")]
    return sum(
        t.numel() for n, t in zip(names, inputs, strict=True) if "weight" in n or "bias" in n
    )


def with_dimensions(gm, inputs):  # the red team's (redH): a 0-dim parameter left out
    return sum(t.numel() for t in inputs if isinstance(t, nn.Parameter) and t.dim() > 0)


def bytes_over_four(gm, inputs):  # the red team's (redJ): a parameter's bytes read as float32s
    return sum(t.nbytes for t in inputs if isinstance(t, nn.Parameter)) // 4


def first_two_sizes(gm, inputs):  # the red team's (redL): rows times columns, for any weight
    weights = [t for t in inputs if isinstance(t, nn.Parameter)]
    return sum(t.shape[0] * t.shape[1] if t.dim() >= 2 else t.numel() for t in weights)


def all_of_self(gm, inputs):  # every input read from the module: buffers too
    names = [node.name for node in gm.graph.find_nodes(op="placeholder")]
    return sum(t.numel() for n, t in zip(names, inputs, strict=True) if n.startswith("l_self_"))


def stats_and_x_left_out_by_name(gm, inputs):  # the red team's (redY): BatchNorm's and x's names
    names = [node.name for node in gm.graph.find_nodes(op="placeholder")]
    left_out = ("running_", "num_batches", "l_x_")
    return sum(
        t.numel() for n, t in zip(names, inputs, strict=True) if not any(s in n for s in left_out)
    )


def stats_left_out_by_name(gm, inputs):  # every input read from the module but BatchNorm's stats
    names = [node.name for node in gm.graph.find_nodes(op="placeholder")]
    kept = [t for n, t in zip(names, inputs, strict=True) if n.startswith("l_self_")]
    stats = [t for n, t in zip(names, inputs, strict=True) if "running_" in n or "num_batches" in n]
    return sum(t.numel() for t in kept) - sum(t.numel() for t in stats)


def x_left_out_by_name(gm, inputs):  # buffers told by their kind, the batch by the name x
    names = [node.name for node in gm.graph.find_nodes(op="placeholder")]
    kept = [t for n, t in zip(names, inputs, strict=True) if "_buffers_" not in n and n != "l_x_"]
    return sum(t.numel() for t in kept)


@pytest.mark.parametrize("run_seed", RUN_SEEDS)
def test_checkpoint_6_1_passes_other_ways_to_tell_a_weight_and_refuses_buffers(run_seed):
    refused = {"buffers counted": False, "frozen weights left out": False, "x counted": False}
    refused["only weight and bias names"] = refused["0-dim parameters left out"] = False
    refused["bytes over 4"] = refused["rows times columns"] = False
    refused["stats and x left out by name"] = refused["stats left out by name"] = False
    refused["x left out by name"] = False
    for make in makers(run_seed):
        gm, inputs = handed_over(*drawn_models(make))
        wanted, _ = counted(weights(by_type), gm, inputs)
        assert counted(weights(by_name), gm, inputs)[0] == wanted, make.describe()
        refused["buffers counted"] |= counted(weights(all_of_self), gm, inputs)[0] != wanted
        refused["frozen weights left out"] |= counted(weights(by_grad), gm, inputs)[0] != wanted
        refused["x counted"] |= counted(weights(by_type_or_grad), gm, inputs)[0] != wanted
        by_names = counted(weights(weights_and_biases), gm, inputs)[0]
        refused["only weight and bias names"] |= by_names != wanted
        with_dims = counted(weights(with_dimensions), gm, inputs)[0]
        refused["0-dim parameters left out"] |= with_dims != wanted
        refused["bytes over 4"] |= counted(weights(bytes_over_four), gm, inputs)[0] != wanted
        two_sizes = counted(weights(first_two_sizes), gm, inputs)[0]
        refused["rows times columns"] |= two_sizes != wanted
        for name, count_of in (
            ("stats and x left out by name", stats_and_x_left_out_by_name),
            ("stats left out by name", stats_left_out_by_name),
            ("x left out by name", x_left_out_by_name),
        ):
            refused[name] |= counted(weights(count_of), gm, inputs)[0] != wanted
    assert all(refused.values()), refused


def test_checkpoint_6_1_draws_models_in_float32_and_in_float64():
    """Elements, not bytes: every run's five cases hold models of both dtypes (redJ)."""
    for run_seed in RUN_SEEDS:
        drawn = [drawn_models(make) for make in makers(run_seed)]
        dtypes = {(next(model.parameters()).dtype, x.dtype) for model, x in drawn}
        assert dtypes == {(torch.float32,) * 2, (torch.float64,) * 2}


def breaks_unless_the_chapters_shape(x):
    if x.shape == (3,):
        return torch.where(x.sum() > 0, torch.sin(x) * 2, torch.cos(x) - 1)
    if x.sum() > 0:
        return torch.sin(x) * 2
    return torch.cos(x) - 1


@pytest.mark.parametrize("run_seed", RUN_SEEDS)
def test_checkpoint_6_2_counts_graphs_on_every_drawn_input(run_seed):
    counted = [
        cases.graph_breaks(breaks_unless_the_chapters_shape, *cases.signed_inputs(make))
        for make in makers(run_seed, 6)  # as the checkpoint draws them: it refuses on any
    ]
    assert cases.graph_breaks(breaks_unless_the_chapters_shape, torch.ones(3)) == (1, [])
    assert any(graphs > 1 and reasons for graphs, reasons in counted), counted


def test_checkpoint_6_2_runs_every_kind_of_sum_in_both_dtypes():
    """Every run of ten cases holds entries near the dtype's largest whose sum changes sign once
    they are clipped (redO), sums just above and just below 0 in both dtypes (float64's
    just-above sum is exactly 0 once x is read in float32), two sums that rounding decides
    (redH2), a sum of either sign against most entries and the first one, and a NaN among
    positive entries: an answer wrong in one of them is refused in every run, not one run in
    many."""
    for run_seed in random.Random().sample(range(10**6), 200):
        drawn = [cases.signed_inputs(make)[0] for make in makers(run_seed, 10)]
        (clipped,) = [x for x in drawn if x.abs().max() > 1e30]
        assert numpy_sign(clipped.sum()) != numpy_sign(clipped.clamp(-1e30, 1e30).sum()), run_seed
        drawn = [x for x in drawn if x is not clipped]
        (nan,) = [x for x in drawn if x.isnan().any()]
        assert nan.isnan().sum() == 1 and nan.nansum() > 0, run_seed
        check_the_sums_rounding_decides(drawn, run_seed)
        drawn = [x for x in drawn if not x.abs().max() >= 2**28]
        sums = [(x.dtype, x.sum().item()) for x in drawn]
        for dtype in (torch.float32, torch.float64):
            near = [s for d, s in sums if d == dtype and abs(s) < 1e-3]
            assert sorted(map(numpy_sign, near)) == [-1, 1], (run_seed, sums)
        (lost,) = [x for x in drawn if x.dtype == torch.float64 and 0 < x.sum() < 1e-3]
        assert lost.float().sum() == 0, run_seed
        large = [x for x in drawn if x.sum().abs() > 0.1]
        assert sorted(numpy_sign(x.sum()) for x in large) == [-1, 1], (run_seed, sums)
        for x in large:
            most = numpy_sign((x > 0).sum() - (x < 0).sum())
            assert most == numpy_sign(x.view(-1)[0]) == -numpy_sign(x.sum()), run_seed


def numpy_sign(value) -> int:
    return int(value > 0) - int(value < 0)


def where_sum(decides):
    return lambda x: torch.where(decides(x), torch.sin(x) * 2, torch.cos(x) - 1)


SIGN_REFERENCE = where_sum(lambda x: x.sum() > 0)
SIGN_HONEST = {
    "mean": where_sum(lambda x: x.mean() > 0),
    "sign": where_sum(lambda x: torch.sign(x.sum()) == 1),
    "a 0/1 weight": lambda x: (
        (w := (x.sum() > 0).to(x.dtype)) * x.sin() * 2 + (1 - w) * (x.cos() - 1)
    ),
}
SIGN_WRONG = {  # the red team's (s6, late), and a margin below float32's resolution
    "majority of positive entries": where_sum(lambda x: (x > 0).sum() * 2 > x.numel()),
    "a margin: sum > 1e-3": where_sum(lambda x: x.sum() > 1e-3),
    "a margin: sum > 1e-7": where_sum(lambda x: x.sum() > 1e-7),
    "float32 sum": where_sum(lambda x: x.float().sum() > 0),
    "sum >= 0": where_sum(lambda x: x.sum() >= 0),
    "first entry": where_sum(lambda x: x.flatten()[0] > 0),
    # the red team's (redL): right wherever the sum is a number, not where x holds a NaN
    "the branches swapped on sum <= 0": lambda x: torch.where(
        x.sum() <= 0, torch.cos(x) - 1, torch.sin(x) * 2
    ),
    "nansum": where_sum(lambda x: x.nansum() > 0),
    # the red team's (redL), open until redO's tenth kind: entries clipped before the sum
    "clipped at 1e4": where_sum(lambda x: x.clamp(-1e4, 1e4).sum() > 0),
    "clipped at 1e30": where_sum(lambda x: x.clamp(-1e30, 1e30).sum() > 0),
    # the red team's (redH2): the sign of a sum other than torch's own x.sum(), in x's dtype
    "float64 sum": where_sum(lambda x: x.sum(dtype=torch.float64) > 0),
    "a sum of x.double()": where_sum(lambda x: x.double().sum() > 0),
    "rows first": where_sum(lambda x: x.sum(-1).sum() > 0),
    "columns first": where_sum(lambda x: x.sum(0).sum() > 0),
    "sorted values": where_sum(lambda x: x.flatten().sort().values.sum() > 0),
    "reversed": where_sum(lambda x: x.flatten().flip(0).sum() > 0),
    "a running sum": where_sum(lambda x: x.flatten().cumsum(0)[-1] > 0),
    # the red team's (redL4): x's own order, not the memory order torch sums a transposed x in
    "a sum of x.reshape(-1)": where_sum(lambda x: x.reshape(-1).sum() > 0),
    "a sum of x.contiguous()": where_sum(lambda x: x.contiguous().sum() > 0),
}


def check_the_sums_rounding_decides(drawn, run_seed):
    """One float32 x whose sum torch rounds to 0, positive in float64 and in every other order;
    one float64 x whose sum torch keeps positive, 0 over its sorted values."""
    (to_zero,) = [x for x in drawn if x.dtype == torch.float32 and 2**28 <= x.abs().max() < 1e30]
    assert to_zero.sum() == 0 < to_zero.double().sum(), run_seed
    assert all(total(to_zero) > 0 for total in cases.OTHER_ORDERS.values()), run_seed
    (kept,) = [x for x in drawn if x.dtype == torch.float64 and 2**28 <= x.abs().max() < 1e30]
    assert kept.sum() > 0 == kept.flatten().sort().values.sum(), run_seed


def test_checkpoint_6_2_refuses_each_wrong_sign_in_every_run():
    """The values, compared as the checkpoint compares them, on 300 runs of nine cases."""
    for run_seed in random.Random().sample(range(10**6), 300):
        drawn = [cases.signed_inputs(make)[0] for make in makers(run_seed, 10)]
        wanted = [SIGN_REFERENCE(x) for x in drawn]
        for name, answer in SIGN_HONEST.items():
            assert all(map(as_checked, map(answer, drawn), wanted)), (name, run_seed)
        for name, answer in SIGN_WRONG.items():
            assert not all(map(as_checked, map(answer, drawn), wanted)), (name, run_seed)


def test_6_2_every_run_holds_an_input_stored_transposed():
    """sign_dependent takes any layout: a rewrite that views x flat (x.view(-1).sum(), the red
    team's redP) raises on the NaN kind's x, 2-D and stored transposed in every run; so is the
    float32 x whose torch sum is 0, where x's own order keeps it (redL4)."""
    for run_seed in random.Random().sample(range(10**6), 100):
        drawn = [cases.signed_inputs(make)[0] for make in makers(run_seed, 10)]
        apart = [x for x in drawn if not x.is_contiguous()]
        assert len(apart) == 2 and sum(bool(x.isnan().any()) for x in apart) == 1, run_seed
        for x in apart:
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                x.view(-1)
        lost = [x for x in apart if not x.isnan().any()]
        assert lost[0].sum() == 0 and lost[0].reshape(-1).sum() > 0, run_seed


def test_6_2_finds_the_custom_operator_that_hides_the_decision():
    """The red team's (redP): sign_dependent wrapped in a custom operator is one graph with no
    break, its decision out of any graph's sight; torch.where and torch.cond are torch's own."""

    def sign_dependent(x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return torch.sin(x) * 2
        return torch.cos(x) - 1

    name = f"fxcourse_test_{random.randrange(10**9)}::sign_dependent"
    hidden = torch.library.custom_op(name, sign_dependent, mutates_args=())
    hidden.register_fake(lambda x: torch.empty_like(x))

    def cond(x):
        return torch.cond(x.sum() > 0, lambda t: t.sin() * 2, lambda t: t.cos() - 1, (x,))

    x = torch.ones(3)
    assert cases.opaque_operators(lambda x: hidden(x), x) == [f"{name.replace('::', '.')}.default"]
    for honest in (SIGN_REFERENCE, cond, SIGN_HONEST["a 0/1 weight"]):
        assert cases.opaque_operators(honest, x) == []


def as_checked(mine, wanted) -> bool:
    return close_enough(mine, wanted, atol=1e-5, rtol=1e-4)  # check.close's tolerances


@pytest.mark.parametrize("steepness", [100.0, 1e4, 1e6])
def test_checkpoint_6_2_refuses_a_smooth_blend_of_the_branches(steepness):
    """sigmoid(k * sum) blends the two branches without a break: every run holds a sum so near
    zero that the blend is far from the branch the sign picks (it passed 1 run in 3 when the
    near-zero sums were 0.04 or more)."""

    def chosen(x):
        return torch.where(x.sum() > 0, torch.sin(x) * 2, torch.cos(x) - 1)

    def blended(x):
        weight = torch.sigmoid(steepness * x.sum())
        return weight * (torch.sin(x) * 2) + (1 - weight) * (torch.cos(x) - 1)

    for run_seed in random.Random().sample(range(10**6), 100):
        drawn = [cases.signed_inputs(make)[0] for make in makers(run_seed, 10)]
        assert any(not torch.allclose(blended(x), chosen(x)) for x in drawn), run_seed


def test_checkpoint_6_2_refuses_an_answer_that_writes_into_x(monkeypatch):
    """The red team's (redJ) answer: the right values and one graph, from `x.sin_()`, which
    changes the caller's tensor (sign_dependent never does)."""
    from fxcourse import tryit

    def writes_into_x(x):
        other = torch.cos(x) - 1
        return torch.where(x.sum() > 0, x.sin_() * 2, other)

    check = check_cells.check_source("06_torch_compile", "6.2")
    namespace = {"__name__": "chapter", "torch": torch, "checkpoint": tryit.checkpoint}
    namespace["sign_dependent_no_break"] = writes_into_x
    result = check_cells.judged(check, namespace, monkeypatch)
    assert result.problem and "wrote into its input x" in result.problem, result.problem


def suppressing_climb():
    """The red team's (redR) climb: it turns Dynamo's suppress_errors on, so that a crash "does
    not stop the loop"; a crashing stage then runs eagerly and is never blamed. The setting stayed
    on after the learner's call, and the reference answer, run after it in the same process,
    missed the same crashes: the checkpoint passed it in every run. The climb runs with the
    setting off now (fxcourse.shipped), the reference too."""
    plain = climb(torch.allclose, catch=False).first_failing_backend

    def first_failing_backend(fn, sample):
        torch._dynamo.config.suppress_errors = True
        return plain(fn, sample)

    return SimpleNamespace(first_failing_backend=first_failing_backend)


@pytest.mark.parametrize("run_seed", RUN_SEEDS)
def test_checkpoint_6_3_refuses_a_climb_that_turns_suppress_errors_on(run_seed):
    try:
        differs = False
        for make in makers(run_seed, 7):
            (case,) = cases.planted_cases(make)
            mine = verdict(suppressing_climb(), case)  # the learner's side first: its setting stays
            differs = differs or mine != verdict(REFERENCE, case)
        assert differs, run_seed
    finally:
        torch._dynamo.config.suppress_errors = False


@pytest.mark.parametrize("run_seed", RUN_SEEDS)
def test_checkpoint_6_3_judges_under_a_stance_an_earlier_cell_left(run_seed):
    """The red team's (redR): `torch.compiler.set_stance("force_eager")` run as a statement (the
    chapter shows it as a `with` block) stopped every compile, the reference's too: a climb that
    keeps Dynamo's cache passed. The checkpoint's compiles run under the default stance."""
    drawn = [cases.planted_cases(make)[0] for make in makers(run_seed, 7)]
    wanted = [verdict(REFERENCE, case) for case in drawn]
    torch.compiler.set_stance("force_eager")
    try:
        assert [verdict(REFERENCE, case) for case in drawn] == wanted, run_seed
        kept = [verdict(WRONG["no reset"], case) for case in drawn]
        assert kept != wanted, run_seed
        assert cases.graph_breaks(breaks_unless_the_chapters_shape, torch.ones(3)) == (1, [])
        model, x = drawn_models(makers(run_seed, 1)[0])
        gm, inputs = handed_over(model, x)
        assert any(isinstance(t, nn.Parameter) for t in inputs)
    finally:
        torch.compiler.set_stance("default")


def test_6_1_names_the_stance_that_compiled_nothing():
    """6.1 under a force_eager stance left by an earlier cell: the learner's own cell compiled
    nothing, and the message said only "it holds 0" (red team redR)."""
    from fxcourse.backend_cases import one_compile_told

    assert "stance" not in one_compile_told(0)
    torch.compiler.set_stance("force_eager")
    try:
        told = one_compile_told(0)
        assert '"force_eager"' in told and 'set_stance("default")' in told, told
        assert "stance" not in one_compile_told(2)  # two compiles: another fault
    finally:
        torch.compiler.set_stance("default")


def test_6_1_tells_a_tally_that_never_ran_through_the_backend():
    """The red team's (redV): weight_counts and tally_output filled by hand, tally_block never
    compiled with weights_backend; a lambda around tally_block is compiled honestly."""
    from fxcourse.backend_cases import compiled_with

    def weights_backend(gm, inputs):
        return gm.forward

    block, x = nn.Sequential(nn.Linear(3, 2), nn.ReLU()), torch.randn(4, 3)
    torch.compiler.reset()
    block(x)  # by hand: no compile at all
    assert not compiled_with(weights_backend, [8])
    torch.compile(block, backend="eager")(x)  # compiled, but with another backend
    assert not compiled_with(weights_backend, [8])
    for compiled in (
        torch.compile(block, backend=weights_backend),
        torch.compile(lambda t: block(t), backend=weights_backend),
    ):
        torch.compiler.reset()
        counts = [8]
        compiled(x)
        assert compiled_with(weights_backend, counts)
        torch.compiler.reset()  # as the check's own cases do: its rerun trusts what it saw
        assert compiled_with(weights_backend, counts) and not compiled_with(weights_backend, [8])


@pytest.mark.parametrize("run_seed", RUN_SEEDS)
def test_checkpoint_6_3_runs_the_reference_on_the_chapters_ladder(run_seed):
    """The red team's (redR): `ladder` rebound in the try-it cell without its last stage; the
    reference answer, run in a copy of the learner's names, climbed the same short ladder, and a
    climb that never tries aot_eager_decomp_partition passed."""
    from fxcourse.reference import reference_namespace

    names = {"__name__": "chapter", "torch": torch, "ladder": LADDER[:2]}
    reference = reference_namespace("6.3", names, cases.chapter_ladder)
    assert reference.ladder == LADDER == cases.LADDER
    short = climb(torch.allclose, ladder=LADDER[:2])
    drawn = [cases.planted_cases(make)[0] for make in makers(run_seed, 7)]
    assert any(verdict(short, case) != verdict(reference, case) for case in drawn), run_seed


@pytest.mark.parametrize("run_seed", RUN_SEEDS)
def test_checkpoint_6_2_names_a_dtype_or_a_shape_that_differs(monkeypatch, run_seed):
    """The red team's (redV) answers: the right values in float32 for a float64 x, or flattened;
    check.close asked both "which sign decides?", a question about values. Every run holds a
    float64 x and a 2-D one; the reference passes."""
    from fxcourse import tryit

    def chosen(x):
        return torch.where(x.sum() > 0, torch.sin(x) * 2, torch.cos(x) - 1)

    check = check_cells.check_source("06_torch_compile", "6.2")
    answers = [
        (lambda x: chosen(x).float(), "dtype"),
        (lambda x: chosen(x).reshape(-1), "shape"),
        (chosen, None),
    ]
    for answer, named in answers:
        namespace = {"__name__": "chapter", "torch": torch, "checkpoint": tryit.checkpoint}
        namespace["sign_dependent_no_break"] = answer
        tryit.replay("6.2", run_seed)
        problem = check_cells.judged(check, namespace, monkeypatch).problem
        assert (problem is None) if named is None else (named in (problem or "")), problem


def test_6_2_refuses_a_decision_dynamo_took_as_a_constant():
    """The red team (redF2): the sign decided in a helper marked assume_constant_result, then
    the original `if`: one graph, no break, and the right values for the x it was compiled for.
    Its graph, called again on -x, returns x's branch; the reference's graph does not."""

    @torch._dynamo.assume_constant_result
    def positive(x):
        return bool(x.sum() > 0)

    def taken_as_a_constant(x):
        return torch.sin(x) * 2 if positive(x) else torch.cos(x) - 1

    x = torch.tensor([0.5, -0.2, 1.0])
    honest = types.SimpleNamespace(sign_dependent_no_break=SIGN_REFERENCE)
    constant = types.SimpleNamespace(sign_dependent_no_break=taken_as_a_constant)
    wanted = SIGN_REFERENCE(-x)
    assert torch.equal(cases.reused_on_the_negation(honest, x), wanted)
    assert not torch.allclose(cases.reused_on_the_negation(constant, x), wanted)


def test_checkpoint_6_3_asks_a_climb_that_names_no_stage_where_it_looked(monkeypatch):
    """The red team (redP6): a climb comparing sums named None for a fault that moves values
    and heard no hint. A climb that names no stage now hears where a wrong value hides."""
    from fxcourse import tryit

    check = check_cells.check_source("06_torch_compile", "6.3")
    problems = []
    for run_seed in RUN_SEEDS + [1, 2, 3]:
        namespace = {"__name__": "chapter", "torch": torch, "checkpoint": tryit.checkpoint}
        namespace["first_failing_backend"] = WRONG["sums only"].first_failing_backend
        tryit.replay("6.3", run_seed)
        problems.append(check_cells.judged(check, namespace, monkeypatch).problem)
    named_none = [p for p in problems if p.startswith("you named None")]
    assert named_none, problems
    hints = ("only at a summary such as a sum?", "0.5 % off", "returns NaN in one place")
    assert all(any(hint in p for hint in hints) for p in named_none), named_none
    assert any(hints[0] in p for p in named_none), named_none
