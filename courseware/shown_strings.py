"""Which string literals of a chapter's code a learner reads, found by following them to where
they are shown (the extractor of courseware.i18n asks this module).

A literal is shown when it is an argument that prints or draws words (print, a chart's labels, a
course helper's title, a checkpoint's hint or goal, a case's note), the message of a `raise` or
of a `torch._check`, or one branch of such an argument (`users or "imports nothing"`). It is also
shown when it reaches a shown name: assigned to a name that a shown expression reads
(`why = "..."` then `check(ok, why)`), or named by the target of a `for` loop that shows it
(`for label, run in [("run vs generated code", ...)]: print(label, ...)`, a dict's keys through
`.items()`), or picked for it from a list of options by a case builder (`kind = make.each(KINDS)`
then `make.note(f"{kind}")`: every option of KINDS, however it was built). Literals reached
through a name must read as prose (two words apart), so that a mode string such as
"reduce-overhead" stays code.
"""

from __future__ import annotations

import ast
import re

PRINTING_CALLS = {"print"}
PLOT_LABELS = {"set_title", "set_xlabel", "set_ylabel", "suptitle", "title", "xlabel", "ylabel"}
LABEL_KEYWORDS = {"label", "title", "xlabel", "ylabel"}
LABEL_LIST_KEYWORDS = {"headers"}  # tabulate(rows, headers=["node", "shape (or type)"])
# Course helpers and the positions of the words they draw: show_graph(gm, title),
# horizontal_bars(values, axis label, title), show_ir_links(gm, title).
HELPER_TITLES = {"show_graph": (1,), "show_ir_links": (1,), "horizontal_bars": (1, 2)}
CHECK_CALLS = {"check": 1, "checkpoint": 1}
CHECK_METHODS = {"close": 2}  # check.close(mine, wanted, hint)
MAKER_METHODS = {"note": 0}  # make.note(text): what a Not-yet says of a fresh case
PICKERS = {"each", "choice", "sample"}  # make.each(options): a case's kind, shown by its note
PROSE = re.compile(r"[A-Za-z]{2,}[ ,:;]+[A-Za-z(]")


def call_name(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def hint_position(func: ast.expr) -> int | None:
    """Where a checkpoint call takes its hint: check(cond, hint), checkpoint(id, goal),
    check.close(mine, wanted, hint), and a case builder's make.note(text)."""
    if isinstance(func, ast.Name):
        return CHECK_CALLS.get(func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return {"check": CHECK_METHODS, "make": MAKER_METHODS}.get(func.value.id, {}).get(func.attr)
    return None


def shown_arguments(node: ast.AST) -> tuple[str, list[ast.expr]]:
    """What a statement or call shows as words, and how: "hint", "printed" or "other"."""
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
        return "other", list(node.exc.args)
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "goal" for t in node.targets
    ):
        return "hint", [node.value]
    if not isinstance(node, ast.Call):
        return "other", []
    name = call_name(node.func)
    if (position := hint_position(node.func)) is not None:
        return "hint", node.args[position : position + 1]
    labels = [k.value for k in node.keywords if k.arg in LABEL_KEYWORDS]
    labels += [
        item
        for k in node.keywords
        if k.arg in LABEL_LIST_KEYWORDS and isinstance(k.value, ast.List | ast.Tuple)
        for item in k.value.elts
    ]
    if name in PRINTING_CALLS or name in PLOT_LABELS:
        return "printed", list(node.args) + labels
    if name in HELPER_TITLES:  # a title that is one identifier ("TinyNet") is a name
        shown = [node.args[i] for i in HELPER_TITLES[name] if i < len(node.args)]
        return "other", [value for value in shown if prose(value) or not branches(value)]
    if name and name.startswith("_check"):  # torch._check(cond, lambda: "message")
        return "other", [arg.body for arg in node.args[1:] if isinstance(arg, ast.Lambda)]
    return "printed", labels


def branches(value: ast.expr) -> list[ast.expr]:
    """The literals an expression evaluates to, through `or`, `if ... else`, f-strings and `+`
    (`why + "is the first member's spec real?"`: both parts are read)."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return branches(value.left) + branches(value.right)
    if isinstance(value, ast.BoolOp):
        return [leaf for part in value.values for leaf in branches(part)]
    if isinstance(value, ast.IfExp):
        return branches(value.body) + branches(value.orelse)
    if isinstance(value, ast.Constant | ast.JoinedStr):
        return [value]
    return []


def options(value: ast.expr) -> list[ast.expr]:
    """The literals a value is, or holds as a list of options (`KINDS = ["a chain", ...]`, or a
    dict's keys: `make.each(list(DEVICES))`)."""
    if isinstance(value, ast.List | ast.Tuple):
        return [leaf for item in value.elts for leaf in branches(item)]
    if isinstance(value, ast.Dict):
        return [leaf for key in value.keys if key is not None for leaf in branches(key)]
    return branches(value) + [leaf for option in picked_from(value) for leaf in options(option)]


def names_read(values: list[ast.expr]) -> set[str]:
    return {n.id for value in values for n in ast.walk(value) if isinstance(n, ast.Name)}


def picked_from(value: ast.expr) -> list[ast.expr]:
    """The options a case builder picks a shown value from: `make.each(KINDS)`, `make.choice(...)`,
    `make.rng.sample(...)` (a case's name, which its note shows)."""
    if isinstance(value, ast.Call) and call_name(value.func) in PICKERS:
        return list(value.args[:1])
    return []


def assignments(tree: ast.AST) -> list[tuple[str, ast.expr, bool]]:
    """(name, value, added) of each `name = value`, `a, b = x, y` pair and `name += value`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            found.append((node.target.id, node.value, True))
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            pairs = zip(target.elts, value.elts, strict=False)
        else:
            pairs = [(target, value)]
        found += [(t.id, v, False) for t, v in pairs if isinstance(t, ast.Name)]
    return found


def reached_literals(tree: ast.AST, shown_names: set[str]) -> list[ast.expr]:
    """Literals that flow into a shown name: assigned (or added) to it, picked for it from a
    list of options (which is then shown too), or iterated into it by a loop."""
    pairs, shown_names = assignments(tree), set(shown_names)
    while True:
        picked = {
            n for name, v, _ in pairs if name in shown_names for n in names_read(picked_from(v))
        }
        if picked <= shown_names:
            break
        shown_names |= picked
    assigned = {name: value for name, value, added in pairs if not added}
    found = [leaf for name, value, _ in pairs if name in shown_names for leaf in options(value)]
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.comprehension):
            found += loop_literals(node.target, node.iter, shown_names, assigned)
    return [value for value in found if prose(value)]


def loop_literals(target, iterable, shown_names: set[str], assigned: dict) -> list[ast.expr]:
    """`for a, b in [("x y", ...)]`, `for k, v in {"x y": ...}.items()`, `for k in {...}`."""
    positions = target.elts if isinstance(target, ast.Tuple) else [target]
    wanted = [i for i, t in enumerate(positions) if isinstance(t, ast.Name) and t.id in shown_names]
    if not wanted:
        return []
    items = False
    if isinstance(iterable, ast.Call) and call_name(iterable.func) == "items":
        iterable, items = iterable.func.value, True
    if isinstance(iterable, ast.Name):
        iterable = assigned.get(iterable.id)
    if isinstance(iterable, ast.Dict):
        pairs = [
            (k, v) for k, v in zip(iterable.keys, iterable.values, strict=True) if k is not None
        ]
        rows = [ast.Tuple(elts=list(pair)) for pair in pairs] if items else [k for k, _ in pairs]
    elif isinstance(iterable, ast.List | ast.Tuple | ast.Set):
        rows = iterable.elts
    else:
        return []
    found = []
    for row in rows:
        cells = row.elts if isinstance(row, ast.Tuple) and len(positions) > 1 else [row]
        found += [leaf for i in wanted if i < len(cells) for leaf in branches(cells[i])]
    return found


def is_words(value: ast.expr) -> bool:
    """A str literal whose own text (placeholders left out) has a word in it."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        text = value.value
    elif isinstance(value, ast.JoinedStr):
        text = "".join(v.value for v in value.values if isinstance(v, ast.Constant))
    else:
        return False
    return bool(re.search(r"(?<![\w.])[A-Za-z]{2,}(?![\w.(])", text))


def prose(value: ast.expr) -> bool:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return bool(PROSE.search(value.value))
    if isinstance(value, ast.JoinedStr):
        text = " ".join(v.value for v in value.values if isinstance(v, ast.Constant))
        return bool(PROSE.search(text))
    return False


def shown_by_kind(tree: ast.AST) -> dict[str, list[ast.expr]]:
    shown = {"hint": [], "printed": [], "other": []}
    for node in ast.walk(tree):
        kind, values = shown_arguments(node)
        shown[kind] += values
    return shown


def shown_names(tree: ast.AST) -> set[str]:
    """The names whose values `tree` shows (for a notebook: a label set in one cell, shown in
    another)."""
    return names_read([value for values in shown_by_kind(tree).values() for value in values])


def shown_literals(tree: ast.AST, names_elsewhere: frozenset[str] = frozenset()) -> list[ast.expr]:
    """Every literal of `tree` a learner reads (see the module's docstring): hints, then what is
    printed or drawn, then messages raised and titles, then what reaches a shown name."""
    shown = shown_by_kind(tree)
    found = [
        leaf
        for kind in ("hint", "printed", "other")
        for value in shown[kind]
        for leaf in branches(value)
        if kind == "hint" or is_words(leaf)
    ]
    names = names_read([v for values in shown.values() for v in values]) | names_elsewhere
    found += reached_literals(tree, names)
    return list(dict.fromkeys(found))
