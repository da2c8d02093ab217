"""The reference answers a learner asks to see: `show_answer("1.1")`, and the collapsed block
under a "Not yet". They come from answers.json (made from the instructor's chapters; absent from a
student edition without answers)."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

from fxcourse.messages import _, language, listing
from fxcourse.stamps import unstamped_json

ANSWERS_FILE = Path(__file__).with_name("answers.json")


def no_answers() -> str:
    return _(
        "This edition of the course ships without reference answers: ask your instructor, or "
        "reread the section the goal names."
    )


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
        known = listing(sorted(answers, key=_natural))
        unknown = _("no try-it {id}; the try-its are {known}")
        raise KeyError(unknown.format(id=repr(tryit_id), known=known))
    return Answer(tryit_id, answers[tryit_id]["code"])


def _natural(tryit_id: str) -> list[int]:
    return [int(part) if part.isdigit() else 0 for part in tryit_id.split(".")]
