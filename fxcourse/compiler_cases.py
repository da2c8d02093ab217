"""Chapter 9's checkpoints: cases made fresh from a seed at every run, and their references.

    seed = fresh_seed()
    for case in loss_cases(seed): ...     # try it 9.1: small losses, traced and partitioned twice
    for case in lse_cases(seed): ...      # try it 9.2: graphs holding log(exp(a) + exp(b)) or not
    for case in rule_cases(seed): ...     # try it 9.3: rule sets and one-edit variants of them

Every case is Python source written from the seed (operators, names, sizes, dtypes), so a message
can show it and the same seed makes it again. `keys_in_fresh_python` runs a learner's
`rules_key` in new Python processes, as a restart does. This module checks nothing and prints
nothing: the checkpoints in the chapter compare the learner's answer with these references.
"""

from __future__ import annotations

import ast
import copy
import json
import linecache
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
import torch.fx as fx

DTYPES = (torch.float32, torch.float64, torch.bfloat16)


def fresh_seed() -> int:
    return random.SystemRandom().randrange(1, 100_000)


def defined(source: str, filename: str) -> dict:
    """Run `source` as a notebook cell runs: its lines readable by `inspect` under `filename`."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"torch": torch, "__name__": "__main__"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


# ----------------------------------------------------------------------------- try it 9.1

UNARY = ("torch.sin({})", "torch.exp({})", "torch.tanh({})", "torch.sigmoid({})", "torch.relu({})")
ROWWISE = (
    "torch.softmax({}, dim=-1)",
    "torch.log_softmax({}, dim=-1)",
    "({} - {}.amax(-1, keepdim=True))",
    "({} / {}.sum(-1, keepdim=True))",
)
MIXING = ("{} * x", "{} + w", "{} * torch.cos(w)")
LOSSES = ("({}).sum()", "({} * x).sum()", "({}).pow(2).mean()")


@dataclass
class LossCase:
    """A loss of x (N, M) and w (M,), its partitions: {partitioner's name: (forward, backward)}."""

    seed: int
    expression: str
    dtype: torch.dtype
    shape: tuple[int, int]
    x_needs_grad: bool
    splits: dict[str, tuple[fx.GraphModule, fx.GraphModule]] = field(default_factory=dict)

    def __str__(self) -> str:
        kind = str(self.dtype).removeprefix("torch.")
        grads = "x, w" if self.x_needs_grad else "w"
        return f"loss(x, w) = {self.expression}; x: {kind}{list(self.shape)}; grad: {grads}"


def loss_expression(rng: random.Random) -> str:
    expression = rng.choice(("x * w", "x + w", "torch.sin(x) * w", "x - torch.tanh(w)"))
    for _ in range(rng.randint(2, 4)):
        pick = rng.random()
        template = rng.choice(UNARY if pick < 0.5 else ROWWISE if pick < 0.8 else MIXING)
        expression = template.replace("{}", f"({expression})" if "{}." in template else expression)
    return rng.choice(LOSSES).format(expression)


def partitioned(case: LossCase) -> None:
    """Trace the case's loss with AOTAutograd (Inductor's decompositions) and split its joint
    graph with both partitioners, as Inductor's `partition_fn` does with the second one."""
    from functorch.compile import (
        aot_function,
        default_partition,
        make_boxed_func,
        min_cut_rematerialization_partition,
    )
    from torch._inductor.decomposition import select_decomp_table

    joint = {}

    def keep_joint(graph, inputs, **options):
        joint.update(graph=copy.deepcopy(graph), inputs=inputs, options=options)
        return default_partition(graph, inputs, **options)

    def run_as_is(gm, _):
        return make_boxed_func(gm.forward)

    loss = defined(f"def loss(x, w):\n    return {case.expression}\n", f"<loss {case.seed}>")
    rows, columns = case.shape
    x = torch.randn(rows, columns, dtype=case.dtype, requires_grad=case.x_needs_grad)
    w = torch.randn(columns, dtype=case.dtype, requires_grad=True)
    traced = aot_function(
        loss["loss"], run_as_is, run_as_is, keep_joint, decompositions=select_decomp_table()
    )
    traced(x, w).backward()
    for partition in (default_partition, min_cut_rematerialization_partition):
        graph = copy.deepcopy(joint["graph"])
        case.splits[partition.__name__] = partition(graph, joint["inputs"], **joint["options"])


def loss_cases(seed: int, count: int = 5) -> Iterator[LossCase]:
    """Made one at a time, so that a checkpoint stops tracing at its first failed case."""
    rng = random.Random(seed)
    for index in range(count):
        shape = (rng.randint(2, 9), rng.randint(3, 17))
        dtype = DTYPES[index % len(DTYPES)]
        case = LossCase(seed, loss_expression(rng), dtype, shape, rng.random() < 0.4)
        partitioned(case)
        yield case


def saved_bytes_reference(forward: fx.GraphModule, backward: fx.GraphModule) -> int:
    inputs = {node.name for node in forward.graph.find_nodes(op="placeholder")}
    total = 0
    for node in backward.graph.find_nodes(op="placeholder"):
        if node.name in inputs or node.name.startswith("tangents"):
            continue
        value = node.meta["val"]
        total += value.numel() * value.element_size()
    return total


# ----------------------------------------------------------------------------- try it 9.2

OPERANDS = ("u", "v", "2 * u", "u - v", "torch.sin(v)", "0.5 * v", "-u", "v + 1")
FOUND = "torch.log(torch.exp({a}) + torch.exp({b}))"
LEFT_ALONE = (
    "torch.log(torch.exp({a}) + {b})",
    "torch.log(torch.exp({a}) - torch.exp({b}))",
    "torch.exp({a}) + torch.exp({b})",
    "torch.log1p(torch.exp({a}))",
)


@dataclass
class LseCase:
    """A function of u and v returning terms, `rewrites` of which hold the expression."""

    seed: int
    source: str
    rewrites: int
    inputs: tuple[torch.Tensor, torch.Tensor]

    def __str__(self) -> str:
        kind = str(self.inputs[0].dtype).removeprefix("torch.")
        return f"{self.source.strip()}  # u, v: {kind}{list(self.inputs[0].shape)}"


def lse_source(rng: random.Random) -> tuple[str, int]:
    terms, lines, rewrites = [], [], 0
    for index in range(rng.randint(3, 5)):
        a, b = rng.sample(OPERANDS, 2)
        pick = rng.random()
        if pick < 0.5:
            terms.append(FOUND.format(a=a, b=b))
            rewrites += 1
        elif pick < 0.65:  # exp(a) is read again outside the expression: nothing to rewrite
            lines.append(f"    e{index} = torch.exp({a})")
            terms.append(f"torch.log(e{index} + torch.exp({b})) * e{index}")
        else:
            terms.append(rng.choice(LEFT_ALONE).format(a=a, b=b))
    if not rewrites:
        terms.append(FOUND.format(a="v", b="u"))
        rewrites = 1
    body = "\n".join(lines + [f"    return ({', '.join(terms)},)"])
    return f"def scores(u, v):\n{body}\n", rewrites


def lse_inputs(
    rng: random.Random, dtype: torch.dtype, matrix: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Ordinary values, equal pairs, and values far past exp's range in both directions."""
    big = 1000.0 if dtype == torch.float32 else 4000.0
    u = [0.0, 0.0, big, -3.0, big / 2, rng.uniform(-2, 2)]
    v = [0.0, 0.0, -big, 2.0, big / 2 + 1, rng.uniform(-2, 2)]
    order = list(range(len(u)))
    rng.shuffle(order)
    u, v = [u[i] for i in order], [v[i] for i in order]
    tensors = torch.tensor(u, dtype=dtype), torch.tensor(v, dtype=dtype)
    return tuple(t.reshape(2, 3) for t in tensors) if matrix else tensors


def lse_cases(seed: int, count: int = 5) -> list[LseCase]:
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        source, rewrites = lse_source(rng)
        dtype = (torch.float32, torch.float64)[index % 2]  # every seed: both dtypes, both ranks
        inputs = lse_inputs(rng, dtype, matrix=index // 2 % 2 == 1)
        cases.append(LseCase(seed, source, rewrites, inputs))
    return cases


def lse_graph(case: LseCase) -> fx.GraphModule:
    from torch.fx.experimental.proxy_tensor import make_fx

    scores = defined(case.source, f"<scores {case.seed}>")["scores"]
    return make_fx(scores, tracing_mode="fake")(*case.inputs)


def lse_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.logaddexp(a, b)


def lse_search_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.log(torch.exp(a) + torch.exp(b))


# ----------------------------------------------------------------------------- try it 9.3

BODIES = ("x * {c}", "x + {c}", "torch.sin(x) * {c}", "torch.exp(x) - {c}", "x / {c}")
BODIES += ("torch.tanh(x) + {c}", "torch.relu(x) * {c}", "(x - {c}) * x")
SWAPS = {"*": "/", "/": "*", "+": "-", "-": "+", "sin": "cos", "exp": "expm1"}
SWAPS |= {"tanh": "sigmoid", "relu": "gelu"}


@dataclass
class RuleCase:
    """Rule sets as source: `base`, and variants that must get another key (label -> source)."""

    seed: int
    base: str
    edited: dict[str, str]


def rule_text(rules: list[tuple[str, str, str, str]]) -> str:
    """Source that defines each (search name, body, replace name, body) and RULES."""
    lines, pairs = [], []
    for search, search_body, replace, replace_body in rules:
        lines += [f"def {search}(x):", f"    return {search_body}", ""]
        lines += [f"def {replace}(x):", f"    return {replace_body}", ""]
        pairs.append(f"({search}, {replace})")
    return "\n".join(lines + [f"RULES = [{', '.join(pairs)}]", ""])


def one_swap(body: str, rng: random.Random) -> str:
    """`body` with one operator or function swapped for another (a one-operator edit)."""
    found = [old for old in SWAPS if f" {old} " in body or f".{old}(" in body]
    old = rng.choice(found)
    spaced = f" {old} " if f" {old} " in body else f".{old}("
    return body.replace(spaced, spaced.replace(old, SWAPS[old]), 1)


def edited_rules(rules: list, rng: random.Random, side: int, edit) -> str:
    """The rule set's source after `edit` on one body (side 1: a search, 3: a replacement)."""
    changed = [list(rule) for rule in rules]
    where = rng.randrange(len(rules))
    changed[where][side] = edit(changed[where][side])
    return rule_text(changed)


def other_constant(body: str) -> str:
    """`body` with its last number changed: the same bytecode, other constants."""
    head, number, tail = re.match(r"(.*?)(\d+(?:\.\d+)?)(\D*)$", body).groups()
    return f"{head}{float(number) + 1.25}{tail}"


def rule_cases(seed: int, count: int = 5) -> list[RuleCase]:
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        rules = []
        for number in range(rng.randint(1, 3)):
            bodies = [rng.choice(BODIES).format(c=rng.choice((2, 3, 0.5, 1.5))) for _ in "sr"]
            names = (f"find_{index}{number}", f"make_{index}{number}")
            rules.append((names[0], bodies[0], names[1], bodies[1]))
        swap = lambda body: one_swap(body, rng)  # noqa: E731
        edited = {
            "search operator": edited_rules(rules, rng, 1, swap),
            "replacement operator": edited_rules(rules, rng, 3, swap),
            "constant": edited_rules(rules, rng, rng.choice((1, 3)), other_constant),
            "added rule": rule_text([*rules, ("find_more", "x * 7", "make_more", "x + x * 6")]),
        }
        if len(rules) > 1:
            edited["removed rule"] = rule_text(rules[:-1])
        cases.append(RuleCase(seed, rule_text(rules), edited))
    return cases


def learner_cell(function) -> str:
    """The imports, definitions, constants and lambdas of the cell that defined `function` (what a
    fresh Python gets when the learner reruns that cell), without its other statements."""
    import inspect

    code = function.__code__
    source = "".join(linecache.getlines(code.co_filename)) or inspect.getsource(function)
    kept = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
    tree = ast.parse(source)
    body = []
    for statement in tree.body:
        is_value = isinstance(statement, ast.Assign) and isinstance(
            statement.value, ast.Constant | ast.Lambda
        )
        if isinstance(statement, kept) or is_value:
            body.append(statement)
    return ast.unparse(ast.Module(body=body, type_ignores=[]))


CHILD = """
import json, linecache, sys

def defined(source, filename):
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace

spec = json.load(sys.stdin)
rules_key = defined(spec["cell"], spec["cell_file"])[spec["name"]]
keys = {}
for label, (source, filename) in spec["rule_sets"].items():
    key = rules_key(defined(source, filename)["RULES"])
    keys[label] = key if isinstance(key, str) else repr(type(key))
print(json.dumps(keys))
"""


def keys_in_fresh_python(
    function, rule_sets: dict[str, str], hash_seed: int, name: str = "rules_key"
) -> dict | str:
    """{label: key} from the function called `name` of `function`'s cell, run in a new Python
    (PYTHONHASHSEED=hash_seed), each rule set defined there under a file name of its own; or the
    new Python's error, a string."""
    folder = f"/tmp/ipykernel_{hash_seed}"
    spec = {
        "cell": learner_cell(function),
        "cell_file": f"{folder}/cell.py",
        "name": name,
        "rule_sets": {
            label: (source, f"{folder}/{index}.py")
            for index, (label, source) in enumerate(rule_sets.items())
        },
    }
    environment = {**os.environ, "PYTHONHASHSEED": str(hash_seed)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    if done.returncode:
        return done.stderr.strip().splitlines()[-1]
    return json.loads(done.stdout)
