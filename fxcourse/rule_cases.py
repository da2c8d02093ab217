"""Try it 9.3's case builder: rule sets written as Python source from the maker's generator,
and the edits that must change the key a learner's `rules_key` computes for them.

    rule_sets(make) -> RuleCase; keys_here(rules_key, rules)        # the checkpoint's cases
    keys_in_fresh_python(rules_key, rules, salt)                     # as after a restart
    edits(rules)                                                     # each edit, in words
"""

from __future__ import annotations

import ast
import json
import linecache
import os
import random
import re
import subprocess
import symtable
import sys
from dataclasses import dataclass

from fxcourse.compiler_cases import defined
from fxcourse.messages import _

# ----------------------------------------------------------------------------- try it 9.3

BODIES = ("x * {c}", "x + {c}", "torch.sin(x) * {c}", "torch.exp(x) - {c}", "x / {c}")
BODIES += ("torch.tanh(x) + {c}", "torch.relu(x) * {c}", "(x - {c}) * x")
# a body whose function holds a code object of its own (a generator expression's): a key made
# of repr(co_consts) prints that object's address, which differs in the next process
NESTED = "sum(torch.cos(x * k) for k in (1, {c}))"
SWAPS = {"*": "/", "/": "*", "+": "-", "-": "+", "sin": "cos", "exp": "expm1"}
SWAPS |= {"tanh": "sigmoid", "relu": "selu"}


@dataclass
class RuleCase:
    """A rule set as source, `base`, and edits of it that must get another key (kind -> source)."""

    base: str
    edited: dict[str, str]


def rule_text(rules: list[tuple[str, str, str, str]], pairs: list | None = None) -> str:
    """Source that defines each (search name, body, replace name, body) and RULES, the pairs
    of names `pairs` (by default each search with its own replacement)."""
    lines = []
    for search, search_body, replace, replace_body in rules:
        lines += [f"def {search}(x):", f"    {_statements(search_body)}", ""]
        lines += [f"def {replace}(x):", f"    {_statements(replace_body)}", ""]
    pairs = pairs or [(rule[0], rule[2]) for rule in rules]
    listed = ", ".join(f"({search}, {replace})" for search, replace in pairs)
    return "\n".join(lines + [f"RULES = [{listed}]", ""])


def _statements(body: str) -> str:  # a body of two lines ("y = ...", then "return y") as it is
    return body if body.startswith("y = ") else f"return {body}"


def exchanged_replacements(rules: list) -> str:
    """The same functions, the first two searches paired with each other's replacement: every
    body as before, other rules (a key made of the bodies alone, sorted, cannot tell)."""
    pairs = [(rule[0], rule[2]) for rule in rules]
    (first, first_replace), (second, second_replace) = pairs[:2]
    pairs[:2] = [(first, second_replace), (second, first_replace)]
    return rule_text(rules, pairs)


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
    head, number, tail = re.match(r"(.*?)(\d+(?:\.\d+)?)(\D*)$", body, re.DOTALL).groups()
    return f"{head}{float(number) + 1.25}{tail}"


def fresh_body(rng: random.Random, used: set) -> str:
    """A body unlike every one in `used` (then added to it): exchanging two rules' replacements,
    or removing a rule, must change what the rules compute, not only how they are listed."""
    while (body := rng.choice(BODIES).format(c=rng.choice((2, 3, 0.5, 1.5)))) in used:
        pass
    used.add(body)
    return body


def draw_rules(make) -> RuleCase:
    """A rule set of one to three rules, and one edit of each kind (a rule removed, and two
    rules' replacements exchanged, when it has more than one)."""
    rng, rules, used = make.rng, [], set()
    nested = make.each((True, False))  # every run: a rule set with a nested code object
    lines = make.each(("one line", "two lines"))  # every run: bodies whose edit is not in the
    # last line (redN5: a key of each function's last line)
    for number in range(make.each((1, 2, 3))):  # every run: sets of two and three rules
        bodies = [fresh_body(rng, used) for _side in "sr"]
        if nested and number == 0:
            bodies[1] = NESTED.format(c=rng.choice((2, 3, 0.5, 1.5)))
        if lines == "two lines":
            bodies = [f"y = {body}\n    return y" for body in bodies]
        names = (f"find_{number}", f"make_{number}")
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
        edited["pairs exchanged"] = exchanged_replacements(rules)
    return RuleCase(rule_text(rules), edited)


def first_change(before: str, after: str) -> str:
    """The first line an edit changed, as `old` -> `new` (or +/- a line added or removed)."""
    import difflib

    changed = [
        line
        for line in difflib.ndiff(before.splitlines(), after.splitlines())
        if line[:1] in "+-" and line[2:].strip()
    ]
    bodies = [line for line in changed if not line[2:].startswith("RULES")]
    changed = bodies or changed  # RULES itself when only the pairs changed
    removed = [line[2:].strip() for line in changed if line.startswith("-")]
    added = [line[2:].strip() for line in changed if line.startswith("+")]
    if removed and added:
        return f"`{removed[0]}` -> `{added[0]}`"
    return f"+ `{added[0]}`" if added else f"- `{removed[0]}`"


def rule_sets(make) -> RuleCase:
    """9.3's case builder: drawn rules and their edits, noted by the rules' names."""
    rules = draw_rules(make)
    make.note(rules.base.splitlines()[-1])
    return rules


def edits(case: RuleCase) -> list[tuple[str, str]]:
    """(kind, the changed line as first_change words it) for each edit of the case's rules."""
    return [(edit, first_change(case.base, text)) for edit, text in case.edited.items()]


def keys_here(rules_key, case: RuleCase) -> dict:
    """rules_key in this process: of the rules, of the same rules defined again (new code objects
    from another file name, the same process), and of each edit. Every set stays alive until all
    keys are made, so no code object can reuse the address of one freed before it."""
    sets = {"rules": (case.base, "<drawn rules>")}
    sets["again"] = (case.base, "<drawn rules, defined again>")
    sets |= {edit: (text, f"<drawn rules, {edit}>") for edit, text in case.edited.items()}
    defined_sets = {label: defined(*source)["RULES"] for label, source in sets.items()}
    return {label: rules_key(rules) for label, rules in defined_sets.items()}


def learner_cell(function) -> str:
    """The imports, definitions and other statements of the cell that defined `function` (what a
    fresh Python gets when the learner reruns that cell), without its bare expressions (a print)
    and without a statement that, as it runs, reads a name the cell has not bound before it
    (another cell's value). A lambda's or a function's body reads its names when called."""
    import builtins
    import inspect

    code = code_behind(function)
    source = "".join(linecache.getlines(code.co_filename)) or inspect.getsource(code)
    bound = set(dir(builtins))
    body = []
    for statement in ast.parse(source).body:
        if isinstance(statement, ast.Expr):
            continue
        table = symtable.symtable(ast.unparse(statement), "<cell>", "exec")
        defines = isinstance(
            statement, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef
        )
        if not defines and names_read_now(table) - bound:
            continue
        body.append(statement)
        bound |= {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    return ast.unparse(ast.Module(body=body, type_ignores=[]))


def code_behind(rules_key):
    """The code object of the Python function behind `rules_key`: itself, a functools.partial's
    function, a bound method's, or a callable object's class's __call__."""
    behind = rules_key
    for _step in range(4):
        if hasattr(behind, "__code__"):
            return behind.__code__
        unwrapped = getattr(behind, "func", None) or getattr(behind, "__func__", None)
        behind = unwrapped or type(behind).__call__  # a callable object: its class's __call__
    told = _("no Python function behind {kind}: write one with def")
    raise TypeError(told.format(kind=type(rules_key).__name__))


COMPREHENSIONS = ("listcomp", "setcomp", "dictcomp", "genexpr")


def names_read_now(table: symtable.SymbolTable) -> set[str]:
    """The global names a statement's code reads as it runs: at its top level and in its
    comprehensions, not in the bodies of the functions and lambdas it makes."""
    top = table.get_type() == "module"
    read = {
        s.get_name() for s in table.get_symbols() if s.is_referenced() and (top or s.is_global())
    }
    for child in table.get_children():
        if child.get_name() in COMPREHENSIONS:
            read |= names_read_now(child)
    return read


CHILD = """
import contextlib, json, linecache, sys

def defined(source, filename):
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "__main__"}
    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the keys alone
        exec(compile(source, filename, "exec"), namespace)
    return namespace

spec = json.load(sys.stdin)
cell = defined(spec["cell"], spec["cell_file"])
rules_key = cell.get("rules_key") or cell[spec["name"]]
keys = {}
for label, (source, filename) in spec["rule_sets"].items():
    rules = defined(source, filename)["RULES"]
    with contextlib.redirect_stdout(sys.stderr):
        key = rules_key(rules)
    keys[label] = key if isinstance(key, str) else repr(type(key))
print(json.dumps(keys))
"""


def keys_in_fresh_python(rules_key, case: RuleCase, salt: int) -> dict | str:
    """keys_here's keys, from rules_key's cell run in a new Python (PYTHONHASHSEED=salt, other
    file names: what a restart changes); or the new Python's error, a string."""
    folder = f"/tmp/ipykernel_{salt}"
    sets = {"rules": case.base, "again": case.base, **case.edited}
    try:
        cell = learner_cell(rules_key)
    except TypeError as error:  # a builtin: no cell to run again
        return str(error)
    spec = {
        "cell": cell,
        "cell_file": f"{folder}/cell.py",
        "name": getattr(rules_key, "__name__", "rules_key"),  # a def in another cell
        "rule_sets": {
            label: (source, f"{folder}/{index}.py")
            for index, (label, source) in enumerate(sets.items())
        },
    }
    environment = {**os.environ, "PYTHONHASHSEED": str(salt)}
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
