"""Chapter 9's fresh cases (fxcourse.compiler_cases): the reference and honest alternatives pass on
every seed tried; rules right only for the chapter's example, and the written-down mistakes, fail.

FXCOURSE_CASE_SEEDS=20 runs twenty seeds per try-it (the default, 2, keeps `make test` short).
"""

from __future__ import annotations

import functools
import os
import random

import pytest
import torch
import torch.fx as fx

from fxcourse import compiler_cases as cases

SEEDS = [
    random.Random(n).randrange(1, 100_000)
    for n in range(int(os.environ.get("FXCOURSE_CASE_SEEDS", "2")))
]


# ----------------------------------------------------------------------------- try it 9.1


def kept(forward: fx.GraphModule, backward: fx.GraphModule) -> list[fx.Node]:
    inputs = {node.name for node in forward.graph.find_nodes(op="placeholder")}
    return [
        node
        for node in backward.graph.find_nodes(op="placeholder")
        if node.name not in inputs and not node.name.startswith("tangents")
    ]


def from_forward_outputs(forward, backward) -> int:  # honest: the forward's extra outputs
    (output,) = forward.graph.find_nodes(op="output")
    inputs = set(forward.graph.find_nodes(op="placeholder"))
    values = [node.meta["val"] for node in output.args[0][1:] if node not in inputs]
    return sum(value.numel() * value.dtype.itemsize for value in values)


def by_names(forward, backward) -> int:  # honest: AOTAutograd's naming of inputs and tangents
    placeholders = backward.graph.find_nodes(op="placeholder")
    values = [n.meta["val"] for n in placeholders if not n.name.startswith(("tangents", "primals"))]
    return sum(value.numel() * value.element_size() for value in values)


def elements(forward, backward) -> int:
    return sum(node.meta["val"].numel() for node in kept(forward, backward))


def four_bytes_each(forward, backward) -> int:
    return sum(4 * node.meta["val"].numel() for node in kept(forward, backward))


def inputs_too(forward, backward) -> int:
    (output,) = forward.graph.find_nodes(op="output")
    return sum(n.meta["val"].numel() * n.meta["val"].element_size() for n in output.args[0][1:])


def chapter_example(forward, backward) -> int:  # the chapter's softmax: 64 bytes, or 512
    names = {node.name for node in kept(forward, backward)}
    return 64 if "amax" in names else 512


@functools.cache
def traced_losses(seed: int) -> list[cases.LossCase]:
    return list(cases.loss_cases(seed))


def refused_9_1(answer, seed: int) -> bool:
    for case in traced_losses(seed):
        for forward, backward in case.splits.values():
            if answer(forward, backward) != cases.saved_bytes_reference(forward, backward):
                return True
    return False


@pytest.mark.parametrize("seed", SEEDS)
def test_9_1_accepts_the_reference_and_honest_alternatives(seed):
    for answer in (cases.saved_bytes_reference, from_forward_outputs, by_names):
        assert not refused_9_1(answer, seed), (seed, answer.__name__)


@pytest.mark.parametrize("seed", SEEDS)
def test_9_1_refuses_wrong_counts_and_the_chapters_example(seed):
    for answer in (elements, four_bytes_each, inputs_too, chapter_example):
        assert refused_9_1(answer, seed), (seed, answer.__name__)


def test_9_1_cases_are_the_same_for_a_seed_and_vary_between_seeds():
    first = [str(case) for case in cases.loss_cases(11, count=2)]
    assert first == [str(case) for case in cases.loss_cases(11, count=2)]
    assert first != [str(case) for case in cases.loss_cases(12, count=2)]


# ----------------------------------------------------------------------------- try it 9.2


@functools.cache
def lse_rule_pass(search, replace):
    from torch._inductor.pattern_matcher import PatternMatcherPass, fwd_only, register_replacement

    rules = PatternMatcherPass()
    register_replacement(search, replace, [torch.empty(4), torch.empty(4)], fwd_only, rules)
    return rules


def refused_9_2(search, replace, seed: int) -> bool:
    yours = lse_rule_pass(search, replace)
    reference = lse_rule_pass(cases.lse_search_reference, cases.lse_reference)  # made once
    for case in cases.lse_cases(seed):
        mine, theirs = cases.lse_graph(case), cases.lse_graph(case)
        if yours.apply(mine.graph) != reference.apply(theirs.graph):
            return True
        mine.recompile(), theirs.recompile()
        for got, right in zip(mine(*case.inputs), theirs(*case.inputs), strict=True):
            close = 1e-5 if right.dtype == torch.float32 else 1e-10
            if got.dtype != right.dtype or not torch.allclose(
                got, right, rtol=close, atol=close, equal_nan=True
            ):
                return True
    return False


def naive(a, b):
    return torch.log(torch.exp(a) + torch.exp(b))


def swapped(a, b):
    return torch.log(torch.exp(b) + torch.exp(a))


HONEST_9_2 = {
    "max and log1p": (
        naive,
        lambda a, b: torch.maximum(a, b) + torch.log1p(torch.exp(-(a - b).abs())),
    ),
    "logsumexp of a stack": (naive, lambda a, b: torch.logsumexp(torch.stack([a, b]), dim=0)),
    "the search written b first": (swapped, cases.lse_reference),
}
WRONG_9_2 = {
    "the same expression": (naive, naive),
    "b + log1p(exp(a - b))": (naive, lambda a, b: b + torch.log1p(torch.exp(a - b))),
    "the larger input": (naive, lambda a, b: torch.maximum(a, b)),
    "the library call as search": (cases.lse_reference, cases.lse_reference),
    "one number for all": (
        naive,
        lambda a, b: torch.logsumexp(torch.cat([a.flatten(), b.flatten()]), 0).expand_as(a),
    ),
    "the chapter's printed value": (naive, lambda a, b: torch.full_like(a, 1000.6932)),
    "float32 whatever the input": (naive, lambda a, b: torch.logaddexp(a.float(), b.float())),
}


@pytest.mark.parametrize("seed", SEEDS)
def test_9_2_accepts_the_reference_and_honest_alternatives(seed):
    assert not refused_9_2(cases.lse_search_reference, cases.lse_reference, seed)
    for name, (search, replace) in HONEST_9_2.items():
        assert not refused_9_2(search, replace, seed), (seed, name)


@pytest.mark.parametrize("seed", SEEDS)
def test_9_2_refuses_wrong_rules(seed):
    for name, (search, replace) in WRONG_9_2.items():
        assert refused_9_2(search, replace, seed), (seed, name)


# ----------------------------------------------------------------------------- try it 9.3

HONEST_9_3 = {
    "source text": """
import hashlib
import inspect

def rules_key(rules):
    text = "\\n".join(inspect.getsource(fn) for rule in rules for fn in rule)
    return hashlib.sha256(text.encode()).hexdigest()
""",
    "bytecode, constants and names": """
import hashlib

def rules_key(rules):
    parts = []
    for rule in rules:
        for fn in rule:
            code = fn.__code__
            parts.append(code.co_code.hex() + repr(code.co_consts) + repr(code.co_names))
    return hashlib.sha256("|".join(parts).encode()).hexdigest()
""",
}
EACH = "for rule in rules for f in rule"
WRONG_9_3 = {
    "a fixed string": "def rules_key(rules):\n    return 'v1'\n",
    "names": f"def rules_key(rules):\n    return ','.join(f.__name__ {EACH})\n",
    "id": f"def rules_key(rules):\n    return str([id(f.__code__) {EACH}])\n",
    "hash": f"def rules_key(rules):\n    return str(hash(tuple(f.__code__ {EACH})))\n",
    "repr": "def rules_key(rules):\n    return repr(rules)\n",
    "bytecode only": f"def rules_key(rules):\n    return str([f.__code__.co_code {EACH}])\n",
    "searches only": """
import inspect

def rules_key(rules):
    return ''.join(inspect.getsource(search) for search, _ in rules)
""",
    "marshal": """
import marshal

def rules_key(rules):
    return b''.join(marshal.dumps(f.__code__) for r in rules for f in r).hex()
""",
}


def refused_9_3(cell: str, seed: int) -> bool:
    """The checkpoint's test: the same key here, again, and in two new processes; another key
    after every edit."""
    rules_key = cases.defined(cell, f"/tmp/ipykernel_test/{seed}.py")["rules_key"]
    made = cases.rule_cases(seed)
    sets = {str(index): case.base for index, case in enumerate(made)}
    edits = {
        f"{i}/{edit}": text for i, case in enumerate(made) for edit, text in case.edited.items()
    }
    here = {
        label: rules_key(cases.defined(text, f"<{label}>")["RULES"]) for label, text in sets.items()
    }
    again = {
        label: rules_key(cases.defined(text, f"<{label}, again>")["RULES"])
        for label, text in sets.items()
    }
    if here != again:
        return True
    for salt in (seed, seed + 1):
        fresh = cases.keys_in_fresh_python(rules_key, sets | edits, salt)
        if not isinstance(fresh, dict) or any(fresh[label] != key for label, key in here.items()):
            return True
    return any(fresh[label] == fresh[label.split("/")[0]] for label in edits)


@pytest.mark.parametrize("seed", SEEDS)
def test_9_3_accepts_keys_made_from_what_a_function_computes(seed):
    for name, cell in HONEST_9_3.items():
        assert not refused_9_3(cell, seed), (seed, name)


@pytest.mark.parametrize("seed", SEEDS)
def test_9_3_refuses_keys_that_a_restart_or_an_edit_defeats(seed):
    for name, cell in WRONG_9_3.items():
        assert refused_9_3(cell, seed), (seed, name)


def test_9_3_every_edit_changes_the_source_of_one_function():
    for case in cases.rule_cases(5):
        for edit, text in case.edited.items():
            assert text != case.base, edit


def test_a_learners_cell_keeps_its_definitions_and_drops_its_other_statements():
    cell = "import hashlib\nLIMIT = 3\n\ndef rules_key(rules):\n    return 'k'\n\n"
    cell += "print(rules_key([]))\n"
    rules_key = cases.defined(cell, "/tmp/ipykernel_x/1.py")["rules_key"]
    kept_source = cases.learner_cell(rules_key)
    assert "import hashlib" in kept_source and "LIMIT = 3" in kept_source
    assert "def rules_key" in kept_source and "print(" not in kept_source
