"""The grader's own messages to a learner (a cell interrupted, a process killed, a definition
missing), made in English where they happen and told in the submission's language where its
outputs are written (preprocessors.py, for an assignment in another language).

Each message is a template marked `_("... {value} ...")`: `make translations` extracts them into
courseware/locale/<code>/safegrade.po (courseware.i18n, as it does fxcourse's own `_()` messages).
They are made in the sandbox's child too, which sees only this folder and no catalog, so `_()`
returns the English and the trusted side translates the finished text: `translated` finds the
template it is an instance of and writes the translation with the same values. A value is kept as it
is (a name, a number, the start of a learner's cell, a learner's own graph target: text the grader
quotes, never its words), except one that is a message itself ({where}, {status}, {why}, {what}: the
grader's own fragments), which is told in turn. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache

PLACEHOLDER = re.compile(r"\{(\w+)\}")
DEPTH = 3  # messages inside messages inside messages
MESSAGE_VALUES = frozenset({"where", "status", "why", "what"})  # values that are messages too
# The error names under which the grader says something itself (an output of another name is
# a learner's or a check's own error, never told even when its text looks like a template).
GRADER_ERRORS = frozenset(
    "GraderError DeadKernelError TimeoutError CellTimeoutError CheckTimeout CheckNotFinished "
    "DataTooLarge DataError NameError LookupError".split()
)


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
    return PLACEHOLDER.sub(lambda p: value(p.group(1), values, lookup, depth), translation)


def value(name: str, values: dict[str, str], lookup: Mapping[str, str], depth: int) -> str:
    """A template's {name} as found in the text: told in turn when it is a message itself."""
    found = values.get(name, "{" + name + "}")
    return translated(found, lookup, depth - 1) if name in MESSAGE_VALUES else found
