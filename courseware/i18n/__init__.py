"""Translations of what learners read, kept as gettext catalogs (courseware/locale/<lang>/*.po).

    python -m courseware.i18n update   extract the English texts into the catalogs: new texts get
                                     empty entries, changed ones keep their old translation marked
                                     fuzzy (with the previous English), vanished ones are dropped
    python -m courseware.i18n check    exit 1 naming every entry that is missing or fuzzy, departs
                                     from the glossary (locale/<lang>/glossary.tsv) or breaks a
                                     line that Markdown shows as a stray space (between two CJK
                                     characters, or after CJK punctuation) or quotes prose in
                                     ASCII quotes where the language has its own (“…”)
    python -m courseware.i18n todo NAME [LANG]         what NAME.po still needs, as JSON
    python -m courseware.i18n fill NAME F.json [LANG]  set translations from {english: translation}
    python -m courseware.i18n join-lines        join those msgstr lines (and quote prose with the
                                                language's own quotation marks: “…” in Chinese)

A notebook's texts are its Markdown blocks (a cell split at blank lines, fenced code kept whole),
the comments in its code, the strings its code shows (printed, raised, drawn, hinted: see
courseware.shown_strings) and the docstrings of the functions and classes it defines; in exercise
starters also the messages of the visible tests' asserts. Code and identifiers are never
translated. fxcourse's own messages (the "Not yet" box and its friends) are in fxcourse.po, read at
run time by fxcourse.messages (the one catalog that lives in the learner's package).
Translators edit the .po files (any PO editor, or by hand) and clear the `fuzzy` flag once an
entry matches its English again. The languages are fxcourse.languages' translations (LANG: the
first of them when not given).

The package's files, one job each: extract (what a document gives to translate), apply (a
translation written into a notebook), catalogs (the .po files), vocabulary (glossary and
typography), documents (what is translated, with which catalog), command (the command line).
"""

from courseware.i18n.apply import (
    add_language_cell,
    language_cell,
    refresh_checksums,
    translate_notebook,
)
from courseware.i18n.catalogs import (
    catalog_path,
    export_todo,
    fill,
    load_catalog,
    lookup_of,
    merged_catalog,
    problems,
)
from courseware.i18n.documents import Document, all_problems, documents, update
from courseware.i18n.extract import Text, message_strings, texts_of
from courseware.i18n.vocabulary import (
    BREAK_BETWEEN_CJK,
    Term,
    closed_spaces,
    glossary,
    joined_entry,
    joined_lines,
    line_break_problems,
    term_problems,
    vocabulary_problems,
)
from courseware.repository import HERE, Repository

__all__ = [
    "BREAK_BETWEEN_CJK",
    "Document",
    "Term",
    "Text",
    "add_language_cell",
    "all_problems",
    "catalog_path",
    "closed_spaces",
    "documents",
    "export_todo",
    "fill",
    "glossary",
    "joined_entry",
    "joined_lines",
    "language_cell",
    "line_break_problems",
    "load_catalog",
    "lookup_of",
    "merged_catalog",
    "message_strings",
    "problems",
    "refresh_checksums",
    "term_problems",
    "texts_of",
    "translate_notebook",
    "update",
    "vocabulary_problems",
    "main",
]


def main(argv: list[str], repository: Repository = HERE) -> int:
    from courseware.i18n.command import main as command

    return command(argv, repository)
