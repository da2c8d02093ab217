"""The Chinese edition: every learner text translated and current, code never changed, and a
changed English sentence reported by name (fxcourse/i18n.py, fxcourse/locale/README.md)."""

from __future__ import annotations

import io
import tokenize

import nbformat
import pytest

from fxcourse import authoring, i18n

DOCUMENTS = [doc for doc in i18n.documents() if doc.path.suffix == ".ipynb"]


def test_every_learner_text_is_translated_and_current():
    problems = [p for language in i18n.LANGUAGES for p in i18n.all_problems(language)]
    shown = "\n".join(problems[:40])
    assert not problems, f"{len(problems)} translations to do (make translations):\n{shown}"


def code_tokens(source: str) -> list[tuple[int, str]]:
    """The code without its comments and string literals: what translation must not change."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    kept = {tokenize.COMMENT, tokenize.STRING, tokenize.NL, tokenize.NEWLINE}
    return [(t.type, t.string) for t in tokens if t.type not in kept and t.string.strip()]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.name)
def test_translation_changes_no_code(document):
    english = document.read()
    for language in i18n.LANGUAGES:
        translated = document.translated(language)
        assert len(translated.cells) == len(english.cells)
        for index, (before, after) in enumerate(zip(english.cells, translated.cells, strict=True)):
            assert before.cell_type == after.cell_type
            if before.cell_type == "code":
                assert code_tokens(after.source) == code_tokens(before.source), (
                    f"{document.name} cell {index}: the {language} translation changed its code"
                )


@pytest.mark.parametrize("language", i18n.LANGUAGES)
def test_no_answer_reaches_a_translated_learner_chapter(language):
    checked = 0
    for document in DOCUMENTS:
        if document.path.parent != authoring.SOURCES:
            continue
        learner = (authoring.CHAPTERS / language / document.path.name).read_text()
        for cell in document.translated(language).cells:
            marker = authoring.tryit_of(cell)
            if marker and marker[1] == "answer":
                assert cell.source.strip() not in learner, f"answer {marker[0]} in {language}"
                checked += 1
    assert checked > 10, "no try-it answers found: is the chapter list right?"


@pytest.fixture
def catalogs(tmp_path, monkeypatch):
    monkeypatch.setattr(i18n, "LOCALES", tmp_path)
    return tmp_path


def texts(*sentences: str) -> list[i18n.Text]:
    return [i18n.Text(index, "markdown", text) for index, text in enumerate(sentences)]


def save(name: str, catalog) -> None:
    path = i18n.catalog_path(name, "zh")
    path.parent.mkdir(parents=True, exist_ok=True)
    catalog.save(str(path))


def test_a_changed_sentence_is_reported_with_its_old_translation_kept(catalogs):
    old = texts("Nodes form a graph.", "A pass rewrites a graph in place.")
    save("chapter", i18n.merged_catalog("chapter", "zh", old))
    i18n.fill("chapter", "zh", {"Nodes form a graph.": "节点构成图。"})
    i18n.fill("chapter", "zh", {"A pass rewrites a graph in place.": "pass 原地改写图。"})
    assert i18n.problems("chapter", "zh", old) == []

    new = texts("Nodes form a graph.", "A pass rewrites a graph, often in place.", "New text.")
    save("chapter", i18n.merged_catalog("chapter", "zh", new))
    problems = i18n.problems("chapter", "zh", new)
    assert len(problems) == 2, problems
    assert "fuzzy" in problems[0] and "A pass rewrites a graph, often" in problems[0]
    assert "missing" in problems[1] and "New text." in problems[1]
    entry = {e.msgid: e for e in i18n.load_catalog("chapter", "zh")}
    assert entry["A pass rewrites a graph, often in place."].msgstr == "pass 原地改写图。"
    assert i18n.lookup_of("chapter", "zh") == {"Nodes form a graph.": "节点构成图。"}


def test_a_text_moved_to_another_document_keeps_its_translation(catalogs):
    save("old", i18n.merged_catalog("old", "zh", texts("Guards decide recompiles.")))
    i18n.fill("old", "zh", {"Guards decide recompiles.": "守卫决定是否重新编译。"})
    moved = i18n.merged_catalog("new", "zh", texts("Guards decide recompiles."))
    assert [e.msgstr for e in moved] == ["守卫决定是否重新编译。"]


def test_a_string_literal_must_stay_a_literal_with_its_placeholders(catalogs):
    literal = 'f"you returned {got!r}, want {want!r}"'
    found = [i18n.Text(3, "string", literal)]
    save("chapter", i18n.merged_catalog("chapter", "zh", found))
    i18n.fill("chapter", "zh", {literal: 'f"你返回了 {got!r}，应为 {wanted}"'})
    assert "with the same {...}" in " ".join(i18n.problems("chapter", "zh", found))
    i18n.fill("chapter", "zh", {literal: 'f"你返回了 {got!r}，应为 {want!r}"'})
    assert i18n.problems("chapter", "zh", found) == []


def test_extraction_finds_prose_comments_and_checkpoint_messages():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(
            "# Title\n\nFirst paragraph,\nstill first.\n\n```python\nx = 1\n```"
        ),
        nbformat.v4.new_code_cell(
            'x = 1  # a comment\ngoal = "do it (section 1.2)"\n'
            'with checkpoint("1.1", goal) as check:\n'
            '    check(x == 1, f"x is {x}")'
        ),
    ]
    found = [(t.kind, t.text) for t in i18n.texts_of(nb)]
    assert found == [
        ("markdown", "# Title"),
        ("markdown", "First paragraph,\nstill first."),
        ("markdown", "```python\nx = 1\n```"),
        ("comment", "a comment"),
        ("string", '"do it (section 1.2)"'),
        ("string", 'f"x is {x}"'),
    ]
