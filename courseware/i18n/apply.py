"""Translations applied: a notebook's Markdown, comments and shown strings replaced by their
catalog's, nbgrader checksums kept valid, the cell that sets a chapter's language."""

from __future__ import annotations

import nbformat

from courseware.i18n.extract import comments, markdown_blocks, message_strings, notebook_shown_names
from fxcourse.messages import _, speaking


def translate_markdown(source: str, lookup: dict[str, str]) -> str:
    for block in markdown_blocks(source):
        if lookup.get(block):
            source = source.replace(block, lookup[block], 1)
    return source


def translate_code(
    source: str, lookup: dict[str, str], asserts: bool, shared: list[str] = ()
) -> str:
    """Comments and shown strings translated; `shared` are literals shown elsewhere in the same
    notebook, translated here too, so that a label defined in one cell and read in another stays
    one value."""
    lines = source.split("\n")
    for line, column, text in comments(source):
        if lookup.get(text):
            lines[line - 1] = lines[line - 1][:column] + "# " + lookup[text]
    source = "\n".join(lines)
    texts = dict.fromkeys([*message_strings(source, asserts), *shared])
    for text in sorted(texts, key=len, reverse=True):
        if lookup.get(text):
            source = source.replace(text, lookup[text])
    return source


def translate_notebook(
    nb: nbformat.NotebookNode, lookup: dict[str, str], asserts: bool = False
) -> nbformat.NotebookNode:
    """A copy of nb with every text that has a translation replaced; code stays as it is."""
    translated = nbformat.reads(nbformat.writes(nb), as_version=4)
    code = [cell for cell in translated.cells if cell.cell_type == "code"]
    names = notebook_shown_names(translated)
    shared = [text for cell in code for text in message_strings(cell.source, asserts, names)]
    for cell in translated.cells:
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, lookup)
        elif cell.cell_type == "code":
            cell.source = translate_code(cell.source, lookup, asserts, shared)
    return translated


LANGUAGE_CELL = '# {comment}\nfrom fxcourse.messages import use_language\n\nuse_language("{code}")'


def language_cell(language: str, exercise: bool = False) -> str:
    with speaking(language):
        if exercise:
            comment = _("fxcourse's messages below (charts, tables, hints) speak this language")
        else:
            comment = _("the checkpoints below give their hints in this chapter's language")
    return LANGUAGE_CELL.format(comment=comment, code=language)


def add_language_cell(nb: nbformat.NotebookNode, language: str, exercise: bool = False) -> None:
    """A translated chapter's, or exercise's, first code cell switches fxcourse's messages to its
    language (an exercise's is not graded: nbgrader leaves a cell without its metadata alone)."""
    source = language_cell(language, exercise)
    cell = nbformat.v4.new_code_cell(source, id=f"fxcourse-language-{language}")
    nb.cells.insert(1, cell)  # a fixed id: the derived chapter is the same on every build


def refresh_checksums(nb: nbformat.NotebookNode) -> None:
    """nbgrader's checksums of a translated exercise's cells, so `validate` accepts them."""
    from nbgrader.utils import compute_checksum

    for cell in nb.cells:
        if "checksum" in cell.metadata.get("nbgrader", {}):
            cell.metadata.nbgrader["checksum"] = compute_checksum(cell)
