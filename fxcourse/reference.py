"""What a checkpoint compares with: the reference answer, run beside the learner's, and whether
the learner's own cell is the one the kernel last ran cleanly.

references.json (written by `make chapters` from the chapter sources, shipped in every edition,
also in one without shown answers) holds, per try-it, the answer cell's code and the names its
scaffold defines. A checkpoint runs that code in a copy of the learner's namespace, with its
printing captured, so the reference's definitions never replace the learner's. An answer cell
therefore builds new objects; it never changes one an earlier cell made (authoring rule, see
courseware/authoring.py).

A learner's try-it cell may bind a chapter name again (`tiny_model = ...` beside the answer): the
check cell and the reference answer then read the object the chapter's cells left under it
(`chapter_names`), so that the cases are the chapter's and the reference never agrees with a
learner's model by running on it.

The kernel's memory keeps a name's old value when the cell that defines it raises: a checkpoint
would judge the old value. `CellLog` (fxcourse.cell_log: an IPython post_run_cell callback
registered when this module is imported in a kernel) remembers, per top-level name, whether the
cell that bound it last ran cleanly, and the checkpoint asks it first.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace

from fxcourse.cell_log import (  # noqa: F401 - CellLog: the tests and notes read it here
    CellLog,
    cell_log,
    defined_names,
    global_loads,
    statement_binds,
)
from fxcourse.stamps import unstamped_json

REFERENCES_FILE = Path(__file__).with_name("references.json")


class ReferenceMissing(LookupError):
    """The course ships no reference for a try-it (a bug in the course, not the learner's)."""


def load_references(path: Path = REFERENCES_FILE) -> dict[str, dict]:
    if not path.exists():
        return {}
    return unstamped_json(json.loads(path.read_text(encoding="utf-8")))


def reference_namespace(
    tryit_id: str, learner_globals: dict, rewrite: Callable[[str], str] | None = None
) -> SimpleNamespace:
    """The reference answer's names, defined in a copy of the learner's namespace; with
    `rewrite`, the code run is `rewrite(the answer's code)` (fxcourse.tryit's run_reference_as)."""
    entry = load_references().get(tryit_id)
    if entry is None:
        raise ReferenceMissing(f"the course has no reference answer for try it {tryit_id}")
    namespace = dict(learner_globals) | _modules_rebound(learner_globals)
    source = rewrite(entry["code"]) if rewrite else entry["code"]
    label, defines = f"<reference answer of try it {tryit_id}>", set(entry.get("defines", []))
    with contextlib.redirect_stdout(io.StringIO()), _no_display():
        for statement, needed in _statements(source, defines):
            code = compile(ast.Module([statement], type_ignores=[]), label, "exec")
            try:
                exec(code, namespace)  # noqa: S102 - the course's own answer, in the kernel
            except NameError:
                if needed:  # a chapter name is missing: the cells above were not run
                    raise
            except Exception as error:
                # unneeded: a demonstration line, on a chapter name the learner bound to a
                # value of their own (images = their tensor); it defines nothing needed
                if needed:
                    raise _failed_on(statement, learner_globals, source) from error
    return SimpleNamespace(**namespace)


class ReferenceReadsYourNames(Exception):
    """A defining line of the reference answer raised on names the notebook binds now: one of
    them may hold a value of the learner's (a chapter model rebound), or a cell above never ran
    cleanly. `line`: that line; `names`: the notebook's names it reads."""

    def __init__(self, line: str, names: list[str]):
        super().__init__(line)
        self.line, self.names = line, names


def _failed_on(statement: ast.stmt, names: dict, source: str) -> ReferenceReadsYourNames:
    own = set(defined_names(source))
    read = [
        node.id
        for node in ast.walk(statement)
        if isinstance(node, ast.Name)
        and node.id in names
        and node.id not in own
        and not isinstance(names[node.id], ModuleType)
    ]
    line = ast.unparse(statement).splitlines()[0]
    return ReferenceReadsYourNames(line, list(dict.fromkeys(read)))


def _statements(source: str, defines: set[str]) -> list[tuple[ast.stmt, bool]]:
    """The answer's top-level statements, each with whether the try-it's names need it: it
    binds one of them, or a name that a statement binding one of them reads."""
    statements = ast.parse(source).body
    needed = set(defines)
    for statement in statements:
        if set(statement_binds(statement)) & defines:
            needed |= {node.id for node in ast.walk(statement) if isinstance(node, ast.Name)}
    return [(statement, bool(set(statement_binds(statement)) & needed)) for statement in statements]


def _modules_rebound(names: dict) -> dict:
    """The modules a cell bound under a name that a later cell bound to something else (the
    learner's `copy = w.clone()` or `fusion = fold(...)`): the reference answer reads the
    chapter's modules, so it gets them back (the learner's names stay as they are)."""
    log = cell_log()
    modules = log.modules if log is not None else {}
    return {name: module for name, module in modules.items() if names.get(name) is not module}


@contextlib.contextmanager
def _no_display():
    """Rich displays (pictures, tables) of the reference's demonstration lines go nowhere."""
    try:
        from IPython.utils.capture import capture_output
    except ImportError:
        yield
        return
    with capture_output(stdout=False, stderr=True, display=True):
        yield


def restore_names(names: dict, before: dict, keep: object) -> None:
    """Give each of `names` that a checkpoint's block bound to something else its object from
    `before` back (the block's loop variables took the chapter's x, gm, model, program...): the
    cells the learner runs next read the chapter's. `keep`: the checkpoint itself (`as check`)."""
    names.update({name: before[name] for name in _rebound(names, before, keep)})


def _rebound(names: dict, before: dict, keep: object) -> list[str]:
    """The names of `before` that now hold another object, or none; `keep` (the checkpoint
    bound by `as check`) excepted."""
    return [
        name
        for name, value in before.items()
        if names.get(name, keep) is not value and names.get(name) is not keep
    ]


@contextlib.contextmanager
def names_as_found(names: dict, before: dict, keep: object, fn=None, own: dict | None = None):
    """While the answers run: every name of the learner's that a checkpoint's block has bound to
    something else (its loop variables: shape, pair, kind...) holds the learner's object again,
    and so does each name the check cell bound that the learner's cells had bound (`own`: its
    goal, its `as check`, its imported helpers), so a helper of theirs with such a name is
    theirs; the block's come back after. Names `fn` itself reads (a check cell's lambda) keep the
    block's. `keep`: the checkpoint itself."""
    theirs = getattr(fn, "__globals__", None) is names  # a check cell's lambda, not fxcourse's
    read = global_loads(fn.__code__) if theirs else set()
    learners = {name: before[name] for name in _rebound(names, before, keep)}
    learners |= {name: value for name, value in (own or {}).items() if names.get(name) is not value}
    block = {name: names[name] for name in learners if name in names and name not in read}
    names.update({name: learners[name] for name in block})
    try:
        yield
    finally:
        names.update(block)


class LearnerNames:
    """The learner's notebook names, read as attributes (a missing one is a NameError)."""

    def __init__(self, names: dict):
        self._names = names

    def __getattr__(self, name: str):
        try:
            return self._names[name]
        except KeyError:
            raise NameError(f"name {name!r} is not defined") from None


class ReferenceFailed(Exception):
    """The reference answer raised on a case: a bug in the course, never the learner's."""


def close_enough(mine, wanted, atol: float, rtol: float) -> bool:
    """Whether `mine` has `wanted`'s structure (tensors with its shape and dtype, tuples,
    dicts) and values within the tolerances."""
    import torch

    if isinstance(wanted, torch.Tensor):
        return (
            isinstance(mine, torch.Tensor)
            and mine.shape == wanted.shape
            and mine.dtype == wanted.dtype
            and torch.allclose(mine, wanted, atol=atol, rtol=rtol, equal_nan=True)
        )
    if isinstance(wanted, tuple | list):
        return (
            isinstance(mine, tuple | list)
            and len(mine) == len(wanted)
            and all(close_enough(m, w, atol, rtol) for m, w in zip(mine, wanted, strict=True))
        )
    if isinstance(wanted, dict):
        return (
            isinstance(mine, dict)
            and mine.keys() == wanted.keys()
            and all(close_enough(mine[k], wanted[k], atol, rtol) for k in wanted)
        )
    if isinstance(wanted, float):
        return isinstance(mine, int | float) and abs(mine - wanted) <= atol + rtol * abs(wanted)
    return type(mine) is type(wanted) and mine == wanted


def form_difference(mine, wanted) -> str | None:
    """What check.close says when `mine`, a tensor, differs from the reference's in shape or
    dtype: a difference of form, which the try-it's own hint (a question about values) would send
    the learner looking for elsewhere (the red team's redV: 6.2 asked "which sign decides?")."""
    import torch

    from fxcourse.messages import _

    if not isinstance(mine, torch.Tensor) or not isinstance(wanted, torch.Tensor):
        return None
    if mine.shape != wanted.shape:
        said = _("your result has shape {shape}, not the shape asked for: which step changes it?")
        return said.format(shape=tuple(mine.shape))
    if mine.dtype != wanted.dtype:
        said = _("your result is {dtype}, not the dtype asked for: which step changes it?")
        return said.format(dtype=mine.dtype)
    return None


def chapter_names(tryit_id: str, check_source: str) -> tuple[dict, dict]:
    """The objects the chapter's cells left under the names the learner's try-it cell bound
    again (CellLog.as_cells_before_left): those the check cell reads, for its block (the cases
    are made from the chapter's model, not the learner's), and all, for the reference answer."""
    log = cell_log()
    entry = load_references().get(tryit_id, {})
    if log is None or not entry:
        return {}, {}
    left = log.as_cells_before_left(
        set(entry.get("defines", [])), set(defined_names(entry["code"]))
    )
    try:
        read = {node.id for node in ast.walk(ast.parse(check_source)) if isinstance(node, ast.Name)}
    except SyntaxError:
        read = set()
    read -= set(defined_names(check_source))  # its own imports and goal, bound before the block
    return {name: value for name, value in left.items() if name in read}, left
