"""The gettext catalogs: where each lives, read, merged with new English texts (translations kept,
changed texts fuzzy), checked, filled.

The author's catalogs are courseware/locale/<code>/<name>.po; the one a learner's helpers read at
run time, fxcourse.po, stays in the learner's package (fxcourse/locale/<code>/, fxcourse.messages).
"""

from __future__ import annotations

import ast
import difflib
import re
from pathlib import Path

from courseware.i18n.extract import Text
from courseware.repository import HERE, Repository

RUNTIME = "fxcourse"  # the catalog of fxcourse's own `_()` messages


def catalog_path(name: str, language: str, repository: Repository = HERE) -> Path:
    folder = repository.runtime_locales if name == RUNTIME else repository.locales
    return folder / language / f"{name}.po"


def catalog_paths(language: str, repository: Repository = HERE) -> list[Path]:
    """Every catalog of the language, the author's and the learner's helpers'."""
    found = sorted((repository.locales / language).glob("*.po"))
    runtime = catalog_path(RUNTIME, language, repository)
    return found + [path for path in [runtime] if path.exists()]


def load_catalog(name: str, language: str, repository: Repository = HERE):
    import polib

    path = catalog_path(name, language, repository)
    if path.exists():
        return polib.pofile(str(path), wrapwidth=0)
    catalog = polib.POFile(wrapwidth=0)
    catalog.metadata = {
        "Content-Type": "text/plain; charset=UTF-8",
        "Language": language,
        "Project-Id-Version": "fxcourse",
    }
    return catalog


def lookup_of(name: str, language: str, repository: Repository = HERE) -> dict[str, str]:
    """English -> translation for the entries that are translated and not fuzzy."""
    return {
        entry.msgid: entry.msgstr
        for entry in load_catalog(name, language, repository)
        if entry.msgstr and "fuzzy" not in entry.flags and not entry.obsolete
    }


KIND_NOTES = {
    "markdown": "Markdown: keep markup, code spans, links; in code blocks translate comments only",
    "comment": "a comment in code: one line",
    "string": "a Python string literal: keep its quotes, prefix and every {...} exactly",
    "message": "a message of fxcourse's helpers: keep every {placeholder} exactly",
}


def translation_memory(language: str, repository: Repository = HERE) -> dict:
    """Every translated entry of every catalog of the language, so a text that moves to another
    chapter keeps its translation."""
    import polib

    memory = {}
    for path in catalog_paths(language, repository):
        for entry in polib.pofile(str(path), wrapwidth=0):
            if entry.msgstr and "fuzzy" not in entry.flags and not entry.obsolete:
                memory.setdefault(entry.msgid, entry)
    return memory


def merged_catalog(name: str, language: str, texts: list[Text], repository: Repository = HERE):
    """The catalog for texts: translations kept, changed texts fuzzy with the old translation."""
    import polib

    old = load_catalog(name, language, repository)
    done = translation_memory(language, repository)
    done |= {e.msgid: e for e in old if e.msgstr and not e.obsolete}
    catalog = polib.POFile(wrapwidth=0)
    catalog.metadata = old.metadata
    seen: dict[str, polib.POEntry] = {}
    for text in texts:
        if text.text in seen:
            seen[text.text].occurrences.append((name, str(text.cell)))
            continue
        entry = polib.POEntry(msgid=text.text, msgstr="", occurrences=[(name, str(text.cell))])
        entry.comment = KIND_NOTES[text.kind]
        if text.text in done:
            entry.msgstr, entry.flags = done[text.text].msgstr, list(done[text.text].flags)
        elif close := difflib.get_close_matches(text.text, list(done), n=1, cutoff=0.6):
            entry.msgstr, entry.flags = done[close[0]].msgstr, ["fuzzy"]
            entry.previous_msgid = close[0]
        seen[text.text] = entry
        catalog.append(entry)
    return catalog


def problems(
    name: str, language: str, texts: list[Text], repository: Repository = HERE
) -> list[str]:
    """Entries missing or stale (fuzzy), and translated strings that would break the code."""
    catalog = {e.msgid: e for e in load_catalog(name, language, repository) if not e.obsolete}
    found = []
    for text in dict.fromkeys(texts):
        entry = catalog.get(text.text)
        short = text.text.replace("\n", " ")[:70]
        if entry is None or not entry.msgstr:
            found.append(f"{name}.po: missing ({text.kind}, cell {text.cell}): {short!r}")
        elif "fuzzy" in entry.flags:
            found.append(f"{name}.po: its English changed (fuzzy), cell {text.cell}: {short!r}")
        elif text.kind == "string" and not same_literal_shape(text.text, entry.msgstr):
            found.append(f"{name}.po: not a string literal with the same {{...}}: {short!r}")
        elif text.kind == "message" and not same_placeholders(text.text, entry.msgstr):
            found.append(f"{name}.po: the translation lost or added a {{placeholder}}: {short!r}")
        elif text.kind == "comment" and "\n" in entry.msgstr:
            found.append(f"{name}.po: a comment's translation must be one line: {short!r}")
    return found


def same_literal_shape(english: str, translated: str) -> bool:
    """A translated string literal parses, and keeps the English one's {placeholders}."""
    try:
        ast.parse(translated, mode="eval")
    except SyntaxError:
        return False
    return same_placeholders(english, translated)


def same_placeholders(english: str, translated: str) -> bool:
    placeholders = re.compile(r"\{[^{}]*\}")
    return sorted(placeholders.findall(english)) == sorted(placeholders.findall(translated))


def export_todo(name: str, language: str, repository: Repository = HERE) -> list[dict]:
    """The entries of one catalog still to translate (missing or fuzzy), as JSON-able dicts."""
    return [
        {"english": e.msgid, "kind": e.comment, "draft": e.msgstr}
        for e in load_catalog(name, language, repository)
        if not e.msgstr or "fuzzy" in e.flags
    ]


def fill(
    name: str, language: str, translations: dict[str, str], repository: Repository = HERE
) -> int:
    """Set translations (English -> text) in one catalog, clearing their fuzzy flag."""
    catalog = load_catalog(name, language, repository)
    count = 0
    for entry in catalog:
        if translations.get(entry.msgid):
            entry.msgstr = translations[entry.msgid]
            entry.flags = [flag for flag in entry.flags if flag != "fuzzy"]
            entry.previous_msgid = None
            count += 1
    catalog.save(str(catalog_path(name, language, repository)))
    return count
