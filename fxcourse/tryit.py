"""Checkpoints for the chapters' "Try it" prompts, and the reference answers behind them.

A try-it is a scaffold cell the learner fills in, followed by a checkpoint cell. The checkpoint
runs the learner's answer and the reference answer on cases it makes fresh at every run
(fxcourse.cases), and compares what the lesson is about:

    def soft_clips(make):  # what 1.1's cases may contain
        return (make.tensor(make.integer(2, 9), make.integer(1, 5), dtype=make.dtype()),)

    with checkpoint("1.1", "trace soft_clip into traced_soft_clip (section 1.3)") as check:
        check(isinstance(traced_soft_clip, fx.GraphModule), "trace it with fx.symbolic_trace")
        for case in check.cases(soft_clips):
            mine, reference = case.both(lambda answer, x: answer.traced_soft_clip(x))
            check.close(mine, reference, "the traced graph computes other values")

`check.cases(builder, count)` yields `count` cases (at least 5), each drawn from its own seed;
`case.both(fn)` builds the case's objects once for each side and returns `fn(learner, *objects)`
and `fn(reference, *objects)`: the notebook's names and the reference answer's (fxcourse.reference).
`case.objects()` builds one more copy, to inspect. `check.run_reference_as(rewrite)` runs the
reference's code as `rewrite(code)` returns it (an answer that registers a custom operator). A
"Not yet" names the case (its seed, what it held) and how to see it again (`show_case`, `replay`),
never the reference's values; an error raised by the learner's unfinished code becomes one too, so
"Run All" reaches the end of a chapter. A checkpoint first asks whether the cell that defines the
try-it's names last ran cleanly: one that now raises leaves an old value in memory.

Reference answers come from answers.json (made from the instructor's chapters; not in a student
edition without answers): a "Not yet" box holds one collapsed, `show_answer("1.1")` as text.
"""

from __future__ import annotations

import copy
import html
import linecache
import secrets
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from fxcourse import raised, reference
from fxcourse.cases import CaseMaker, seeds_of
from fxcourse.messages import _, listing
from fxcourse.quiet import without_structured_trace
from fxcourse.results import record_tryit
from fxcourse.shown_answers import (  # noqa: F401 - the chapters and tests import them here
    ANSWERS_FILE,
    Answer,
    load_answers,
    no_answers,
    show_answer,
)


class NotYet(Exception):
    """Raised by `check(...)` when a condition does not hold; ends the checkpoint block."""


@dataclass
class CheckpointResult:
    """What a checkpoint block found, shown as a coloured box (HTML) or one line of text."""

    tryit_id: str
    goal: str
    problem: str | None = None
    case: str | None = None  # the case the problem was found in, and how to see it again
    cases_run: int = 0  # fresh cases judged (what the course's tests count)
    reference_runs: int = 0  # how many of them the reference answer also ran

    @property
    def passed(self) -> bool:
        return self.problem is None

    def __repr__(self) -> str:
        if self.passed:
            return _("Checkpoint {id} passed.").format(id=self.tryit_id)
        not_yet = _("Not yet (try it {id}): {problem}")
        lines = [not_yet.format(id=self.tryit_id, problem=self.problem)]
        lines += self.case.split("\n") if self.case else []
        lines += [_("Goal: {goal}").format(goal=self.goal), self._stuck()]
        return "\n  ".join(lines)

    def summary(self) -> dict:
        """What the course's tests read from a displayed result (its output metadata)."""
        keys = ("tryit_id", "passed", "cases_run", "reference_runs")
        return {key: getattr(self, key) for key in keys}

    def _stuck(self) -> str:
        if not load_answers():
            return no_answers()
        command = f'from fxcourse.tryit import show_answer; show_answer("{self.tryit_id}")'
        return _("Stuck? To see a reference answer, run in a new cell:") + "\n  " + command

    def _repr_html_(self) -> str:
        if self.passed:
            passed = _("Checkpoint {id} passed.").format(id=self.tryit_id)
            return _box("#e8f5e9", "#2e7d32", f"&#10004; {html.escape(passed)}")
        body = _("<b>Not yet</b> (try it {id}): {problem}<br><b>Goal:</b> {goal}").format(
            id=self.tryit_id, problem=html.escape(self.problem or ""), goal=html.escape(self.goal)
        )
        if self.case:
            case = html.escape(self.case).replace("\n", "<br>")
            body += f"<br><small>{case}</small>"
        return _box("#fff8e1", "#f9a825", body + show_answer(self.tryit_id).as_details())


def _box(background: str, border: str, body: str) -> str:
    style = (
        f"background:{background};border-left:4px solid {border};padding:6px 10px;"
        "margin:2px 0;font-family:var(--jp-ui-font-family, sans-serif);color:#212121"
    )
    return f'<div class="fxcourse-checkpoint" style="{style}">{body}</div>'


MIN_CASES = 5
_replays: dict[str, int] = {}  # try-it id -> the seed its next checkpoint run uses
_builders: dict[str, Callable] = {}  # try-it id -> the case builder its checkpoint last used


class checkpoint:  # noqa: N801 (used like a function: `with checkpoint(...) as check:`)
    """One try-it's checkpoint (module docstring). Inside the block, `check` is this object:
    call it with a condition and a hint, or use its `cases`, `close`, `learner`, `reference`."""

    def __init__(self, tryit_id: str, goal: str):
        self.result = CheckpointResult(tryit_id, goal)
        self.learner_globals = sys._getframe(1).f_globals
        self.cell_file = sys._getframe(1).f_code.co_filename  # the checkpoint cell's own code
        self.run_seed = _replays.pop(tryit_id, None) or secrets.randbelow(10**6)
        self.case: Case | None = None
        self._reference, self._chapter = None, {}
        self._rewrite: Callable[[str], str] | None = None

    def __enter__(self) -> checkpoint:
        self._names_before = dict(self.learner_globals)
        source = "".join(linecache.getlines(self.cell_file))
        for_block, self._chapter = reference.chapter_names(self.result.tryit_id, source)
        log = reference.cell_log()  # the learner's own goal, check, helpers: theirs as answers run
        self._own = log.learners_own(source) if log is not None and source else {}
        self.learner_globals.update(for_block)  # given back at exit, as the block's own names
        self._no_trace = without_structured_trace()
        self._no_trace.__enter__()
        return self

    def __call__(self, *args, **kwargs):
        """check(condition, hint): stop the checkpoint with `hint` unless `condition` is true.
        Called from the learner's own code, it is the learner's helper named check (replaced by
        the block's `as check`), for the calls the check cell makes outside case.both."""
        caller, own = sys._getframe(1), self._own.get("check")
        if own is not None and caller.f_globals is self.learner_globals:
            if caller.f_code.co_filename != self.cell_file:
                return own(*args, **kwargs)
        condition, hint = args
        if not condition:
            raise NotYet(hint)
        return None

    def close(self, mine, wanted, hint: str, atol: float = 1e-5, rtol: float = 1e-4) -> None:
        """Stop unless `mine` has the reference's structure, shapes, dtypes and values within the
        tolerances (its values never shown): told what differs in form (a dtype), else `hint`."""
        close = reference.close_enough(mine, wanted, atol, rtol)
        self(close, reference.form_difference(mine, wanted) or hint)

    @property
    def learner(self) -> reference.LearnerNames:
        return reference.LearnerNames(self.learner_globals)

    @property
    def reference(self):
        """The reference answer's names (run once per checkpoint, in a copy of the learner's)."""
        if self._reference is None:
            self._reference = reference.reference_namespace(
                self.result.tryit_id, self.learner_globals | self._chapter, self._rewrite
            )
        return self._reference

    def run_reference_as(self, rewrite: Callable[[str], str]) -> None:
        """Run the reference answer as `rewrite(its code)` returns it, from its next use on.
        For an answer whose code changes something global: registering a custom operator
        under the learner's name would replace the learner's own, so the rewrite gives the
        reference's a name of its own (try it 7.4)."""
        self._rewrite = rewrite
        self._reference = None

    def cases(self, builder: Callable[[CaseMaker], object], count: int = 6) -> Iterator[Case]:
        """`count` fresh cases, each `builder(make)` for a maker seeded from this run's seed."""
        if count < MIN_CASES:
            raise ValueError(f"a checkpoint judges at least {MIN_CASES} fresh cases")
        _builders[self.result.tryit_id] = builder
        for index, seed in enumerate(seeds_of(self.run_seed, count)):
            self.case = Case(self, builder, seed, index, count)
            self.result.cases_run += 1
            yield self.case
        self.case = None

    def both(self, fn: Callable, *objects) -> tuple:
        """(fn(learner, *copies), fn(reference, *copies)) for `objects` that hold every case of
        the run at once (one program made of all the cases' models: an export, and what follows
        it, cost a fixed time per program, paid once per side instead of once per case). Each
        side gets deep copies of its own, the reference first; `judging(case)` then names the
        case a "Not yet" is about."""
        with self.answers_run(fn):
            try:
                wanted = fn(self.reference, *copy.deepcopy(objects))
            except Exception as error:
                raise reference.ReferenceFailed(f"{type(error).__name__}: {error}") from error
            self.result.reference_runs += self.result.cases_run
            return fn(self.learner, *copy.deepcopy(objects)), wanted

    def mine(self, fn: Callable, *args, **kwargs):
        """fn(*args, **kwargs) with the learner's names as the block found them: for the
        learner's code that the check cell calls itself, outside case.both (`fn`: the learner's
        function or a helper of fxcourse's, never a lambda of the check cell's)."""
        with self.answers_run(None):
            return fn(*args, **kwargs)

    def answers_run(self, fn: Callable):
        """While the answers run, the learner's names as the block found them (names_as_found)."""
        names = self.learner_globals
        return reference.names_as_found(names, self._names_before, self, fn, self._own)

    def judging(self, case: Case | None) -> None:
        """A "Not yet" from here on is about `case` (None: about the run as a whole)."""
        self.case = case

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._no_trace.__exit__(None, None, None)
        reference.restore_names(self.learner_globals, self._names_before, keep=self)
        if exc_type is not None and not issubclass(exc_type, Exception):
            return False  # KeyboardInterrupt and friends stop the cell as usual
        replaced = self._replaced()  # a crash when the learner's code read the block's names
        if stale := self._stale():
            self.result.problem = stale
        elif replaced and exc is not None and not isinstance(exc, NotYet):
            self.result.problem = replaced
        elif exc is not None:
            self.result.problem = _describe(exc, tb, self.cell_file)
            if self.case is not None:
                self.result.case = self.case.where()
        _display(self.result)
        record_tryit(self.result.tryit_id, self.result.passed)  # what progress reads
        return True

    def _replaced(self) -> str | None:
        """A problem when this checkpoint cell's own helpers replaced names the learner's code
        reads: that code ran the checkpoint's helpers, not the learner's (the names get the
        learner's objects back)."""
        log = reference.cell_log()
        source = "".join(linecache.getlines(self.cell_file))
        names = log.replaced(source) if log is not None and source else []
        if not names:
            return None
        said = _(
            "this checkpoint cell defines {names} for its own checks, which replaced your "
            "{names}, read by your code: give yours another name (such as my_{first}), run your "
            "cell again, then this one"
        )
        return said.format(names=listing(names), first=names[0])

    def _stale(self) -> str | None:
        """A problem when the cell defining this try-it's names last raised (an old value)."""
        log = reference.cell_log()
        entry = reference.load_references().get(self.result.tryit_id, {})
        failed = log.failed(entry.get("defines", [])) if log else None
        if failed is None:
            return None
        name, error = failed
        return _(
            "the cell that defines {name} raised {error} when it last ran, so {name} may hold "
            "an older value, and the cell did not finish: fix that cell and run it again"
        ).format(name=name, error=error)


@dataclass
class Case:
    """One fresh case of a checkpoint run: its seed, and its objects made on demand."""

    run: checkpoint
    builder: Callable[[CaseMaker], object]
    seed: int
    index: int
    count: int
    description: str | None = None

    def objects(self) -> tuple:
        """A fresh copy of the case's objects (the same seed gives equal objects)."""
        make = CaseMaker(self.seed, self.index, self.run.run_seed)
        made = self.builder(make)
        self.description = self.description or make.describe()
        return made if isinstance(made, tuple) else (made,)

    def both(self, fn: Callable) -> tuple:
        """(fn(learner, *objects), fn(reference, *objects)), each side with objects of its own;
        the reference runs first, so nothing the learner's code changes can reach it."""
        with self.run.answers_run(fn):
            try:
                wanted = fn(self.run.reference, *self.objects())
            except Exception as error:
                raise reference.ReferenceFailed(f"{type(error).__name__}: {error}") from error
            self.run.result.reference_runs += 1
            return fn(self.run.learner, *self.objects()), wanted

    def where(self) -> str:
        """Which case failed, and the lines that show it again (each ready to run in a cell)."""
        tryit_id, seed, number = self.run.result.tryit_id, self.run.run_seed, self.index + 1
        described = _("Case {number} of {count} (seed {seed}): {description}.").format(
            number=number, count=self.count, seed=seed, description=self.description or ""
        )
        look = f'show_case("{tryit_id}", {seed}, {number})'
        again = f'replay("{tryit_id}", {seed})'
        return "\n".join(
            [
                described,
                _("To look at it, run in a new cell:"),
                f"  from fxcourse.tryit import show_case; {look}",
                _("To check the same cases again, run in a new cell, then run this cell again:"),
                f"  from fxcourse.tryit import replay; {again}",
            ]
        )


def replay(tryit_id: str, seed: int) -> str:
    """The next run of try-it `tryit_id`'s checkpoint judges the cases of run seed `seed`."""
    _replays[tryit_id] = int(seed)
    return _("The next run of checkpoint {id} checks the cases of seed {seed}.").format(
        id=tryit_id, seed=seed
    )


def show_case(tryit_id: str, seed: int, number: int) -> tuple:
    """The objects of case `number` of run seed `seed`, as try-it `tryit_id` made them."""
    builder = _builders.get(tryit_id)
    if builder is None:
        raise LookupError(_("run the checkpoint of try it {id} first").format(id=tryit_id))
    case_seed = seeds_of(int(seed), number)[number - 1]
    make = CaseMaker(case_seed, number - 1, int(seed))
    made = builder(make)
    print(make.describe())
    return made


def _describe(exc: BaseException, tb, cell_file: str = "") -> str:
    return str(exc) if isinstance(exc, NotYet) else raised.described(exc, tb, cell_file)


def _display(result: CheckpointResult) -> None:
    try:
        from IPython.display import display
    except ImportError:  # plain Python
        print(repr(result))
    else:
        display(result, metadata={"fxcourse": result.summary()})


reference.cell_log()  # from the chapter's first import on, note which cells ran cleanly
