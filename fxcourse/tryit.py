"""Checkpoints for the chapters' "Try it" prompts, and the reference answers behind them.

A try-it is a scaffold cell the learner fills in, followed by a checkpoint cell:

    with checkpoint("1.1", "trace soft_clip into traced_soft_clip (section 1.3)") as check:
        check(isinstance(traced_soft_clip, fx.GraphModule), "trace it with fx.symbolic_trace")
        check(torch.allclose(traced_soft_clip(x), 3 * torch.tanh(x / 3)), "3 * tanh(x / 3)")

The block stops at the first failed `check(...)` and shows a friendly "Not yet" message with the
goal; an error raised by the learner's unfinished code (a name not defined yet, a `...` where a
value belongs) becomes such a message too, so "Run All" always reaches the end of a chapter. When
every check holds, it says the checkpoint passed.

Reference answers come from answers.json, generated from the instructor's chapters (absent from a
student edition built without answers). A "Not yet" box holds the answer collapsed: it shows only
when the learner clicks "Stuck? Show a reference answer". `show_answer("1.1")` shows it as text
(for a console, or to look before trying). The learner's own cells are never touched.
"""

from __future__ import annotations

import html
import json
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from fxcourse.messages import _, language
from fxcourse.results import record_tryit
from fxcourse.stamps import unstamped_json

ANSWERS_FILE = Path(__file__).with_name("answers.json")


def no_answers() -> str:
    return _(
        "This edition of the course ships without reference answers: ask your instructor, or "
        "reread the section the goal names."
    )


class NotYet(Exception):
    """Raised by `check(...)` when a condition does not hold; ends the checkpoint block."""


@dataclass
class CheckpointResult:
    """What a checkpoint block found, shown as a coloured box (HTML) or one line of text."""

    tryit_id: str
    goal: str
    problem: str | None = None

    @property
    def passed(self) -> bool:
        return self.problem is None

    def __repr__(self) -> str:
        if self.passed:
            return _("Checkpoint {id} passed.").format(id=self.tryit_id)
        return (
            _("Not yet (try it {id}): {problem}").format(id=self.tryit_id, problem=self.problem)
            + "\n  "
            + _("Goal: {goal}").format(goal=self.goal)
            + "\n  "
            + self._stuck()
        )

    def _stuck(self) -> str:
        if not load_answers():
            return no_answers()
        return (
            _("Stuck? To see a reference answer, run in a new cell:")
            + "\n"
            + f'  from fxcourse.tryit import show_answer; show_answer("{self.tryit_id}")'
        )

    def _repr_html_(self) -> str:
        if self.passed:
            passed = _("Checkpoint {id} passed.").format(id=self.tryit_id)
            return _box("#e8f5e9", "#2e7d32", f"&#10004; {html.escape(passed)}")
        body = _("<b>Not yet</b> (try it {id}): {problem}<br><b>Goal:</b> {goal}").format(
            id=self.tryit_id, problem=html.escape(self.problem or ""), goal=html.escape(self.goal)
        )
        return _box("#fff8e1", "#f9a825", body + show_answer(self.tryit_id).as_details())


def _box(background: str, border: str, body: str) -> str:
    style = (
        f"background:{background};border-left:4px solid {border};padding:6px 10px;"
        "margin:2px 0;font-family:var(--jp-ui-font-family, sans-serif);color:#212121"
    )
    return f'<div class="fxcourse-checkpoint" style="{style}">{body}</div>'


class checkpoint:  # noqa: N801 (used like a function: `with checkpoint(...) as check:`)
    """Context manager for one try-it's checkpoint; see the module docstring."""

    def __init__(self, tryit_id: str, goal: str):
        self.result = CheckpointResult(tryit_id, goal)

    def __enter__(self):
        return self.check

    @staticmethod
    def check(condition: object, hint: str) -> None:
        """Stop the checkpoint with `hint` unless `condition` is true."""
        if not condition:
            raise NotYet(hint)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None and not issubclass(exc_type, Exception):
            return False  # KeyboardInterrupt and friends stop the cell as usual
        if exc is not None:
            self.result.problem = _describe(exc, tb)
        _display(self.result)
        record_tryit(self.result.tryit_id, self.result.passed)  # what progress reads
        return True


def _describe(exc: BaseException, tb) -> str:
    if isinstance(exc, NotYet):
        return str(exc)
    if isinstance(exc, NameError):
        return _("{error}: fill in the try-it cell above and run it first.").format(error=exc)
    where = _learners_frame(traceback.extract_tb(tb))
    return _("running your code raised {name}: {error} ({where})").format(
        name=type(exc).__name__, error=exc, where=where
    )


def _learners_frame(frames: traceback.StackSummary) -> str:
    """Where the learner's own code (a notebook cell, not torch's or Python's files) failed."""
    libraries = {sys.prefix, sys.base_prefix, str(Path(__file__).parent)}
    mine = [f for f in frames if not any(f.filename.startswith(lib) for lib in libraries)]
    frame = (mine or list(frames))[-1]
    shown = _("line {line}").format(line=frame.lineno)
    return f"{shown}: {frame.line}" if frame.line else shown


def _display(result: CheckpointResult) -> None:
    try:
        from IPython.display import display
    except ImportError:  # plain Python
        print(repr(result))
    else:
        display(result)


def load_answers(path: Path | None = None) -> dict[str, dict]:
    """Try-it id -> {"chapter", "code"}; empty when this edition ships without answers."""
    if path is None:  # a translated chapter's answers carry translated comments
        translated = ANSWERS_FILE.with_suffix(f".{language()}.json")
        path = translated if translated.exists() else ANSWERS_FILE
    if not path.exists():
        return {}
    return unstamped_json(json.loads(path.read_text(encoding="utf-8")))


@dataclass
class Answer:
    """A reference answer, shown as highlighted code (Markdown) or plain text."""

    tryit_id: str
    code: str | None

    def __repr__(self) -> str:
        if self.code is None:
            return no_answers()
        title = _("A reference answer for try it {id}").format(id=self.tryit_id)
        return f"# {title}\n{self.code}"

    def as_details(self) -> str:
        """A collapsed HTML block: the answer shows only when the learner clicks its summary."""
        if self.code is None:
            return f"<br><small>{html.escape(no_answers())}</small>"
        summary = html.escape(_("Stuck? Show a reference answer"))
        note = html.escape(_("One way to do it (yours may differ and still pass):"))
        return (
            f'<details class="fxcourse-answer"><summary>{summary}</summary><small>{note}</small>'
            f"<pre>{html.escape(self.code)}</pre></details>"
        )

    def _repr_markdown_(self) -> str:
        if self.code is None:
            return no_answers()
        title = _("A reference answer for try it {id} (yours may differ and still pass):")
        return title.format(id=self.tryit_id) + f"\n\n```python\n{self.code}\n```"


def show_answer(tryit_id: str) -> Answer:
    """The reference answer of one try-it, to read; nothing is run and no cell is changed."""
    answers = load_answers()
    if not answers:
        return Answer(tryit_id, None)
    if tryit_id not in answers:
        known = ", ".join(sorted(answers, key=_natural))
        raise KeyError(f"no try-it {tryit_id!r}; the try-its are {known}")
    return Answer(tryit_id, answers[tryit_id]["code"])


def _natural(tryit_id: str) -> list[int]:
    return [int(part) if part.isdigit() else 0 for part in tryit_id.split(".")]
