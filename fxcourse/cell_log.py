"""What the kernel's cells bound: the names a cell binds at its top level, and IPython's
callbacks that note, for each name, the object a learner's cell left and whether that cell ran
cleanly (fxcourse.reference and fxcourse.tryit read them)."""

from __future__ import annotations

import ast
from types import FunctionType, ModuleType


def defined_names(code: str) -> list[str]:
    """The names a cell binds at its top level (assignments, defs, classes, imports)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found: list[str] = []
    for statement in tree.body:
        for name in statement_binds(statement):
            if name not in found:
                found.append(name)
    return found


def statement_binds(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [statement.name]
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in statement.names]
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        targets = [statement.target]
    elif isinstance(statement, ast.With):  # a check cell's `with checkpoint(...) as check`
        targets = [item.optional_vars for item in statement.items if item.optional_vars]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


class CellLog:
    """IPython's post_run_cell callback: for each top-level name a cell binds, whether that cell
    last ran cleanly, and the error it raised if not; and what each cell other than a
    checkpoint's bound, so that a checkpoint cell can tell when its own helpers replaced names
    the learner's code reads (its `is_linear` in place of the learner's `is_linear`)."""

    def __init__(self, names: dict | None = None):
        self.last: dict[str, str | None] = {}  # name -> None (clean) or the error's text
        self.names = {} if names is None else names  # the notebook's globals
        self.bound: dict[str, object] = {}  # name -> the object a non-checkpoint cell bound
        self.modules: dict[str, ModuleType] = {}  # name -> the last module a cell bound to it
        # name -> (the names its cell bound, the object), oldest first: what cells left it
        self.history: dict[str, list[tuple[frozenset, object]]] = {}
        self._before: dict[str, object] = {}  # what the running cell's names held before it

    def before_cell(self, info) -> None:
        """IPython's pre_run_cell callback: what the names the cell binds hold before it runs."""
        raw = getattr(info, "raw_cell", "") or ""
        self._before = {name: self.names[name] for name in defined_names(raw) if name in self.names}

    def __call__(self, result) -> None:
        raw = getattr(result.info, "raw_cell", "") or ""
        error = result.error_in_exec or result.error_before_exec
        outcome = None if error is None else f"{type(error).__name__}: {error}"
        learners = "with checkpoint(" not in raw  # a checkpoint cell's helpers: not the learner's
        cell_names = frozenset(defined_names(raw))
        for name in cell_names:
            self.last[name] = outcome
            if learners and name in self.names:
                self.bound[name] = self.names[name]
                self._remember(name, cell_names)
            if isinstance(self.names.get(name), ModuleType):
                self.modules[name] = self.names[name]

    def _remember(self, name: str, cell_names: frozenset) -> None:
        history = self.history.setdefault(name, [])
        if not history and name in self._before and self._before[name] is not self.names[name]:
            history.append((frozenset(), self._before[name]))  # bound before the log began
        entry = (cell_names, self.names[name])
        if history and history[-1][0] == cell_names:
            history[-1] = entry  # the same cell run again
        else:
            history.append(entry)
        del history[:-8]

    def as_cells_before_left(self, defines: set[str], own: set[str]) -> dict[str, object]:
        """The names the learner's try-it cell (the last to bind one of `defines`) bound again,
        `defines` and `own` (what the reference answer's cell binds) aside, each with the object
        the last cell before it left: the chapter's, which a checkpoint reads (7.6's tiny_model
        bound again in the try-it cell made the cases, and the reference agreed)."""
        found = {}
        for name, history in self.history.items():
            cell_names, value = history[-1]
            if (
                name in defines | own
                or not cell_names & defines
                or self.names.get(name) is not value
            ):
                continue
            earlier = [held for names, held in history if not names & defines]
            if earlier:
                found[name] = earlier[-1]
        return found

    def learners_own(self, cell_source: str) -> dict[str, object]:
        """The objects the learner's cells bound to the names `cell_source` (a checkpoint cell)
        binds: what the learner's code means by its goal, check or a helper's name."""
        return {name: self.bound[name] for name in defined_names(cell_source) if name in self.bound}

    def failed(self, names: list[str]) -> tuple[str, str] | None:
        """(name, error) for the first of `names` whose defining cell last raised."""
        for name in names:
            if self.last.get(name):
                return name, self.last[name]
        return None

    def replaced(self, cell_source: str) -> list[str]:
        """The names `cell_source` (a checkpoint cell) binds that now hold another object than
        the one an earlier cell bound, and that code of those cells reads: that code now runs
        the checkpoint's object. Each such name gets its earlier object back."""
        read = _names_read(self.bound.values())
        found = [
            name
            for name in defined_names(cell_source)
            if name in self.bound and name in read and self.names.get(name) is not self.bound[name]
        ]
        for name in found:
            self.names[name] = self.bound[name]
        return found


def _names_read(values) -> set[str]:
    """The global (and attribute) names the code of these functions and classes reads."""
    codes = []
    for value in values:  # only plain functions and classes: a value may be an fx Proxy,
        members = list(vars(value).values()) if isinstance(value, type) else [value]
        for member in members:  # whose every attribute is another Proxy
            if isinstance(member, staticmethod | classmethod):
                member = member.__func__
            if isinstance(member, FunctionType):
                codes.append(member.__code__)
    return set().union(*map(code_reads, codes))


def code_reads(code) -> set[str]:
    """The global names a code object reads, its nested code (a comprehension) included."""
    if code is None:
        return set()
    nested = [code_reads(const) for const in code.co_consts if hasattr(const, "co_names")]
    return set(code.co_names).union(*nested)


def global_loads(code) -> set[str]:
    """The names a code object, and the code nested in it, loads as globals (not attributes)."""
    if code is None:
        return set()
    import dis

    loads = {i.argval for i in dis.get_instructions(code) if i.opname in GLOBAL_LOADS}
    nested = [global_loads(const) for const in code.co_consts if hasattr(const, "co_names")]
    return loads.union(*nested)


GLOBAL_LOADS = ("LOAD_GLOBAL", "LOAD_NAME")


def cell_log() -> CellLog | None:
    """The kernel's CellLog, registered on first use; None outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python without IPython
        return None
    shell = get_ipython()
    if shell is None:
        return None
    callbacks = shell.events.callbacks["post_run_cell"]
    for known in callbacks:
        if isinstance(known, CellLog):
            return known
    log = CellLog(shell.user_ns)
    shell.events.register("post_run_cell", log)
    shell.events.register("pre_run_cell", log.before_cell)
    return log
