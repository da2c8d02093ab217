"""The language of fxcourse's own messages (the try-its' "Not yet" box and its friends).

A Chinese chapter starts with `use_language("zh")`; `_()` then looks each English message up in
fxcourse/locale/zh/fxcourse.po, and falls back to the English when a message has no translation.
Before that (a kernel that has not run a chapter's language cell: `show_answer` in a new
notebook, a console), the language is FXCOURSE_LANGUAGE's, which `make lab LANG=zh` sets for the
lab's kernels: a code of fxcourse.languages or a locale such as zh_CN.UTF-8; English otherwise.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from fxcourse.languages import SOURCE, for_locale

LOCALES = Path(__file__).with_name("locale")
LANGUAGE_VARIABLE = "FXCOURSE_LANGUAGE"
_language = for_locale(os.environ.get(LANGUAGE_VARIABLE, ""))


def use_language(language: str) -> None:
    """Show fxcourse's messages in `language` (a code of fxcourse.languages) from now on, in this
    kernel."""
    global _language
    _language = language


@contextmanager
def speaking(language: str) -> Iterator[None]:
    """fxcourse's messages in `language` inside the block, as before it after."""
    saved = _language
    use_language(language)
    try:
        yield
    finally:
        use_language(saved)


def language() -> str:
    return _language


@cache
def _catalog(language: str) -> dict[str, str]:
    path = LOCALES / language / "fxcourse.po"
    if language == SOURCE.code or not path.exists():
        return {}
    import polib

    return {
        entry.msgid: entry.msgstr
        for entry in polib.pofile(str(path))
        if entry.msgstr and "fuzzy" not in entry.flags
    }


def _(message: str) -> str:
    """`message` in the current language (a format string keeps its {placeholders})."""
    return _catalog(_language).get(message, message)


def listing(items) -> str:
    """`items` as one list in the current language's punctuation ("a, b" or "a、b")."""
    return _(", ").join(items)


def printed_pattern(text: str) -> re.Pattern:
    """Matches a line that starts as `text` prints (up to its {problem}), capturing its {id}."""
    head = text.partition("{problem}")[0]
    return re.compile("^" + re.escape(head).replace(re.escape("{id}"), r"(\S+?)"))


def in_every_language(message: str) -> list[str]:
    """`message` and each of its translations (to read what a chapter in any language printed)."""
    found = [message]
    for path in sorted(LOCALES.glob("*/fxcourse.po")):
        translated = _catalog(path.parent.name).get(message)
        if translated and translated not in found:
            found.append(translated)
    return found
