"""What chapter 6's checkpoints 6.2 and 6.3 draw and run (6.1's: fxcourse.backend_cases;
fxcourse.cases makes the seeds, the checkpoint cells compare the learner's answer with the
reference answer, fxcourse.reference).

    for case in check.cases(signed_inputs, count=10):    # try it 6.2: (x,)
    for case in check.cases(planted_cases, count=7):     # try it 6.3: (PlantedCase,)
        mine, wanted = case.both(blamed)
        missed_fault(*case.objects())                    # a hint for a subtle fault's case
    graph_breaks(function, x)                            # try it 6.2: Dynamo's graphs of it
    opaque_operators(function, x)                        # try it 6.2: custom operators they call
    unfilled(function)                                   # the try-it's function is still `...`

Nothing here holds an answer; the cases are drawn so that each run holds every feature an answer
must handle (make.each).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from unittest import mock

import torch
from torch._inductor import decomposition as inductor_decompositions

from fxcourse.capture import torch_logs, unprofiled_guards
from fxcourse.messages import _
from fxcourse.scaffold import unfilled  # noqa: F401 - the check cells of chapters 6 and 10 import it here
from fxcourse.shipped import as_shipped

aten = torch.ops.aten


# ----------------------------------------------------------------------------- try it 6.2


SIGNED_KINDS = (  # every run of ten: each kind once (the near-0 sums in both dtypes)
    ("sum just above 0", torch.float32), ("sum just above 0", torch.float64),
    ("sum just below 0", torch.float32), ("sum just below 0", torch.float64),
    ("a sum float32 rounds to 0", torch.float32), ("a sum sorted values lose", torch.float64),
    ("most entries against a sum > 0", None), ("most entries against a sum < 0", None),
    ("a NaN among positive entries", None), ("a sum that clipping flips", None),
)  # fmt: skip


def _summing_to(make, shape, total: float, dtype) -> torch.Tensor:
    """Entries in eighths (float32 holds each exactly, so does a sum of them), but the first,
    which brings the sum to `total`: a float64 total below float32's resolution there is lost
    when x is read in float32 (its sum there is exactly 0)."""
    x = torch.round(make.tensor(*shape, dtype=torch.float64, scale=2.0) * 8) / 8
    x.view(-1)[0] = 0.0
    if x.sum() == 0:  # float32 would hold the total as it is: no sum of the others to lose it in
        x.view(-1)[1] += 0.5
    x.view(-1)[0] = total - x.sum()
    return x.to(dtype)


OTHER_ORDERS = {  # sums of a 2-D x in orders other than torch's own x.sum()
    "rows first": lambda x: x.sum(-1).sum(),
    "columns first": lambda x: x.sum(0).sum(),
    "reversed": lambda x: x.flatten().flip(0).sum(),
    "running": lambda x: x.flatten().cumsum(0)[-1],
    "flat": lambda x: x.reshape(-1).sum(),  # x's own order where x is stored transposed (redL4)
}


def _cancelling(make, shape, dtype, huge_exponents, accept) -> torch.Tensor:
    """The first x in `dtype` that `accept(x)`, each drawn of `shape(make)`: H, -H and small
    entries in eighths whose exact total is in (0, 4), in a drawn order. Whether torch's sum
    loses them beside H depends on its order, so on the shape: each try draws one."""
    for _attempt in range(100_000):
        size = shape(make)
        count = size[0] if len(size) == 1 else size[0] * size[1]
        small = torch.round(make.tensor(count - 2, dtype=torch.float64, scale=0.3) * 8) / 8
        huge = 2.0 ** make.integer(*huge_exponents)
        exact = torch.cat([torch.tensor([huge, -huge], dtype=torch.float64), small])
        x = exact[torch.randperm(count, generator=make.generator)].to(dtype).reshape(size)
        if 0 < small.sum() < 4 and accept(x):
            return x
    raise RuntimeError(f"this torch's {dtype} sum never loses a small entry beside a large one")


def _drawn_shape(make) -> tuple[int, ...]:
    return make.choice([(make.integer(3, 9),), (make.integer(2, 4), make.integer(2, 5))])


def _wider_than_two(make) -> tuple[int, int]:  # in a 2 by 2 some order always keeps it
    return make.integer(2, 4), make.integer(3, 5)


def _only_torchs_order_loses_it(stored: torch.Tensor) -> bool:
    """For x = stored.t(): torch's own x.sum() is 0; OTHER_ORDERS keep the small entries'."""
    x = stored.t()
    return x.sum() == 0 and all(total(x) > 0 for total in OTHER_ORDERS.values())


def _sorted_values_lose_it(x: torch.Tensor) -> bool:
    """torch's x.sum() keeps the small entries' total; the sum of the sorted values is 0."""
    return x.sum() > 0 and x.flatten().sort().values.sum() == 0


def signed_inputs(make) -> tuple[torch.Tensor]:
    """Sizes, 1-D or 2-D, in float32 and float64; every run has each of SIGNED_KINDS: sums
    just above and just below 0 in both dtypes (a float64 one float32 cannot tell from 0), two
    sums rounding decides (float32, stored transposed: torch's x.sum() 0, float64, OTHER_ORDERS
    and x's own order positive; float64: positive, sorted values 0), sums whose sign is not that
    of most entries nor of the first, and a NaN among positive entries, stored transposed (its
    sum is NaN: `x.sum() > 0` and `x.sum() <= 0` are False, `x.nansum() > 0` True)."""
    kind, dtype = make.each(SIGNED_KINDS)
    dtype = dtype or make.dtype()
    shape = _drawn_shape(make)
    if kind.startswith("most entries"):  # many small entries of one sign, a few large ones
        sign = 1.0 if kind.endswith("> 0") else -1.0
        count = shape[0] if len(shape) == 1 else shape[0] * shape[1]
        few = make.integer(1, (count - 1) // 2)
        small = make.tensor(count - few, dtype=dtype).abs() * 0.1 + 0.01
        large = make.tensor(few, dtype=dtype).abs() + small.sum() / few + 0.5
        x = torch.cat([-sign * small, sign * large])  # the first entry against the sum
        x[1:] = x[1:][torch.randperm(count - 1, generator=make.generator)]
        x = x.reshape(shape)
    elif kind.startswith("a sum that clipping"):  # H and two of -0.4 H: clipped below 0.8 H,
        x = _summing_to(make, shape, 0.0, dtype)  # the sum changes sign, whatever the bound
        huge, sign = torch.finfo(dtype).max / 4 * make.rng.uniform(0.5, 1), make.choice([1, -1])
        x.view(-1)[:3] = torch.tensor([1.0, -0.4, -0.4], dtype=torch.float64) * huge * sign
        x = x.view(-1)[torch.randperm(x.numel(), generator=make.generator)].reshape(shape)
    elif kind.startswith("a NaN"):  # stored transposed: a function that views x flat fails
        rows, cols = make.integer(2, 4), make.integer(2, 5)
        x = (make.tensor(cols, rows, dtype=dtype).abs() + 0.1).t()
        x[make.integer(0, rows - 1), make.integer(0, cols - 1)] = float("nan")
    elif kind.startswith("a sum float32 rounds"):
        stored = _cancelling(
            make, _wider_than_two, torch.float32, (28, 40), _only_torchs_order_loses_it
        )
        x = stored.t()  # torch sums in memory order, x.reshape(-1) in x's
    elif kind.startswith("a sum sorted"):
        x = _cancelling(make, _drawn_shape, torch.float64, (57, 70), _sorted_values_lose_it)
    else:
        tiny = make.rng.uniform(1, 9) * (1e-4 if dtype == torch.float32 else 1e-10)
        total = {"sum just above 0": tiny, "sum just below 0": -tiny}.get(kind, 0.0)
        x = _summing_to(make, shape, total, dtype)
    said = _("x of shape {shape}, {dtype}, sum {total}")
    make.note(said.format(shape=tuple(x.shape), dtype=x.dtype, total=f"{x.sum().item():+.2g}"))
    if not x.is_contiguous():
        make.note(_("stored transposed (not contiguous)"))
    return (x,)


def unchanged(after: torch.Tensor, before: torch.Tensor) -> bool:
    """Whether x holds after the call what it held before, NaN where it held NaN."""
    same_nan = torch.equal(after.isnan(), before.isnan())
    return same_nan and torch.equal(after.nan_to_num(0.0), before.nan_to_num(0.0))


def called_with_input(answer, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The answer's result and x after the call (an in-place `x.sin_()` would change x)."""
    return answer.sign_dependent_no_break(x), x


def reused_on_the_negation(answer, x: torch.Tensor) -> torch.Tensor:
    """What the answer's sign_dependent_no_break, compiled for x, computes on -x: a decision
    Dynamo took as a constant (assume_constant_result) gives x's branch again (redF2)."""
    torch.compiler.reset()
    compiled = torch.compile(answer.sign_dependent_no_break, backend="eager", dynamic=False)
    with torch_logs(), as_shipped():
        compiled(x.clone())
        return compiled(-x)


def graph_breaks(function, x: torch.Tensor) -> tuple[int, list[str]]:
    """How many graphs Dynamo captures from function(x) with an empty cache, and why it broke."""
    torch.compiler.reset()
    with torch_logs(), as_shipped():  # Dynamo's warnings out of the way; the reasons returned
        found = torch._dynamo.explain(function)(x)  # private
    return found.graph_count, [reason.reason.splitlines()[0] for reason in found.break_reasons]


def opaque_operators(function, x: torch.Tensor) -> list[str]:
    """The operators outside torch's own libraries (aten, prims) that Dynamo's graphs of
    function(x) call: a custom operator runs Python that no graph records, a decision with it."""
    torch.compiler.reset()
    with torch_logs(), as_shipped():
        found = torch._dynamo.explain(function)(x)  # private
    operators = (torch._ops.OpOverload, torch._ops.OpOverloadPacket)  # private
    return [
        str(node.target)
        for graph in found.graphs
        for node in graph.graph.nodes
        if isinstance(node.target, operators) and str(node.target).split(".")[0] not in TORCHS
    ]


TORCHS = ("aten", "prims")  # the namespaces of torch's own operators


# ----------------------------------------------------------------------------- try it 6.3

PLANTABLE = {  # operators Inductor decomposes, and the function that calls each (no Python
    aten.silu.default: torch._C._nn.silu,  # wrapper: Dynamo traces it faster)
    aten.hardswish.default: torch._C._nn.hardswish,
    aten.mish.default: torch._C._nn.mish,
    aten.elu.default: torch._C._nn.elu,
    aten.softplus.default: torch._C._nn.softplus,
}
KINDS = ("wrong", "healthy", "dynamo", "dynamo crash", "aot crash", "dynamo off", "dynamo nan")
ALREADY_COMPILED = "aot_eager_decomp_partition"
LADDER = ("eager", "aot_eager", "aot_eager_decomp_partition")  # the chapter's `ladder`


def chapter_ladder(code: str) -> str:
    """The reference answer as 6.3's checkpoint runs it: on the chapter's ladder, whatever the
    learner's cell bound to `ladder` (the red team's redR: a ladder rebound without a stage was
    climbed by the reference too, and a climb that never tries that stage passed)."""
    return f"ladder = {LADDER!r}\n{code}"


@contextlib.contextmanager
def planted_bug(op=aten.silu.default, crash=False, moved=0):
    """While the block runs, Inductor decomposes `op` wrongly: on the negated input, or (moved=k)
    with its output rolled k places along the last dimension (the same values, so the same sum,
    in other places); or (crash=True) it fails on `op`."""
    table = inductor_decompositions.select_decomp_table()  # the table Inductor uses (private)
    saved = table[op]

    def broken(t, *args, **kwargs):
        if crash:
            raise NotImplementedError(op)
        if moved:
            return saved(t, *args, **kwargs).roll(moved, -1)  # wrong on purpose
        return saved(-t, *args, **kwargs)  # wrong on purpose

    table[op] = broken
    try:
        yield
    finally:
        table[op] = saved


@dataclass
class PlantedCase:
    fn: object
    sample: torch.Tensor
    planted: object  # the operator whose decomposition is broken
    crash: bool
    compiled_before: str | None  # the backend fn ran with, healthy, before the fault was planted
    aot_crash: bool = False  # aot_eager's compiler fails (and so the stages after it)
    moved: int = 0  # the planted decomposition rolls its output by this much (0: negates input)
    kind: str = ""  # one of KINDS


def drawn_function(activation, a: float, b: float, c: float, in_dynamo: str | None, moved=1):
    """`activation(a * t + b) * c + t`; while `fn.planted` (a switch Dynamo reads as a constant,
    unguarded: a graph traced before it is stale after it) Dynamo's graph rolls the result by
    `moved` ("dynamo": the same sum, mean, norm, sorted values), is off by OFF in a few places
    ("dynamo off"), NaN in one ("dynamo nan"), or fails to trace ("dynamo crash": a view no size
    allows); "break": a graph break after the activation, two graphs, nothing wrong (a climb
    compiling with fullgraph=True blames eager for it). "dynamo" breaks first, so a climb that
    keeps the cache meets fn's stale graphs even through a wrapper of its own (redR7)."""
    if in_dynamo is None:
        return lambda t: activation(a * t + b) * c + t
    if in_dynamo == "break":

        def broken_in_two(t):
            inner = activation(a * t + b)
            torch._dynamo.graph_break()  # private; as a print() or a data-dependent `if` would
            return inner * c + t

        return broken_in_two

    planted = [True]

    @torch.compiler.assume_constant_result  # Dynamo calls it, keeps the result, guards nothing
    def fault_planted():
        return planted[0]

    def fn(t):
        if in_dynamo == "dynamo":
            torch._dynamo.graph_break()
        if torch.compiler.is_compiling() and fault_planted():
            if in_dynamo == "dynamo crash":
                t = t.view(-1, t.numel() + 1)
            return _wrong_in_dynamo(activation(a * t + b) * c + t, in_dynamo, moved)
        return activation(a * t + b) * c + t

    fn.planted = planted
    return fn


PLACES = [n for n in range(101, 500) if all(n % d for d in range(2, 23))]  # primes (redL4)
OFF = 0.005  # "dynamo off": a value off by OFF * min(1, |value|), far beyond rounding


def _few_places(result: torch.Tensor, place: int) -> torch.Tensor:
    """Where "dynamo off" goes wrong: at `place`, a prime past 100 (a comparison of the first
    values, or of every k-th, misses it; one that forgives a share of the values, or reads
    their mean or median, too), and where the size is nearest 1 (where a tolerance well below
    OFF sees the most)."""
    places = torch.arange(result.shape[-1])
    nearest_one = (result.abs() - 1).abs().argmin(dim=-1, keepdim=True)
    return (places == place) | (places == nearest_one)


def _wrong_in_dynamo(result: torch.Tensor, in_dynamo: str, moved: int) -> torch.Tensor:
    if in_dynamo == "dynamo off":  # a tolerance of OFF or more misses it, whatever the values
        return torch.where(
            _few_places(result, moved), result + OFF * result.abs().clamp(max=1.0), result
        )
    if in_dynamo == "dynamo nan":  # NaN in one place, as a log of a negative value would give
        one_place = torch.arange(result.shape[-1]) == moved  # forgive one value, and miss it
        return torch.where(one_place, float("nan"), result)
    return result.roll(moved, -1)


def missed_fault(case: PlantedCase) -> str:
    hints = {  # for the learner's wrong verdict on a case whose fault is subtle
        "dynamo off": _(
            " Here a stage is 0.5 % off in a few places: far more than rounding. How close is"
            " close, and does your comparison look at every value?"
        ),
        "dynamo nan": _(
            " Here a stage returns NaN in one place: does your comparison see it, and every value?"
        ),
    }
    return hints.get(case.kind, "")


def planted_cases(make) -> tuple[PlantedCase]:
    """A new function and a fault planted for it; each run of seven has every kind (KINDS):
    the values moved (a roll: the same sum), differing (the operator's input negated), off by
    OFF * min(1, |value|) at a drawn prime place and where the value is nearest 1, or NaN at
    that place (see _few_places); a graph compiled before the fault, stale for the last stage
    ("wrong") or the first ("dynamo"), in a function with a graph break. About 25 compiles a
    run. The note describes the function, not the stage at fault (that is the answer)."""
    kind = make.each(KINDS)
    ops = make.rng.sample(list(PLANTABLE), 2)
    if kind == "healthy":  # silu rounds differently once decomposed; the fault is elsewhere
        ops = [aten.silu.default, make.choice([op for op in PLANTABLE if op != aten.silu.default])]
    a, b, c = (round(make.rng.uniform(0.5, 2.0), 2) for _ in range(3))
    moved = make.choice(PLACES)
    activation = PLANTABLE[ops[0]]
    in_dynamo = "break" if kind in ("healthy", "wrong") else kind if "dynamo" in kind else None
    fn = drawn_function(activation, a, b, c, in_dynamo, moved)
    planted = ops[1] if kind == "healthy" else ops[0]
    earlier = {"wrong": ALREADY_COMPILED, "dynamo": LADDER[0]}.get(kind)  # stale after the fault
    before = _("; fn ran compiled before the fault was planted") if earlier else ""
    if kind == "healthy":
        before = _("; a graph break after {name}").format(name=activation.__name__)
    make.note(f"fn(t) = {activation.__name__}({a} * t + {b}) * {c} + t{before}")
    sample = _sample_for(make, fn)
    crash = kind != "wrong" and kind != "healthy"
    in_inductor = moved if kind == "wrong" and make.coin() else 0
    faults = (planted, crash, earlier, kind == "aot crash", in_inductor, kind)
    return (PlantedCase(fn, sample, *faults),)


def _sample_for(make, fn) -> torch.Tensor:
    """Inputs where fn is not near 0, some where |fn| is below 1 and some above (so a tolerance
    judges the "dynamo off" fault the same way in every run). Where fn(t) is near 0, a
    decomposition's rounding alone fails allclose's relative tolerance (about 5 healthy cases in
    100): such elements would make a healthy stage wrong."""
    while True:
        sample = make.tensor(make.integer(1024, 2048))
        sizes = fn(sample).abs()
        sample, sizes = sample[sizes > 0.1], sizes[sizes > 0.1]
        if (sizes < 0.5).any() and (sizes > 2).any() and len(sample) > PLACES[-1] + 200:
            return sample


def blamed(answer, case: PlantedCase):
    """What the answer's first_failing_backend says for the case, its fault planted, under
    torch.compile as shipped (fxcourse.shipped: an earlier cell's stance or suppress_errors)."""
    with unprofiled_guards(), as_shipped():
        if case.compiled_before:  # as a model that worked before a change (and only then)
            torch.compiler.reset()
            with before_the_fault(case.fn):
                torch.compile(case.fn, backend=case.compiled_before)(case.sample)
        aot = aot_compiler_fails() if case.aot_crash else contextlib.nullcontext()
        with planted_bug(case.planted, crash=case.crash, moved=case.moved), aot:
            return answer.first_failing_backend(case.fn, case.sample)


@contextlib.contextmanager
def before_the_fault(fn):
    switch = getattr(fn, "planted", [True])  # a fault in fn's Dynamo graph: not there yet
    switch[0] = False
    try:
        yield
    finally:
        switch[0] = True


def aot_compiler_fails():
    """While the block runs, aot_eager's compiler raises, so does aot_eager_decomp_partition's
    (`get_nop_func` in torch/_dynamo/backends/debugging.py returns the same `boxed_nop`)."""
    import torch._dynamo.backends.debugging as debugging  # private

    def fails(gm, example_inputs):
        raise RuntimeError("a fault planted in aot_eager's compiler")

    return mock.patch.object(debugging, "boxed_nop", fails)
