"""The grader's own messages to a learner (a cell interrupted, a process killed, a definition
missing), made in English where they happen and told in the submission's language where its
outputs are written (preprocessors.py, for an assignment in another language).

Each message is a template marked `_("... {value} ...")`: `make translations` extracts them into
courseware/locale/<code>/safegrade.po (courseware.i18n, as it does fxcourse's own `_()` messages).
They are made in the sandbox's child too, which sees only this folder and no catalog, so `_()`
returns the English and the trusted side translates the finished text: `translated` finds the
template it is an instance of and writes the translation with the same values, each of them
translated in turn (a message's {where} is a message too). Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache

PLACEHOLDER = re.compile(r"\{(\w+)\}")
DEPTH = 3  # messages inside messages inside messages


def _(template: str) -> str:
    """A message for the catalog (its extractor finds every `_("...")`): the English template."""
    return template


@cache
def pattern(template: str) -> re.Pattern:
    """Matches a text made from `template`, capturing each {value}."""
    parts, start = [], 0
    for placeholder in PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[start : placeholder.start()]))
        parts.append(f"(?P<{placeholder.group(1)}>.+?)")
        start = placeholder.end()
    return re.compile("".join(parts) + re.escape(template[start:]), re.S)


def translated(text: str, lookup: Mapping[str, str], depth: int = DEPTH) -> str:
    """`text` in the catalog's language when it was made from one of its templates (the one with
    the most words of its own, when several fit), else as it is."""
    if depth == 0 or not lookup:
        return text
    fits = []
    for template, translation in lookup.items():
        found = pattern(template).fullmatch(text)
        if found:
            fits.append((len(PLACEHOLDER.sub("", template)), translation, found.groupdict()))
    if not fits:
        return text
    _size, translation, values = max(fits, key=lambda fit: fit[0])
    # The values are data (a test's name, the start of a cell): put in, never read as a format.
    return PLACEHOLDER.sub(
        lambda p: translated(values.get(p.group(1), p.group(0)), lookup, depth - 1), translation
    )
