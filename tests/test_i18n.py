"""The Chinese edition: every learner text translated and current, code never changed, and a
changed English sentence reported by name (courseware/i18n/, courseware/locale/README.md)."""

from __future__ import annotations

import io
import tokenize

import nbformat
import pytest

from courseware import authoring, i18n
from courseware.i18n.catalogs import KIND_NOTES
from courseware.repository import HERE, Repository
from fxcourse import languages

DOCUMENTS = [doc for doc in i18n.documents() if doc.path.suffix == ".ipynb"]


def test_every_learner_text_is_translated_and_current():
    problems = [
        p for language in languages.translation_codes() for p in i18n.all_problems(language)
    ]
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
    for language in languages.translation_codes():
        translated = document.translated(language)
        assert len(translated.cells) == len(english.cells)
        for index, (before, after) in enumerate(zip(english.cells, translated.cells, strict=True)):
            assert before.cell_type == after.cell_type
            if before.cell_type == "code":
                assert code_tokens(after.source) == code_tokens(before.source), (
                    f"{document.name} cell {index}: the {language} translation changed its code"
                )


@pytest.mark.parametrize("language", languages.translation_codes())
def test_no_answer_reaches_a_translated_learner_chapter(language):
    checked = 0
    for document in DOCUMENTS:
        if document.path.parent != HERE.sources:
            continue
        learner = (HERE.chapters / language / document.path.name).read_text()
        for cell in document.translated(language).cells:
            marker = authoring.tryit_of(cell)
            if marker and marker[1] == "answer":
                assert cell.source.strip() not in learner, f"answer {marker[0]} in {language}"
                checked += 1
    assert checked > 10, "no try-it answers found: is the chapter list right?"


@pytest.fixture
def course(tmp_path):
    """A repository whose catalogs are in tmp_path: the course's own are never written."""
    return Repository(tmp_path, catalogs=tmp_path / "locale", runtime_catalogs=tmp_path / "rt")


def texts(*sentences: str) -> list[i18n.Text]:
    return [i18n.Text(index, "markdown", text) for index, text in enumerate(sentences)]


def save(name: str, catalog, course: Repository) -> None:
    path = i18n.catalog_path(name, "zh", course)
    path.parent.mkdir(parents=True, exist_ok=True)
    catalog.save(str(path))


def test_a_changed_sentence_is_reported_with_its_old_translation_kept(course):
    old = texts("Nodes form a graph.", "A pass rewrites a graph in place.")
    save("chapter", i18n.merged_catalog("chapter", "zh", old, course), course)
    i18n.fill("chapter", "zh", {"Nodes form a graph.": "节点构成图。"}, course)
    i18n.fill("chapter", "zh", {"A pass rewrites a graph in place.": "pass 原地改写图。"}, course)
    assert i18n.problems("chapter", "zh", old, course) == []

    new = texts("Nodes form a graph.", "A pass rewrites a graph, often in place.", "New text.")
    save("chapter", i18n.merged_catalog("chapter", "zh", new, course), course)
    problems = i18n.problems("chapter", "zh", new, course)
    assert len(problems) == 2, problems
    assert "fuzzy" in problems[0] and "A pass rewrites a graph, often" in problems[0]
    assert "missing" in problems[1] and "New text." in problems[1]
    entry = {e.msgid: e for e in i18n.load_catalog("chapter", "zh", course)}
    assert entry["A pass rewrites a graph, often in place."].msgstr == "pass 原地改写图。"
    assert i18n.lookup_of("chapter", "zh", course) == {"Nodes form a graph.": "节点构成图。"}


def test_a_text_moved_to_another_document_keeps_its_translation(course):
    save(
        "old", i18n.merged_catalog("old", "zh", texts("Guards decide recompiles."), course), course
    )
    i18n.fill("old", "zh", {"Guards decide recompiles.": "守卫决定是否重新编译。"}, course)
    moved = i18n.merged_catalog("new", "zh", texts("Guards decide recompiles."), course)
    assert [e.msgstr for e in moved] == ["守卫决定是否重新编译。"]


def test_a_string_literal_must_stay_a_literal_with_its_placeholders(course):
    literal = 'f"you returned {got!r}, want {want!r}"'
    found = [i18n.Text(3, "string", literal)]
    save("chapter", i18n.merged_catalog("chapter", "zh", found, course), course)
    i18n.fill("chapter", "zh", {literal: 'f"你返回了 {got!r}，应为 {wanted}"'}, course)
    assert "with the same {...}" in " ".join(i18n.problems("chapter", "zh", found, course))
    i18n.fill("chapter", "zh", {literal: 'f"你返回了 {got!r}，应为 {want!r}"'}, course)
    assert i18n.problems("chapter", "zh", found, course) == []


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


@pytest.mark.parametrize("language", languages.translation_codes())
def test_every_glossary_term_has_its_one_translation(language):
    problems = i18n.vocabulary_problems(language)
    shown = "\n".join(problems[:40])
    assert not problems, f"{len(problems)} entries depart from glossary.tsv:\n{shown}"


@pytest.mark.parametrize("language", languages.translation_codes())
def test_no_translation_breaks_a_line_or_puts_a_space_between_two_cjk_characters(language):
    problems = i18n.line_break_problems(language)
    shown = "\n".join(problems[:20])
    assert not problems, f"{len(problems)} entries (python -m courseware.i18n join-lines):\n{shown}"


@pytest.mark.parametrize(
    "broken, joined",
    [
        ("第一行\n第二行", "第一行第二行"),
        ("列表项的\n  续行", "列表项的续行"),  # list indentation after the break
        ("加粗**\n之后", "加粗**之后"),  # an emphasis marker before it
        ("之前\n*强调*", "之前*强调*"),  # and after it
        ("- 一项\n  * 子项", "- 一项\n  * 子项"),  # a nested item stays one
        ("一句。\n\n另一段", "一句。\n\n另一段"),  # a paragraph stays one
    ],
)
def test_a_break_that_shows_as_a_space_is_found_and_joined(broken, joined):
    assert bool(i18n.BREAK_BETWEEN_CJK.search(broken)) == (broken != joined)
    assert i18n.joined_lines(broken) == joined


def test_a_glossary_row_can_hold_in_the_catalogs_where_its_english_has_that_sense(tmp_path):
    from courseware.i18n import vocabulary

    row = "scale|scales\t缩放因子\t缩放系数\t11_quantization|08_practice\n"
    (tmp_path / "zh").mkdir()
    (tmp_path / "zh" / "glossary.tsv").write_text(row, encoding="utf-8")
    [term] = vocabulary.glossary("zh", Repository(tmp_path, catalogs=tmp_path))
    assert term.catalogs == ("11_quantization", "08_practice")
    assert term.holds_in("08_practice") and not term.holds_in("01_tracing")
    assert i18n.term_problems('"scales"', '"缩放系数"', [term])  # where it holds, it is checked


GLOSSARY = [
    i18n.Term(("opcode", "opcodes"), "操作码", ("节点类型",)),
    i18n.Term(("rewrite",), "重写", ("改写",)),
    i18n.Term(("override", "Override"), "覆盖", ("重写",)),
    i18n.Term(("graph break", "graph breaks"), "图中断", ()),
    i18n.Term(("kernel", "kernels"), "kernel", ("内核",)),
    i18n.Term(("this kernel", "Jupyter kernel"), "内核", ()),
    i18n.Term(("cell", "cells"), "单元格", ("单元",)),
]


@pytest.mark.parametrize(
    "english, translated, complaint",
    [
        ("The opcode says what a node does.", "节点类型说明节点。", "not translated as '操作码'"),
        ("The opcode says what a node does.", "opcode 说明节点。", "left in English"),
        ("Override `run_node`.", "重写 `run_node`。", "'override' translated as '重写'"),
        # a term whose English is split across a line break is still the term
        ("A graph\nbreak splits the frame.", "中断会切开帧。", "not translated as '图中断'"),
        ("Each graph\n  break splits it.", "每个 graph break 都会切开它。", "left in English"),
        ("Inductor writes one\nkernel.", "Inductor 写出一个内核。", "translated as '内核'"),
        ("Run the next cell.", "运行下一个单元。", "'cell' translated as '单元'"),
        # a printed string literal is read inside its quotes, its {placeholders} left out
        ('f"{count} graph breaks"', 'f"{count} 个 graph break"', "left in English"),
        ('"the kernel ran"', '"内核运行了"', "translated as '内核'"),
        # one form for a section reference
        ("As before (section 7.5).", "和之前一样（7.5 节）。", "is not written '（见 7.5 节）'"),
        ("Compare (sections 2.3 and 2.5).", "比较一下（2.3 和 2.5 节）。", "'（见 2.3、2.5 节）'"),
        (
            "It is (chapter 7, section 7.4).",
            "它是（第 7 章 7.4 节）。",
            "not written '（见 7.4 节）'",
        ),
    ],
)
def test_the_glossary_check_names_a_term_translated_another_way(english, translated, complaint):
    problems = i18n.term_problems(english, translated, GLOSSARY)
    assert any(complaint in problem for problem in problems), problems


@pytest.mark.parametrize(
    "english, translated",
    [
        ("The opcode says what a node does.", "操作码（opcode）说明节点做什么。"),
        ("Read `node.op`, the opcode.", "读取 `node.op`，即操作码。"),
        ("First rewrite the graph, then override `f`.", "先重写图，再覆盖 `f`。"),
        ("Call `opcode_counts`.", "调用 `opcode_counts`。"),
        # a term of art kept in English is its own form; a longer term hides the shorter one
        ("Inductor fuses them into one kernel.", "Inductor 把它们融合进一个 kernel。"),
        ("Objects defined again in this kernel are new.", "在本内核中重新定义的对象是新的。"),
        ("Restart the Jupyter\nkernel, then run the kernel again.", "重启内核，再运行 kernel。"),
        ("As before (section 7.5).", "和之前一样（见 7.5 节）。"),
        ("Run the next cell.", "运行下一个单元格。"),  # a wrong form inside the right one
        ('f"{kernel}: fused"', 'f"{kernel}：已融合"'),  # a placeholder is code
        ('"opcode.upper() ran"', '"opcode.upper() 运行了"'),  # so is an attribute access
    ],
)
def test_the_glossary_check_accepts_the_term_glossed_or_in_code(english, translated):
    assert i18n.term_problems(english, translated, GLOSSARY) == []


@pytest.mark.parametrize(
    "spaced, closed",
    [
        ("它也使用 批统计量。", "它也使用批统计量。"),
        ("就是一个 **图中断**：", "就是一个**图中断**："),  # before an opening marker
        ("用**当前这一批** 的均值", "用**当前这一批**的均值"),  # after a closing one
        ("是 *你的* 代码", "是*你的*代码"),
        ("**目标。** 学完本章", "**目标。** 学完本章"),  # CommonMark needs it after punctuation
        ("先 *quantize*（量化）", "先 *quantize*（量化）"),  # beside English it stays
        ("批大小为 **1** 的调用", "批大小为 **1** 的调用"),  # and beside a number
        ("毫秒  最大误差", "毫秒  最大误差"),  # two spaces pad a printed column
        ("`# 第一 第二` 之后 再", "`# 第一 第二` 之后再"),  # code is code
        ("其中的 “Debugging” 两节", "其中的“Debugging”两节"),  # beside full-width quotes
        ("见 `run` 的 （私有） 参数", "见 `run` 的（私有）参数"),  # and brackets
        ("“Debugging”  两节", "“Debugging”  两节"),  # two spaces still pad a column
    ],
)
def test_a_space_that_shows_between_two_chinese_characters_is_found_and_closed(spaced, closed):
    assert i18n.closed_spaces(spaced) == closed


def test_no_line_break_is_left_inside_a_chinese_paragraph():
    text = "第一行的末尾\n接着第二行，\n`code` 之前\nand English\n后面"
    assert i18n.joined_lines(text) == "第一行的末尾接着第二行，`code` 之前 and English 后面"


@pytest.mark.parametrize(
    "broken, joined",
    [
        ("对象把 `forward`\n运行一遍", "对象把 `forward` 运行一遍"),  # code, then Chinese
        ("返回一个 GraphModule\n（返回 `gm`）", "返回一个 GraphModule（返回 `gm`）"),  # no space
        ("就通过\n**Assignments** 标签页", "就通过 **Assignments** 标签页"),  # Chinese, then Latin
        ("它的 API\n  可能会变", "它的 API 可能会变"),  # list indentation after the break
        ("于是\n$y_c = s_c z_c$。", "于是 $y_c = s_c z_c$。"),  # and before math
        ("函数、\n`torch` 函数", "函数、`torch` 函数"),  # after punctuation: no space
        ("是 `None`：\nAOTAutograd 在", "是 `None`：AOTAutograd 在"),  # nor before Latin text
        ("中文：**\n[第 1 章](a)", "中文：**[第 1 章](a)"),  # an emphasis marker between
        ("文档：\n  [IRs](a)、\n  [Dim](b)", "文档：[IRs](a)、[Dim](b)"),  # list indentation
        ("步骤如下。\n1. 第一步", "步骤如下。\n1. 第一步"),  # a numbered item stays one
        ("见下文。\n2.6 节", "见下文。2.6 节"),  # a section number is not an item
        ("公式如下：\n$$y = x$$", "公式如下：\n$$y = x$$"),  # display math keeps its line
        ("如下：\n- `a` 一项\n- 另一项", "如下：\n- `a` 一项\n- 另一项"),  # a list stays
        ("代码\n```python\nx = 1  # 注释\ny\n```", "代码\n```python\nx = 1  # 注释\ny\n```"),
    ],
)
def test_a_break_beside_code_or_latin_text_is_found_and_joined(broken, joined):
    assert i18n.joined_lines(broken) == joined


def test_lines_of_a_docstring_or_a_diagram_label_stay_lines():
    import polib

    notes = KIND_NOTES
    label = polib.POEntry(msgid="your model\n(Python code)", msgstr="你的模型\n（Python 代码）")
    label.comment = notes["message"]
    docstring = polib.POEntry(msgid='"""a\n    f(x)"""', msgstr='"""一个\n    f(x)"""')
    docstring.comment = notes["string"]
    prose = polib.POEntry(msgid="Run `f`\nnow.", msgstr="现在运行 `f`\n一遍。")
    prose.comment = notes["markdown"]
    assert [i18n.joined_entry(e) for e in (label, docstring, prose)] == [
        "你的模型\n（Python 代码）",
        '"""一个\n    f(x)"""',
        "现在运行 `f` 一遍。",
    ]


MODULES = [doc for doc in i18n.documents() if doc.path.suffix == ".py"]


@pytest.mark.parametrize("document", MODULES, ids=lambda d: d.name)
def test_a_translated_verify_module_keeps_its_code(document):
    assert MODULES, "no module beside an exercise is translated"
    english = document.read()
    for language in languages.translation_codes():
        translated = document.translated(language)
        compile(translated, str(document.path), "exec")
        assert code_tokens(translated) == code_tokens(english), document.name
        assert translated != english, f"{document.name}: nothing translated"


def test_a_chinese_learner_reads_the_exercise_checks_in_chinese():
    import importlib.util

    path = HERE.chapters / "zh" / "exercises" / "ex1_sigmoid_to_tanh" / "verify.py"
    spec = importlib.util.spec_from_file_location("verify_zh", path)
    verify = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(verify)
    with pytest.raises(AssertionError, match="应返回 GraphModule，而不是 Tensor"):
        verify.check_returns_module("Tensor")


def test_validate_explains_a_wrong_answer_in_chinese(tmp_path):
    """A Chinese learner's Validate on exercise 2 with a typical mistake (a function target
    written with str()): the visible test's message comes from the translated verify.py."""
    import shutil
    import subprocess
    import sys

    exercise = tmp_path / "ex2_node_dump"
    shutil.copytree(HERE.chapters / "zh" / "exercises" / exercise.name, exercise)
    config = f"load_subconfig({str(HERE.root / 'nbgrader_config.py')!r})  # noqa: F821\n"
    (tmp_path / "nbgrader_config.py").write_text(config)
    path = exercise / "ex2_node_dump.ipynb"
    nb = nbformat.read(path, as_version=4)
    stub = next(
        c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "dump_nodes"
    )
    stub.source = stub.source.replace("raise NotImplementedError()", WRONG_DUMP)
    nbformat.write(nb, path)
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", "validate", f"{exercise.name}/{path.name}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = result.stdout + result.stderr
    assert "target 应为 'operator.add'，实际得到 '<built-in function add>'" in output, output[
        -3000:
    ]


WRONG_DUMP = """return [
        {
            "name": node.name,
            "op": node.op,
            "target": str(node.target),
            "args": node.args,
            "kwargs": node.kwargs,
            "users": [user.name for user in node.users],
            "refers_to": None,
        }
        for node in gm.graph.nodes
    ]"""


def test_the_staleness_check_covers_the_translated_verify_modules():
    derived = authoring.translated_files("zh")
    modules = sorted(HERE.chapters.glob("zh/exercises/*/verify.py"))
    assert len(modules) == 3, modules
    for path in modules:
        assert path in derived, f"{path} is not derived: a hand edit would go unnoticed"
        english = HERE.chapters / "exercises" / path.parent.name / "verify.py"
        assert derived[path] != english.read_text(), f"{path}: not translated"


@pytest.mark.parametrize(
    "written, quoted",
    [
        ('抛出 "Data dependent operator"。', "抛出“Data dependent operator”。"),  # and no gap
        ('见 `print("a b")` 一行', '见 `print("a b")` 一行'),  # code keeps its quotes
        ('见 [页](https://x.org/a "标题")', '见 [页](https://x.org/a "标题")'),  # so does a link
        ('<img alt="图" src="a.png">', '<img alt="图" src="a.png">'),  # and an HTML attribute
    ],
)
def test_prose_quotes_english_in_the_languages_own_marks(written, quoted):
    import polib

    entry = polib.POEntry(msgid="x", msgstr=written)
    entry.comment = KIND_NOTES["markdown"]
    assert i18n.joined_entry(entry, languages.get("zh").quotes) == quoted
    entry.comment = KIND_NOTES["string"]  # a string literal's quotes are code
    assert i18n.joined_entry(entry, languages.get("zh").quotes) == i18n.closed_spaces(written)
