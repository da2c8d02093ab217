"""Chapters 10 and 12: their checkpoints, run outside the notebook on chosen seeds, accept honest
alternatives to the reference answers; the reference rule of 10.1 agrees with what torch.compile
really compiles on fresh batch sequences; the helpers chapter 10 uses (`structured_trace`,
`tlparse`, the planted backends) do what the chapter says. (test_tryits runs every mistake and the
answer; `make test-checkpoints` the answer on 20 seeds.) `FXCOURSE_CHECK_SEEDS=20` runs the
tests here on 20 seeds each (default 1).
"""

from __future__ import annotations

import ast
import os
import random
import re

import check_cells
import pytest
import torch

from courseware import authoring
from fxcourse import compile_depth, serve_cases, tryit
from fxcourse.capture import structured_trace, tlparse, what_each_call_compiled
from fxcourse.cases import CaseMaker, makers_of

CHAPTERS = {"10": "10_compile_and_export_in_depth", "12": "12_export_in_depth"}
SEEDS = list(range(1, 1 + int(os.environ.get("FXCOURSE_CHECK_SEEDS", "1"))))
NEEDS = {"10.1": ["doubled_relu"], "10.2": ["Scorer"], "10.3": [], "12.1": ["Interleave"]}
NEEDS["12.2"] = []


def chapter_namespace(tryit_id: str) -> tuple[dict, str]:
    """A namespace with the chapter's first code cell run and the definitions the check needs,
    and the check cell's source."""
    stem = CHAPTERS[tryit_id.split(".")[0]]
    code = [cell.source for cell in check_cells.solution(stem).cells if cell.cell_type == "code"]
    namespace: dict = {"__name__": "chapter"}
    exec(compile(code[0], "setup", "exec"), namespace)
    for name in NEEDS[tryit_id]:
        exec(compile(definition(code, name), name, "exec"), namespace)
    return namespace, check_cells.check_source(stem, tryit_id)


def definition(sources: list[str], name: str) -> str:
    """The source of the top-level function or class `name` in the chapter's code cells."""
    for source in sources:
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
                return ast.get_source_segment(source, node)
    raise LookupError(name)


def verdict(tryit_id: str, answer: str, seed: int, monkeypatch) -> str | None:
    """The checkpoint's problem with `answer` on the cases of run seed `seed` (None: passed)."""
    namespace, check = chapter_namespace(tryit_id)
    exec(compile(answer, "answer", "exec"), namespace)
    tryit.replay(tryit_id, seed)
    result = check_cells.judged(check, namespace, monkeypatch)
    assert result.cases_run >= tryit.MIN_CASES or not result.passed
    return result.problem


HONEST_ALTERNATIVES = {
    "10.1": """
def what_compiles(batches):  # the same rule, kept as the set of sizes each graph accepts
    accepted, words = [], []
    for i, batch in enumerate(batches):
        if any(batch in sizes for sizes in accepted):
            words.append("reuse")
        elif i == 0 or batch < 2:
            accepted.append({batch})
            words.append("static")
        else:
            accepted.append(set(range(2, 10**6)))
            words.append("symbolic")
    return words
""",
    "10.2": """
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
""",
    "10.3": """
def results_differ(gm, inputs, backend):  # NaN where both have NaN: the same (the prompt)
    want = torch.utils._pytree.tree_leaves(gm(*inputs))
    got = torch.utils._pytree.tree_leaves(backend(gm, inputs)(*inputs))
    same = [g.shape == w.shape and bool(torch.isclose(g, w, equal_nan=True).all())
            for g, w in zip(got, want)]
    return len(got) != len(want) or not all(same)
""",
    "12.2": """
class Gcd(nn.Module):  # the larger first: no division, and one run of the body fewer
    def forward(self, a, b):
        a, b = torch.maximum(a, b), torch.minimum(a, b)
        found, _ = torch.while_loop(lambda a, b: b > 0, lambda a, b: (b.clone(), a.fmod(b)), (a, b))
        return found
""",
    "12.1": """
def interleave_shapes(low, high):
    rows = Dim("rows")  # Dim.AUTO's rows would promise 2 or more (export's 0/1 specialisation)
    return {"x": {0: rows, 1: Dim.DYNAMIC(min=low, max=high)}, "y": {0: rows, 1: Dim.AUTO}}
""",
    "10.2 serves the requests in reverse order": """
def serve(scorer, requests):  # the red team's (redL4): outputs put back in request order
    compiled = torch.compile(scorer, backend="eager", dynamic=True)
    outputs = []
    for x, temperature in reversed(requests):
        scorer.temperature = temperature
        outputs.append(compiled(x))
    return outputs[::-1]
""",
    "10.2 serves from a compiled deep copy of the scorer": """
import copy


def serve(scorer, requests):  # the tester's (honS): the copy holds the same weights
    model = copy.deepcopy(scorer)
    compiled = torch.compile(model, backend="eager", dynamic=True)
    outputs = []
    for x, temperature in requests:
        model.temperature = temperature
        outputs.append(compiled(x))
    return outputs
""",
    "10.2 serves every request in one compiled call": """
def scored(scorer, x, temperatures, request_of_row, requests: int):
    logits = scorer.linear(x) / temperatures
    largest = logits.abs().amax(-1)
    per_request = torch.zeros(requests).scatter_reduce(0, request_of_row, largest, "amax")
    clamped = (per_request > 4)[request_of_row].unsqueeze(-1)
    return torch.where(clamped, logits.clamp(-4, 4), logits).softmax(-1)


def serve(scorer, requests):  # the red team's (redL4): one batch, split per request
    rows = [len(x) for x, _ in requests]
    x = torch.cat([x for x, _ in requests])
    temperatures = torch.cat([torch.full((n, 1), t) for n, (_, t) in zip(rows, requests)])
    request_of_row = torch.cat([torch.full((n,), i) for i, n in enumerate(rows)])
    compiled = torch.compile(scored, backend="eager", dynamic=True)
    return list(compiled(scorer, x, temperatures, request_of_row, len(requests)).split(rows))
""",
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", sorted(HONEST_ALTERNATIVES))
def test_an_honest_alternative_passes(answer, seed, monkeypatch):
    assert verdict(answer.split()[0], HONEST_ALTERNATIVES[answer], seed, monkeypatch) is None


COPIED_FOR_THE_BACKEND_10_3 = """
import copy


def results_differ(gm, inputs, backend):  # a copy of gm, not Dynamo's graph: the minifier's way
    got, want = backend(copy.deepcopy(gm), list(inputs))(*inputs), gm(*inputs)
    return any(not torch.allclose(g, w, equal_nan=True) for g, w in zip(got, want, strict=True))
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_10_3_takes_a_predicate_that_hands_the_backend_a_copy_of_gm(seed, monkeypatch):
    """handed_dynamos_graph refuses torch.compile around the backend, not a graph the predicate
    copied itself."""
    assert verdict("10.3", COPIED_FOR_THE_BACKEND_10_3, seed, monkeypatch) is None


SERVE_THAT_YIELDS = """
def serve(scorer, requests):  # outputs handed on one by one, each computed as it is taken
    compiled = torch.compile(scorer, backend="eager", dynamic=True)
    for x, temperature in requests:
        scorer.temperature = temperature
        yield compiled(x)
"""


# The red team's (redP6) rules, each right on the chapter's batches and wrong on one opening.
WRONG_OPENINGS_10_1 = {
    "a new size after 0s alone or 1s alone is static": "seen in ({0}, {1})",
    "a new size after 0 and 1 is static": "seen <= {0, 1}",
    "a new size after one other size and a 0 or 1 is static": "len(seen) == 2 and seen & {0, 1}",
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("wrong", WRONG_OPENINGS_10_1)
def test_10_1_refuses_a_rule_wrong_after_one_kind_of_opening(wrong, seed, monkeypatch):
    """Every run begins some of its sequences each way (compile_depth.OPENINGS), so a rule
    wrong after one way of beginning is refused on every seed."""
    answer = f"""
def what_compiles(batches):
    words, seen, symbolic = [], set(), False
    for i, b in enumerate(batches):
        if b in seen or (symbolic and b >= 2):
            words.append("reuse")
        elif i == 0 or b in (0, 1) or ({WRONG_OPENINGS_10_1[wrong]}):
            words.append("static")
            seen.add(b)
        else:
            words.append("symbolic")
            symbolic = True
    return words
"""
    problem = verdict("10.1", answer, seed, monkeypatch)
    assert problem is not None and "your word for call" in problem, problem


@pytest.mark.parametrize("seed", SEEDS)
def test_10_1_takes_the_words_in_a_tuple(seed, monkeypatch):
    """The red team (redY): the reference's rule returning tuple(words) was told "should return
    a list"; the try-it asks for one word per call."""
    answer = reference_answer("10.1").replace("    return words", "    return tuple(words)")
    assert "tuple(words)" in answer
    assert verdict("10.1", answer, seed, monkeypatch) is None


@pytest.mark.parametrize("seed", SEEDS)
def test_10_2_takes_a_serve_that_yields_its_outputs(seed, monkeypatch):
    """The red team's (redO): the generator ran after serve_run stopped watching Dynamo, so
    the answer heard that nothing was compiled."""
    assert verdict("10.2", SERVE_THAT_YIELDS, seed, monkeypatch) is None


# Wrong answers of the red-team reviews (run over fresh cases, they passed some runs or all).
WRONG_ANSWERS = {
    "10.3 wraps the backend in torch.compile": """
def results_differ(gm, inputs, backend):  # the red team's (redQ): Dynamo's graph, 7 to 12 s a run
    got, want = torch.compile(gm, backend=backend)(*inputs), gm(*inputs)
    return any(not torch.allclose(g, w, equal_nan=True) for g, w in zip(got, want))
""",
    "12.2 takes the remainder through a float division": """
class Gcd(nn.Module):  # the red team's (redQ): a / b of int64 tensors is a float32 division
    def forward(self, a, b):
        step = lambda a, b: (b.clone(), a - b * torch.floor(a / b).long())  # noqa: E731
        found, _ = torch.while_loop(lambda a, b: b != 0, step, (a, b))
        return found
""",
    "12.2 takes the remainder through a float64 division": """
class Gcd(nn.Module):  # exact below 2**53 only
    def forward(self, a, b):
        def step(a, b):
            x, y = a.double(), b.double()
            return b.clone(), (x - y * torch.floor(x / y)).long()

        found, _ = torch.while_loop(lambda a, b: b != 0, step, (a, b))
        return found
""",
    "10.2 rounds the temperature to two decimals": """
def serve(scorer, requests):  # the red team's (redY): every drawn temperature had two decimals
    compiled = torch.compile(scorer, backend="eager", dynamic=True)
    outputs = []
    for x, temperature in requests:
        scorer.temperature = round(temperature, 2)
        outputs.append(compiled(x))
    return outputs
""",
    "10.3 compares each output's mean": """
def results_differ(gm, inputs, backend):
    got, want = backend(gm, inputs)(*inputs), gm(*inputs)
    return any(not torch.allclose(g.mean(), w.mean(), equal_nan=True) for g, w in zip(got, want))
""",
    # known fault (s35g): NaN made 0 on both sides, wrong only where gm computes 0 there
    "10.3 turns NaN into 0 on both sides": """
def results_differ(gm, inputs, backend):
    got, want = backend(gm, inputs)(*inputs), gm(*inputs)
    return any(not torch.allclose(g.nan_to_num(), w.nan_to_num()) for g, w in zip(got, want))
""",
    "10.3 compares each output's largest magnitude": """
def results_differ(gm, inputs, backend):
    got, want = backend(gm, inputs)(*inputs), gm(*inputs)
    return any(
        not torch.allclose(g.abs().max(), w.abs().max(), equal_nan=True) for g, w in zip(got, want)
    )
""",
    # the red team's (redD): Euclid by subtraction (its loop ran for minutes), two steps per run
    # of the loop's body (the prompt says one), a float gcd
    "12.2 subtracts the smaller from the larger": """
class Gcd(nn.Module):
    def forward(self, a, b):
        def step(a, b):
            return torch.where(a >= b, b, a), torch.where(a >= b, a - b, b - a)

        found, _ = torch.while_loop(lambda a, b: b != 0, step, (a, b))
        return found
""",
    "12.2 takes two steps per run of the body": """
class Gcd(nn.Module):
    def forward(self, a, b):
        def two_steps(a, b):
            c = a % b
            last = c == 0
            return torch.where(last, b, c), torch.where(last, 0, b % torch.where(last, 1, c))

        found, _ = torch.while_loop(lambda a, b: b != 0, two_steps, (a, b))
        return found
""",
    "12.2 returns a float gcd": """
class Gcd(nn.Module):
    def forward(self, a, b):
        found, _ = torch.while_loop(lambda a, b: b != 0, lambda a, b: (b.clone(), a % b), (a, b))
        return found.float()
""",
    # the red team's (redF): a loop of a count fixed in advance (100 runs: enough for any int64
    # pair) and Stein's binary gcd (shifts and differences, no a mod b); both were refused only
    # because the run counter's hooks piled up on the loop body that every program.module()
    # shares, and stopped a later pair with a raw LoopRanTooLong
    "12.2 runs its loop a fixed number of times": """
class Gcd(nn.Module):
    def forward(self, a, b):
        def step(i, a, b):
            safe = torch.where(b == 0, torch.ones_like(b), b)
            return i + 1, torch.where(b == 0, a, b), torch.where(b == 0, b, a % safe)

        _, found, _ = torch.while_loop(lambda i, a, b: i < 100, step, (torch.zeros_like(a), a, b))
        return found
""",
    "12.2 takes binary gcd steps": """
class Gcd(nn.Module):
    def forward(self, a, b):
        def step(a, b, k):
            both, a_even, b_even = ((a | b) & 1) == 0, (a & 1) == 0, (b & 1) == 0
            odd_a = torch.where(b_even, a, torch.minimum(a, b))
            odd_b = torch.where(b_even, b >> 1, (a - b).abs())
            na = torch.where(both | a_even, a >> 1, odd_a)
            nb = torch.where(both, b >> 1, torch.where(a_even, b, odd_b))
            zero = na == 0
            return torch.where(zero, nb, na), torch.where(zero, 0, nb), torch.where(both, k + 1, k)

        found, _, k = torch.while_loop(lambda a, b, k: b != 0, step, (a, b, torch.zeros_like(a)))
        return found << k
""",
    # the red team's (redH): one Euclid step in a torch.cond's branch before the loop (a copy of a
    # step outside it, in a subgraph), and the gcd narrowed to int32 (every drawn gcd was small)
    "12.2 takes one step in a cond before the loop": """
class Gcd(nn.Module):
    def forward(self, a, b):
        def step(a, b):
            return b.clone(), a % b

        a, b = torch.cond(b != 0, step, lambda a, b: (a.clone(), b.clone()), (a, b))
        found, _ = torch.while_loop(lambda a, b: b != 0, step, (a, b))
        return found
""",
    "12.2 returns an int32 gcd": """
class Gcd(nn.Module):
    def forward(self, a, b):
        found, _ = torch.while_loop(lambda a, b: b != 0, lambda a, b: (b.clone(), a % b), (a, b))
        return found.int()
""",
    "10.2 compiles only the Linear": """
def serve(scorer, requests):  # the red team's (redF): the rest runs eagerly, nothing recompiles
    linear = torch.compile(scorer.linear, backend="eager", dynamic=True)
    outputs = []
    for x, temperature in requests:
        logits = linear(x) / temperature
        if logits.abs().max() > 4:
            logits = logits.clamp(-4, 4)
        outputs.append(logits.softmax(-1))
    return outputs
""",
    "10.2 clamps on the largest logit only": """
class Scorer(nn.Module):  # the red team's (redO): max() for abs().max(), no break, dynamic=True
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)
        self.temperature = 1.0

    def forward(self, x):
        logits = self.linear(x) / self.temperature
        return torch.where(logits.max() > 4, logits.clamp(-4, 4), logits).softmax(-1)


def serve(scorer, requests):
    compiled = torch.compile(scorer, backend="eager", dynamic=True)
    outputs = []
    for x, temperature in requests:
        scorer.temperature = temperature
        outputs.append(compiled(x))
    return outputs
""",
    "10.3 takes NaN for a difference": """
def results_differ(gm, inputs, backend):  # the red team's (redD): allclose without equal_nan
    got, want = backend(gm, inputs)(*inputs), gm(*inputs)
    return any(not torch.allclose(g, w) for g, w in zip(got, want))
""",
    "10.3 compares the largest difference": """
def results_differ(gm, inputs, backend):  # the red team's (redD): NaN > tol is False
    got, want = backend(gm, inputs)(*inputs), gm(*inputs)
    return any(bool((g - w).abs().max() > 1e-5) for g, w in zip(got, want))
""",
    "10.3 skips every place where a side is NaN": """
def results_differ(gm, inputs, backend):  # the red team's (redF): NaN on one side is no difference
    got, want = backend(gm, inputs)(*inputs), gm(*inputs)
    for g, w in zip(got, want):
        finite = torch.isfinite(g) & torch.isfinite(w)
        if not torch.allclose(g[finite], w[finite]):
            return True
    return False
""",
    "10.3 compares exactly, NaN where both have NaN alike (red team redV)": """
def results_differ(gm, inputs, backend):  # a healthy backend that rounds otherwise fails
    want = torch.utils._pytree.tree_leaves(gm(*inputs))
    got = torch.utils._pytree.tree_leaves(backend(gm, inputs)(*inputs))
    same = [torch.equal(g.isnan(), w.isnan()) and torch.equal(g.nan_to_num(), w.nan_to_num())
            for g, w in zip(got, want)]
    return len(got) != len(want) or not all(same)
""",
    "10.3 compares within 1 %": """
def results_differ(gm, inputs, backend):  # the red team's (redJ3): 1 % is far beyond rounding
    got, want = backend(gm, inputs)(*inputs), gm(*inputs)
    return any(
        not torch.allclose(g, w, rtol=1e-2, atol=1e-2, equal_nan=True) for g, w in zip(got, want)
    )
""",
    "10.3 compares with torch.equal": """
def results_differ(gm, inputs, backend):  # NaN != NaN for torch.equal too
    got, want = backend(gm, inputs)(*inputs), gm(*inputs)
    return any(not torch.equal(g, w) for g, w in zip(got, want))
""",
    "12.1 bounds the batch far above any real batch": """
def interleave_shapes(low, high):  # a bound is not every size (every_size_from_one)
    n, batch = Dim("n", min=low, max=high), Dim("batch", min=1, max=2**62)
    return {"x": {0: batch, 1: n}, "y": {0: batch, 1: 2 * n}}
""",
    "12.1 bounds the batch like n": """
def interleave_shapes(low, high):
    n, batch = Dim("n", min=low, max=high), Dim("batch", min=1, max=high)
    return {"x": {0: batch, 1: n}, "y": {0: batch, 1: 2 * n}}
""",
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mistake", sorted(WRONG_ANSWERS))
def test_a_wrong_answer_is_refused_in_every_run(mistake, seed, monkeypatch):
    tryit_id = mistake.split()[0]
    assert verdict(tryit_id, WRONG_ANSWERS[mistake], seed, monkeypatch) is not None


COMPILED_PER_REQUEST = """
def serve(scorer, requests):  # the red team's (redJ3): torch.compile anew for each request
    outputs = []
    for x, temperature in requests:
        scorer.temperature = temperature
        outputs.append(torch.compile(scorer, backend="eager", dynamic=True)(x))
    return outputs
"""


def test_10_2_tells_a_serve_that_compiles_per_request_what_recompiled(monkeypatch):
    problem = verdict("10.2", COMPILED_PER_REQUEST, SEEDS[0], monkeypatch)
    assert "anew for each request" in problem and "BACKEND_MATCH" not in problem, problem


SERVED_AS_IT_WAS = """
def serve(scorer, requests):
    compiled = torch.compile(scorer, backend="eager")
    outputs = []
    for x, temperature in requests:
        scorer.temperature = temperature
        outputs.append(compiled(x))
    return outputs
"""


def test_10_2_says_which_settings_made_outside_serve_were_set_aside(monkeypatch):
    """The tester's (honR): settings an earlier cell made (static shapes off, floats not
    specialised) serve mixed requests without a recompile in the learner's own run; the check
    runs serve under Dynamo's defaults and told only a guard that failed."""
    monkeypatch.setattr(torch._dynamo.config, "assume_static_by_default", False)
    monkeypatch.setattr(torch._dynamo.config, "specialize_float", False)
    problem = verdict("10.2", SERVED_AS_IT_WAS, SEEDS[0], monkeypatch)
    assert "a frame recompiled" in problem, problem
    assert "default assume_static_by_default:" in problem, problem


def reference_answer(tryit_id: str) -> str:
    nb = check_cells.solution(CHAPTERS[tryit_id.split(".")[0]])
    (answer,) = [nb.cells[i].source for i in authoring.tryits(nb)[tryit_id]["answer"]]
    return answer


PLACE_BLIND_10_3 = """
def results_differ(gm, inputs, backend):
    got, want = backend(gm, inputs)(*inputs), gm(*inputs)
    return any(not torch.allclose(g.sort().values, w.sort().values) for g, w in zip(got, want))
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_10_3_refuses_a_comparison_blind_to_where_values_are_in_every_run(seed, monkeypatch):
    """The red team's (s7, late) predicate compares each output's sorted values, so a backend
    that moves values to other places looks right to it; every run plants such a backend."""
    assert verdict("10.3", PLACE_BLIND_10_3, seed, monkeypatch) is not None
    assert verdict("10.3", reference_answer("10.3"), seed, monkeypatch) is None


FINITE_ONLY_10_3 = """
def results_differ(gm, inputs, backend):
    got, want = backend(gm, inputs)(*inputs), gm(*inputs)
    for g, w in zip(got, want):
        if not torch.equal(g.isnan(), w.isnan()):
            return True
        both = g.isfinite() & w.isfinite()
        if not torch.allclose(g[both], w[both]):
            return True
    return False
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_10_3_refuses_a_comparison_of_the_finite_places_only_in_every_run(seed, monkeypatch):
    """Known fault: a predicate that compared NaN places and then only the places finite on both
    sides treated inf and a number alike; every run now plants a backend that makes inf where
    gm computes a number (where the inf turns into NaN downstream, the predicate sees the whole
    graph differ but keeps more than the planted operator)."""
    problem = verdict("10.3", FINITE_ONLY_10_3, seed, monkeypatch)
    told = ("makes inf where gm has a number", "with a correct predicate one operator is left")
    assert problem is not None and any(words in problem for words in told), problem


GM_NAN_SKIPPED_10_3 = {  # the red team's (redH2): gm's NaN places left out of the comparison
    "where gm is not NaN": "keep = ~w.isnan()",
    "where gm is finite": "keep = w.isfinite()",
}
GM_NAN_SKIPPING = """
def results_differ(gm, inputs, backend):
    got, want = backend(gm, inputs)(*inputs), gm(*inputs)
    for g, w in zip(got, want):
        {keep}
        if not torch.allclose(g[keep], w[keep], equal_nan=True):
            return True
    return False
"""


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("skipped", sorted(GM_NAN_SKIPPED_10_3))
def test_10_3_refuses_a_comparison_that_skips_where_gm_has_nan(skipped, seed, monkeypatch):
    """No planted fault changed a place where gm computes NaN, so a predicate that looked only
    where gm has a number passed every run (redH2); every run now plants a backend that makes
    a number where gm computes NaN, and the learner hears so."""
    answer = GM_NAN_SKIPPING.replace("{keep}", GM_NAN_SKIPPED_10_3[skipped])
    problem = verdict("10.3", answer, seed, monkeypatch)
    assert problem is not None and "makes a number where gm has NaN" in problem, problem


@pytest.mark.parametrize("seed", SEEDS)
def test_the_reference_rule_of_10_1_is_what_torch_compiles(seed):
    answer = reference_answer("10.1")
    namespace: dict = {}
    exec(compile(answer, "answer", "exec"), namespace)

    def doubled_relu(x):
        return torch.relu(x) * 2

    for index in range(7):
        batches, width = compile_depth.batch_sequence(CaseMaker(seed * 100 + index, index))
        predicted = compile_depth.words_under_force_eager(namespace["what_compiles"], batches)
        assert predicted == what_each_call_compiled(doubled_relu, batches, width), batches


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
    """torch's own LazyTraceHandler, left by an earlier test's set_logs, removes itself at the
    first record when TORCH_TRACE is unset (as the block's first records may be): not counted."""
    from torch._logging._internal import LazyTraceHandler, trace_log

    def handlers() -> list:
        return [h for h in trace_log.handlers if not isinstance(h, LazyTraceHandler)]

    before = handlers()
    with structured_trace(tmp_path / "trace.log"):
        assert len(handlers()) == len(before) + 1
    assert handlers() == before


def test_a_planted_backend_is_wrong_exactly_where_its_operator_is():
    tanh_wrong = compile_depth.planted_backend(torch.ops.aten.tanh.default)
    places = set()
    for index in range(6):
        case = compile_depth.minifier_case(CaseMaker(index, index, run_seed=12))
        x = case.inputs
        got, want = case.backend(case.gm, x)(*x), case.gm(*x)
        assert len(got) == len(want) >= 2
        differ = [not torch.allclose(g, w, equal_nan=True) for g, w in zip(got, want, strict=True)]
        assert differ.count(True) == 1
        width = len(x[0])
        if len(got[0]) == 2 * width + 1:  # the result, its negation and the balance, first
            assert differ[0] and torch.equal(got[0][:width], -got[0][width:-1])
            places.add("balanced")
        else:
            places.add("last" if differ[-1] else "first" if differ[0] else "middle")
        uses_tanh = torch.ops.aten.tanh.default in compile_depth.call_targets(case.gm)
        same = all(
            torch.allclose(g, w, equal_nan=True)
            for g, w in zip(tanh_wrong(case.gm, x)(*x), want, strict=True)
        )
        assert same is not uses_tanh
    assert places == {"first", "middle", "last", "balanced"}


def test_a_predicate_that_compares_the_outputs_total_is_refused_in_every_run():
    """Summing every output (right only while errors cannot cancel: the red-team review's
    shortcut, which the planted +1 always let through) leaves the minifier nothing to shrink."""

    def total_differs(gm, inputs, backend):
        got, want = backend(gm, inputs)(*inputs), gm(*inputs)
        return not torch.allclose(sum(g.sum() for g in got), sum(w.sum() for w in want))

    for run_seed in random.Random().sample(range(10**6), 3):
        cases = [compile_depth.minifier_case(make) for make in makers_of(run_seed, 6)]
        found = [compile_depth.minified(case, total_differs) for case in cases]
        # refused: nothing to shrink, or (a NaN output's total is NaN) gm differs from itself
        itself = [compile_depth.differs_from_itself(case, total_differs) for case in cases]
        assert None in found or any(itself), run_seed


def test_a_balanced_output_hides_the_planted_error_from_every_summary():
    """Every run has an output whose sum, mean, largest magnitude and norm stay the same (the
    red-team reviews' summary-comparing predicates), though its elements differ; its negation is
    exact whichever operator is planted (run 603910 of a clean-clone CI planted neg), and free
    of NaN (run 376198: a planted tanh + 1 made NaN further down the chain, in both halves)."""
    summaries = (torch.sum, torch.mean, lambda t: t.abs().max(), torch.linalg.vector_norm)
    balanced, drawn = 0, random.Random().sample(range(10**6), 40 if len(SEEDS) >= 20 else 10)
    for run_seed in [603910, 376198, *drawn]:
        for make in makers_of(run_seed, 6):
            case = compile_depth.minifier_case(make)
            got = case.backend(case.gm, case.inputs)(*case.inputs)
            want = case.gm(*case.inputs)
            width = len(case.inputs[0])
            if len(want[0]) == 2 * width + 1:
                balanced += 1
                assert torch.equal(got[0][:width], -got[0][width:-1]), make.notes
                assert not torch.allclose(got[0], want[0], equal_nan=True)
                for summary in summaries:
                    assert torch.allclose(summary(got[0]), summary(want[0]), equal_nan=True)
    assert balanced >= 2 + len(drawn)  # every run has one


def test_a_stance_left_by_an_earlier_cell_does_not_reach_serve():
    """The red team (redB) left torch.compiler.set_stance("eager_on_recompile") set by one cell;
    the next run of 10.2 told the reference answer that nothing was compiled."""
    requests, seed = serve_cases.request_stream(CaseMaker(2, 2))

    def serve(scorer, requests):
        compiled = torch.compile(scorer, backend="eager", dynamic=True)
        return [compiled(x) for x, _temperature in requests]

    torch.manual_seed(seed)
    torch.compiler.set_stance("force_eager")
    try:
        run = serve_cases.serve_run(serve, serve_cases.ReferenceScorer(), requests)
    finally:
        torch.compiler.set_stance("default")
    assert run.compiles > 0 and not run.uncompiled


def test_a_recompile_limit_lowered_by_an_earlier_cell_does_not_reach_serve(monkeypatch):
    """Known fault (s35): a torch._dynamo.config.recompile_limit lowered by an earlier cell
    reached the checkpoint's serve runs; serve_run now judges under Dynamo's default recompile
    settings, and a recompile of a serve that lowers the limit itself is still seen."""
    sizes = torch.Generator().manual_seed(3)
    requests = [(torch.randn(rows, 4, generator=sizes), 1.0) for rows in (8, 9, 10)]
    limits = []

    def lowering(scorer, requests):  # a serve that lowers the limit itself, then recompiles
        limits.append(torch._dynamo.config.recompile_limit)
        torch._dynamo.config.recompile_limit = 1
        compiled = torch.compile(scorer, backend="eager")
        return [compiled(x) for x, _temperature in requests]

    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 1)  # as an earlier cell did
    run = serve_cases.serve_run(lowering, serve_cases.ReferenceScorer(), requests)
    assert limits == [serve_cases.dynamo_defaults()["recompile_limit"]] == [8]
    assert run.recompiles
    assert torch._dynamo.config.recompile_limit == 1  # the earlier cell's value, back


def test_every_request_stream_has_a_request_that_needs_clamping():
    for index in range(10):
        requests, _ = serve_cases.request_stream(CaseMaker(index, index))
        assert any(x.abs().max() > 10 for x, _ in requests)


def test_every_temperature_changes_when_rounded_to_two_decimals():
    """The red team (redY): a serve that set round(temperature, 2) passed every run, as every
    drawn temperature had two decimals; each now has a third, 3 to 7."""
    for run_seed in range(10):
        for make in makers_of(run_seed, 5):
            requests, _ = serve_cases.request_stream(make)
            assert all(abs(t - round(t, 2)) > 0.0029 for _, t in requests), requests


def test_every_request_stream_has_logits_past_4_on_one_side_only():
    """Each run's streams hold a request clamped below -4 only and one above 4 only (redO): a
    Scorer rewritten to test max() or min() instead of abs().max() serves one unclamped."""
    for run_seed in range(10):
        sides = set()
        for make in makers_of(run_seed, 5):
            requests, weights_seed = serve_cases.request_stream(make)
            torch.manual_seed(weights_seed)
            linear = serve_cases.ReferenceScorer().linear
            with torch.no_grad():
                logits = [linear(x) / temperature for x, temperature in requests]
            sides |= {(z.max() > 4).item() - (z.min() < -4).item() for z in logits}
        assert {-1, 1} <= sides, run_seed


def test_a_predicate_that_raises_is_not_taken_for_a_refusal():
    case = compile_depth.minifier_case(CaseMaker(0, 0))

    def ambiguous(gm, inputs, backend):
        return any(g != w for g, w in zip(backend(gm, inputs)(*inputs), gm(*inputs), strict=True))

    with pytest.raises(RuntimeError, match="ambiguous"):
        compile_depth.minified(case, ambiguous)


def test_a_request_served_eagerly_is_noted():
    requests, seed = serve_cases.request_stream(CaseMaker(1, 1))

    def first_only(scorer, requests):
        compiled = torch.compile(scorer, backend="eager", dynamic=True)
        outputs = []
        for i, (x, temperature) in enumerate(requests):
            scorer.temperature = temperature
            outputs.append(compiled(x) if i == 0 else scorer(x))
        return outputs

    torch.manual_seed(seed)
    run = serve_cases.serve_run(first_only, serve_cases.ReferenceScorer(), requests)
    assert run.uncompiled == list(range(2, len(requests) + 1))


DONE_FLAG_12_2 = """
class Gcd(nn.Module):
    def forward(self, a, b):
        def step(a, b, done):  # one step per run; the last run only sees that b is 0
            stop = b == 0
            remainder = a % torch.where(stop, torch.ones_like(b), b)
            return torch.where(stop, a, b), torch.where(stop, b, remainder), stop

        found, _, _ = torch.while_loop(lambda a, b, done: ~done, step, (a, b, b < 0))
        return found
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_12_2_accepts_a_loop_that_notices_the_end_in_a_run_of_its_own(seed, monkeypatch):
    """Its body runs once more than Euclid takes steps: still one step per run (the bound on
    the runs that refuses a count fixed in advance leaves room for it)."""
    assert verdict("12.2", DONE_FLAG_12_2, seed, monkeypatch) is None


PYTHON_WHILE_12_2 = """
class Gcd(nn.Module):
    def forward(self, a, b):
        while b.item() != 0:
            a, b = b, a % b
        return a
"""


def test_12_2_says_not_yet_when_export_cannot_capture_the_loop(monkeypatch):
    """Known fault (s35e): a Python while on .item() got torch's raw guard error; the checkpoint
    now says what export cannot capture."""
    problem = verdict("12.2", PYTHON_WHILE_12_2, 1, monkeypatch)
    assert problem is not None and "could not capture Gcd" in problem, problem
    assert "GuardOnDataDependentSymNode" in problem  # export's own error, its first line


def test_counting_a_loops_runs_leaves_no_hook_behind():
    """Every program.module() shares the loop bodies of its program: a counting hook left on one
    counted the runs of every later pair too, and stopped the tenth 90-step pair (redF)."""
    from fxcourse.export_depth import LOOP_LIMIT, gcd_with_loop_runs

    namespace: dict = {"torch": torch, "nn": torch.nn}
    exec(compile(reference_answer("12.2"), "answer", "exec"), namespace)
    program = torch.export.export(namespace["Gcd"](), (torch.tensor(12), torch.tensor(18)))
    longest = (7540113804746346429, 4660046610375530309)  # 90 steps
    for _ in range(LOOP_LIMIT // 90 + 2):
        assert gcd_with_loop_runs(program, *longest) == (1, 90)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_reference_answer_of_12_2_passes(seed, monkeypatch):
    """Within the loop's budget of runs, and one run per Euclid step (the redD checks)."""
    assert verdict("12.2", reference_answer("12.2"), seed, monkeypatch) is None


PAIR_12_2 = """
class Gcd(nn.Module):
    def forward(self, a, b):
        return torch.while_loop(lambda a, b: b != 0, lambda a, b: (b.clone(), a % b), (a, b))
"""
ROW_12_2 = """
class Gcd(nn.Module):
    def forward(self, a, b):
        found, _ = torch.while_loop(lambda a, b: b != 0, lambda a, b: (b.clone(), a % b), (a, b))
        return found.reshape(1)
"""
INT_12_2 = """
class Gcd(nn.Module):
    def forward(self, a, b):
        found, _ = torch.while_loop(lambda a, b: b != 0, lambda a, b: (b.clone(), a % b), (a, b))
        return found.item()
"""
FLOAT_12_2 = """
class Gcd(nn.Module):
    def forward(self, a, b):
        found, _ = torch.while_loop(lambda a, b: b != 0, lambda a, b: (b.clone(), a % b), (a, b))
        return found / 1
"""


def test_12_2_tells_what_forward_returned_when_it_is_not_the_gcd_alone(monkeypatch):
    """Known faults (reviewer, redH): the loop's (a, b) pair got an AttributeError from the
    checkpoint's helper, and a result of shape (1,) passed; both now hear what came back. A
    Python int (.item()) was told "forward returned a int" (redL)."""
    told = [(PAIR_12_2, "a value of type tuple"), (INT_12_2, "a value of type int")]
    for source, returned in [*told, (ROW_12_2, "a tensor of shape (1,)")]:
        problem = verdict("12.2", source, 1, monkeypatch)
        assert problem is not None and f"forward returned {returned}" in problem, problem


def test_12_2_tells_a_float_result_by_its_dtype_not_as_a_step_outside_the_loop(monkeypatch):
    """Known fault: `found / 1` (a true division by a number) was told "divide outside the
    loop", and a float gcd heard "wrong gcd" first; it hears the dtype now."""
    problem = verdict("12.2", FLOAT_12_2, 1, monkeypatch)
    assert problem is not None and "not a float one" in problem, problem


def test_12_1_asks_below_a_range_only_where_the_program_can_check_it():
    """Known fault (reviewer): a program checks a min of 2 or less at no run, so n = 1 below the
    chapter's 2..32 was refused only through y's derived width; fresh ranges start at 3."""
    from fxcourse.export_depth import range_case

    lows = {range_case(CaseMaker(seed, index)).low for seed in range(40) for index in range(1, 5)}
    assert min(lows) == 3


COND_RETURNS_B_12_2 = """
class Gcd(nn.Module):
    def forward(self, a, b):
        found, _ = torch.while_loop(lambda a, b: b, lambda a, b: (b.clone(), a % b), (a, b))
        return found
"""
COND_CLONES_B_12_2 = """
class Gcd(nn.Module):
    def forward(self, a, b):
        found, _ = torch.while_loop(
            lambda a, b: b.clone(), lambda a, b: (b.clone(), a % b), (a, b)
        )
        return found
"""


def test_12_2_tells_why_export_refused_a_condition(monkeypatch):
    """Known faults (reviewer): a cond_fn returning `b` itself was told only of the body, and one
    returning `b.clone()` (no bool) heard only the error's first line, which names no reason."""
    problem = verdict("12.2", COND_RETURNS_B_12_2, 1, monkeypatch)
    assert problem is not None and "neither the condition nor the body" in problem, problem
    problem = verdict("12.2", COND_CLONES_B_12_2, 1, monkeypatch)
    assert problem is not None and "unsupported cond_fn return type" in problem, problem


def test_10_3_a_graph_handed_a_list_names_the_learners_line():
    """The red team's (redP) predicate called the compiled callable with the list of inputs
    (compiled(inputs)): the graph's generated forward raised, and the Not yet quoted that line
    (`mul = torch.ops.aten.mul.Tensor(x_1, 1.0)`), code the learner never wrote."""
    import traceback

    from torch import fx

    from fxcourse import raised

    graph = fx.symbolic_trace(lambda x: torch.relu(x) * 2)
    cell = "def results_differ(gm, inputs):\n    return gm.forward(inputs)\n"  # as a backend gives
    namespace: dict = {}
    exec(compile(cell, "/tmp/ipykernel_0/cell.py", "exec"), namespace)
    with pytest.raises((TypeError, RuntimeError)) as caught:
        namespace["results_differ"](graph, [torch.ones(2)])
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert any(frame.filename.startswith(raised.GENERATED) for frame in frames)
    assert raised.learners_frame(frames).startswith("line 2"), raised.learners_frame(frames)


@pytest.mark.parametrize("seed", SEEDS)
def test_10_1_measures_its_first_case_as_torch_ships_whatever_an_earlier_cell_set(
    seed, monkeypatch
):
    """The red team's (redR): a stance left at force_eager by an earlier cell (run as a statement,
    not a `with` block), or a recompile_limit lowered there, made the measurement of the chapter's
    batches all "reuse" (or eager after the limit), and the reference answer heard "Not yet"."""
    namespace, check = chapter_namespace("10.1")
    exec(compile(reference_answer("10.1"), "answer", "exec"), namespace)
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 1)
    torch.compiler.set_stance("force_eager")
    try:
        tryit.replay("10.1", seed)
        assert check_cells.judged(check, namespace, monkeypatch).problem is None
    finally:
        torch.compiler.set_stance("default")


def test_10_3_tells_a_predicate_that_returns_nothing(monkeypatch):
    """The red team's (redR): the comparison computed, its `return` forgotten: None heard "your
    predicate says that the whole graph does not fail", nothing about the missing answer."""
    forgot = reference_answer("10.3").replace("    return len(got)", "    different = len(got)")
    assert forgot != reference_answer("10.3")
    for seed in SEEDS:
        problem = verdict("10.3", forgot, seed, monkeypatch)
        assert problem is not None and "returned None" in problem, problem


@pytest.mark.parametrize(
    "y_width",
    [
        "Dim.AUTO",  # redY: the whole UserError, some 700 characters, was quoted
        'Dim("m", min=2 * low, max=2 * high)',  # redD: torch's "m = 2*n" was relayed
        "2 * high",  # redD: a plain int, told as the learner's ConstraintViolationError
    ],
)
def test_12_1_tells_a_refused_spec_in_short_without_torch_s_suggested_relation(
    monkeypatch, y_width
):
    """Export refusing the spec is told as such, in torch's first sentence: no TORCH_LOGS or
    draft_export advice, and no suggested fix, which spells out the relation the try-it asks for."""
    answer = f"""
def interleave_shapes(low, high):
    n, batch = Dim("n", min=low, max=high), Dim("batch")
    return {{"x": {{0: batch, 1: n}}, "y": {{0: batch, 1: {y_width}}}}}
"""
    problem = verdict("12.1", answer, 1, monkeypatch)
    assert problem.startswith("torch.export.export refused the dynamic_shapes"), problem
    assert "2*n" not in problem.replace(" ", "") and "suggest" not in problem, problem
    assert "draft_export" not in problem and "TORCH_LOGS" not in problem, problem
    assert len(problem) < 300, problem


def test_12_1_tells_interleave_shapes_that_returns_nothing(monkeypatch):
    """The red team's (redR): the dict built, its `return` forgotten: None as dynamic_shapes
    exports a static program, and the learner heard "the program should accept x of shape ..."."""
    forgot = reference_answer("12.1").replace("    return {", "    shapes = {")
    assert forgot != reference_answer("12.1")
    for seed in SEEDS:
        problem = verdict("12.1", forgot, seed, monkeypatch)
        assert problem is not None and "returned None" in problem, problem


def test_12_2_export_s_aliasing_refusal_is_told_without_an_address():
    """The red team's (redV) Gcd whose body returns b as it came: torch's reason ended "Found in
    <bound method ... object at 0x...>>", which the Not yet quoted whole."""
    from fxcourse.export_depth import capture_failure

    class Gcd(torch.nn.Module):
        def forward(self, a, b):
            out, _ = torch.while_loop(lambda a, b: b != 0, lambda a, b: (b, a % b), (a, b))
            return out

    try:
        torch.export.export(Gcd(), (torch.tensor(12), torch.tensor(18)))
    except Exception as error:  # noqa: BLE001 - export refuses the aliasing body
        said = capture_failure(error)
    assert "aliasing" in said and "0x" not in said and "Found in" not in said, said


def test_12_2_tells_an_aliasing_refusal_by_the_clause_that_applies(monkeypatch):
    """The same Gcd in the check: the Not yet listed the .item()/`if` clause, which does not
    apply, before the aliasing one (redV); a Python `while` hears the .item() clause alone."""
    aliasing = """class Gcd(nn.Module):
    def forward(self, a, b):
        return torch.while_loop(lambda a, b: b != 0, lambda a, b: (b, a % b), (a, b))[0]
"""
    problem = verdict("12.2", aliasing, 1, monkeypatch)
    assert problem and "return an input as it came" in problem and ".item()" not in problem
    python_loop = """class Gcd(nn.Module):
    def forward(self, a, b):
        while b != 0:
            a, b = b, a % b
        return a
"""
    problem = verdict("12.2", python_loop, 1, monkeypatch)
    assert problem and ".item()" in problem and "as it came" not in problem, problem


def test_12_1_probes_are_checked_against_the_reference_answers_program():
    """12.1's verdicts per probe (accept the range's ends, refuse n just outside, refuse a y of
    the wrong width) are what the reference answer's program does: a program exported with a
    wider range for n disagrees, and the checkpoint says the course is at fault, not the learner."""
    from torch.export import Dim

    from fxcourse.export_depth import RangeCase, range_probes, runs
    from fxcourse.reference import ReferenceFailed

    class Interleave(torch.nn.Module):  # the chapter's: y's width is twice x's
        def forward(self, x, y):
            return torch.stack([x, x.flip(1)], dim=2).flatten(1) - y

    drawn = RangeCase(4, 12, 6, (3, 1, 40))
    example = (torch.randn(3, 6), torch.randn(3, 12))

    def exported(low, high):
        n, batch = Dim("n", min=low, max=high), Dim("batch")
        spec = {"x": {0: batch, 1: n}, "y": {0: batch, 1: 2 * n}}
        return torch.export.export(Interleave(), example, dynamic_shapes=spec)

    right = exported(4, 12)
    probes = range_probes(drawn, right)
    assert [accepted for _inputs, accepted, _hint in probes] == [True] * 3 + [False] * 3
    assert all(runs(right, *inputs) == accepted for inputs, accepted, _hint in probes)
    with pytest.raises(ReferenceFailed):
        range_probes(drawn, exported(4, 13))


MOD_IN_THE_CONDITION_12_2 = """
class Gcd(nn.Module):  # the red team's (redQ): the condition takes a mod b before b is tested
    def forward(self, a, b):
        found = torch.while_loop(lambda a, b: a % b != 0, lambda a, b: (b.clone(), a % b), (a, b))
        return found[1]
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_12_2_names_the_pair_whose_run_divided_by_0_in_every_run(seed, monkeypatch):
    """Every run has a pair (a, 0) (only (0, b) in some runs: the answer passed them), and the
    error raised inside the program is told with its pair, not the program's generated line."""
    problem = verdict("12.2", MOD_IN_THE_CONDITION_12_2, seed, monkeypatch)
    assert problem and problem.startswith("the exported program divided by 0 for ("), problem
    assert "arg0_1" not in problem and "remainder" not in problem


def test_10_2_tells_a_recompile_by_its_guard_alone(monkeypatch):
    """The red team (redD): the reason was Dynamo's log line, cut at 90 characters: "0/0:
    self.temperature == 1.536" then 32 spaces of padding and a fragment of the quoted source."""
    marks_only = """
def serve(scorer, requests):
    compiled = torch.compile(scorer, backend="eager")
    outputs = []
    for x, temperature in requests:
        scorer.temperature = temperature
        torch._dynamo.mark_dynamic(x, 0)
        outputs.append(compiled(x))
    return outputs
"""
    problem = verdict("10.2", marks_only, 1, monkeypatch)
    assert problem.startswith("a frame recompiled, first reason: self.temperature == "), problem
    assert "#" not in problem and "  " not in problem and "0/0" not in problem, problem


def test_10_1_tells_the_first_call_whose_word_differs(monkeypatch):
    """The red team (redD): "your word differs at call [4, 6]" put a list after "call"."""
    all_static = "def what_compiles(batches):\n    return ['static'] * len(batches)\n"
    problem = verdict("10.1", all_static, 1, monkeypatch)
    assert re.match(r"your word for call \d+ differs\. ", problem), problem


@pytest.mark.parametrize("seed", SEEDS)
def test_10_3_refuses_a_predicate_that_compares_one_place_of_each_output(seed, monkeypatch):
    """The red team (redF2): comparing only the first value of each output passed 10 runs of
    14, since every planted fault showed there. "plus one" now adds at one drawn place, never
    the first; NaN and inf stay in the first place, so the last place alone misses those."""
    allclose = "not torch.allclose(g, w, equal_nan=True)"
    for place in ("[:1]", "[-1:]"):
        one_place = (
            f"not torch.allclose(g.reshape(-1){place}, w.reshape(-1){place}, equal_nan=True)"
        )
        answer = reference_answer("10.3").replace(allclose, one_place)
        assert answer != reference_answer("10.3")
        assert verdict("10.3", answer, seed, monkeypatch) is not None, place


SCORER_WITH_A_TEMPERATURE_BUFFER = """
class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)
        self.register_buffer("temperature", torch.tensor(1.0))

    def forward(self, x):
        logits = self.linear(x) / self.temperature
        return logits.clamp(-4, 4).softmax(-1)
"""
SERVE_FILLING_THE_BUFFER = """
def serve(scorer, requests):
    compiled = torch.compile(scorer, backend="eager", dynamic=True)
    outputs = []
    for x, temperature in requests:
        scorer.temperature.fill_(temperature)
        outputs.append(compiled(x))
    return outputs
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_10_2_takes_a_scorer_given_a_temperature_buffer_in_a_cell_of_its_own(seed, monkeypatch):
    """The honest tester (honN): the chapter's Scorer cell edited to hold the temperature in a
    buffer, serve in the try-it's cell. The check loaded that Scorer's state_dict into the
    chapter's, strictly, and the learner heard "running your code raised RuntimeError: Error(s)
    in loading state_dict". The chapter's Scorer is now built from the same weights seed."""
    namespace, check = chapter_namespace("10.2")
    exec(compile(SCORER_WITH_A_TEMPERATURE_BUFFER, "Scorer", "exec"), namespace)
    exec(compile(SERVE_FILLING_THE_BUFFER, "answer", "exec"), namespace)
    tryit.replay("10.2", seed)
    assert check_cells.judged(check, namespace, monkeypatch).problem is None


SERVE_IN_ONE_FULL_GRAPH = """
def serve(scorer, requests):
    def scores(x, temperature):  # clamping always: the same values as clamping past 4 only
        return (scorer.linear(x) / temperature).clamp(-4, 4).softmax(-1)

    compiled = torch.compile(scores, backend="eager", dynamic=True, fullgraph=True)
    return [compiled(x, torch.tensor(temperature)) for x, temperature in requests]
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_10_2_counts_the_compiles_of_a_full_graph(seed, monkeypatch):
    """The honest tester (honQ): a branchless serve compiled with fullgraph=True heard "nothing
    was compiled": Dynamo's frame counter, which serve_run read, misses such compiles."""
    assert verdict("10.2", SERVE_IN_ONE_FULL_GRAPH, seed, monkeypatch) is None


SERVE_RETURNING_CLONES = """
def serve(scorer, requests):
    compiled = torch.compile(scorer, backend="eager", dynamic=True)
    outputs = []
    for x, temperature in requests:
        scorer.temperature = temperature
        outputs.append(compiled(x).clone())
    return outputs
"""
SERVE_AROUND_AN_EAGER_MODEL = {  # the red team's (redJ3): a compiled graph, not the model
    "a compiled pass-through": """
def serve(scorer, requests):
    passthrough = torch.compile(lambda t: t + 0, backend="eager", dynamic=True)
    outputs = []
    for x, temperature in requests:
        scorer.temperature = temperature
        outputs.append(passthrough(scorer(x)))
    return outputs
""",
    "a compiled tail after an eager Linear": """
def serve(scorer, requests):
    tail = torch.compile(lambda z: z.clamp(-4, 4).softmax(-1), backend="eager", dynamic=True)
    return [tail(scorer.linear(x) / temperature) for x, temperature in requests]
""",
}


@pytest.mark.parametrize("seed", SEEDS)
def test_10_2_takes_a_clone_of_the_compiled_output(seed, monkeypatch):
    """The red team (redJ3): outputs cloned after the compiled model heard that they "came out
    of no compiled graph", which held only the compiled graphs' own tensors."""
    assert verdict("10.2", SERVE_RETURNING_CLONES, seed, monkeypatch) is None


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", sorted(SERVE_AROUND_AN_EAGER_MODEL))
def test_10_2_refuses_a_compiled_graph_around_an_eager_model(kind, seed, monkeypatch):
    problem = verdict("10.2", SERVE_AROUND_AN_EAGER_MODEL[kind], seed, monkeypatch)
    assert problem is not None and "came out of no compiled graph" in problem, problem


def test_12_1_asks_about_y_s_width_only_where_torch_refused_it(monkeypatch):
    """The red team (redF2): every refusal heard "How does y's width follow from n?", a batch
    bounded by max=2 too, whose "3 not in range [2, 2]" quoted a batch the learner never saw."""
    bounded_batch = """
def interleave_shapes(low, high):
    n, batch = Dim("n", min=low, max=high), Dim("batch", max=2)
    return {"x": {0: batch, 1: n}, "y": {0: batch, 1: 2 * n}}
"""
    problem = verdict("12.1", bounded_batch, 1, monkeypatch)
    assert re.search(r"for x of shape \(\d+, \d+\) and y of shape \(\d+, \d+\)", problem), problem
    assert "y's width" not in problem, problem


def test_10_1_a_rule_that_measures_in_a_child_python_sees_compile_turned_off_there_too():
    """The red team (redF2): a rule that ran the calls in a child Python measured what they
    compile, since the stance and Dynamo's `disable` did not reach it. The child reads
    TORCH_COMPILE_DISABLE=1, torch's own default for `disable`, from the environment."""
    import subprocess
    import sys

    from fxcourse.compile_depth import words_under_force_eager

    def measured_in_a_child(batches):
        probe = "import torch._dynamo.config as c; print(c.disable)"
        child = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        return [child.stdout.strip()] * len(batches)

    assert words_under_force_eager(measured_in_a_child, [3, 5]) == ["True", "True"]
    assert os.environ.get("TORCH_COMPILE_DISABLE") is None
