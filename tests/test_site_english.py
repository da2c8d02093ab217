"""No English of the course's own in what a Chinese chapter prints (issue 37): every executed
Chinese page of the built site is read, output by output, and an English sentence found there
fails when the course wrote it.

"The course wrote it" is decided against the course's own English: the string constants of the
chapters' code, of fxcourse and of the exercises' checks. A sentence that shares four words in a
row with one of them came from the course (a label left untranslated, a message assembled from
pieces); what a library prints (a torch error quoted word for word) shares none and is left alone,
as are code, printed source and reprs (english_prose). Runs in `make test-site`, after the build
has executed every chapter.

The site shows each chapter with its reference answers in place; a learner first meets it with
blanks, where each checkpoint says "Not yet" with a hint, and meets an exercise with its stubs,
whose visible tests fail. So every Chinese chapter and exercise is also executed as a learner gets
it (FXCOURSE_LANGUAGE=zh, every cell run even after an error) and read the same way: printed text,
messages, tracebacks' messages, and the text alternatives and drawn text of its pictures.
"""

from __future__ import annotations

import ast
import base64
import html
import html.parser
import json
import os
import re
import struct
from pathlib import Path

import pytest
from english_prose import english_sentences, output_prose, printed_prose

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("FXCOURSE_SITE", ROOT / "dist" / "site"))
WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
RUN = 4

pytestmark = pytest.mark.skipif(
    not os.environ.get("FXCOURSE_SITE_TEST"), reason="the website is tested by make test-site"
)


def word_runs(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in WORD.findall(text)]
    return {tuple(words[i : i + RUN]) for i in range(len(words) - RUN + 1)}


def constants(source: str) -> list[str]:
    """The text of every str constant in Python source (f-strings' constant pieces too), but
    docstrings."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    docstrings = {
        id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)
    }  # a docstring or a bare string explains the code; nothing prints it
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def course_sources() -> list[str]:
    sources = [p.read_text(encoding="utf-8") for p in (ROOT / "fxcourse").rglob("*.py")]
    sources += [p.read_text(encoding="utf-8") for p in (ROOT / "solutions").rglob("*.py")]
    for notebook in (ROOT / "solutions").rglob("*.ipynb"):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        sources += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return sources


def course_english() -> set[tuple[str, ...]]:
    return {
        run for source in course_sources() for text in constants(source) for run in word_runs(text)
    }


class OutputText(html.parser.HTMLParser):
    """The text of each cell output of a myst-nb page (div.cell_output), one string per output."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.outputs = 0, []

    def handle_starttag(self, tag, attrs):
        if tag != "div":
            return
        if self.depth:
            self.depth += 1
        elif "cell_output" in (dict(attrs).get("class") or ""):
            self.depth = 1
            self.outputs.append("")

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.outputs[-1] += data


def outputs_of(page: Path) -> list[str]:
    parser = OutputText()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.outputs


def course_english_in(text: str, known: set[tuple[str, ...]]) -> list[str]:
    return [s for s in english_sentences(printed_prose(text)) if word_runs(s) & known]


def test_the_scan_finds_the_course_s_english_and_leaves_a_library_s_alone():
    known = word_runs("a label the course forgot to translate")
    assert course_english_in("结果：a label the course forgot", known)
    assert not course_english_in("RuntimeError: the size of tensor a must match", known)
    assert not course_english_in("the size of tensor a must match the size of b", known)


def test_no_executed_chinese_page_prints_the_course_s_english():
    pages = sorted((SITE / "zh").glob("[0-9]*.html"))
    assert pages, f"no Chinese chapter pages in {SITE / 'zh'}: run make site"
    known = course_english()
    found = [
        f"{page.name}, output {index}: {sentence!r}"
        for page in pages
        for index, text in enumerate(outputs_of(page))
        for sentence in course_english_in(text, known)
    ]
    assert not found, "\n".join(found)


LEARNER_NOTEBOOKS = sorted((ROOT / "chapters" / "zh").glob("[0-9]*.ipynb")) + sorted(
    (ROOT / "chapters" / "zh" / "exercises").glob("*/*.ipynb")
)
ALT_TEXT = re.compile(r'\balt="([^"]*)"')
SVG_PICTURE = re.compile(r'src="data:image/svg\+xml;base64,([^"]+)"')
PNG_PICTURE = re.compile(r'src="data:image/png;base64,([^"]+)"')
SVG_TEXT = re.compile(r"<text\b[^>]*>([^<]*)</text>")


def png_description(png: bytes) -> str:
    """The Description text chunk (tEXt or iTXt) of a PNG: what fxcourse.charts writes there is
    the text the chart draws."""
    at, found = 8, []
    while at + 8 <= len(png):
        (length,), kind = struct.unpack(">I", png[at : at + 4]), png[at + 4 : at + 8]
        body = png[at + 8 : at + 8 + length]
        if kind in (b"tEXt", b"iTXt") and body.startswith(b"Description\0"):
            text = body.removeprefix(b"Description\0")
            if kind == b"iTXt":  # compression flag and method, language tag, translated keyword
                text = text[2:].split(b"\0", 2)[2]
            found.append(text.decode("utf-8" if kind == b"iTXt" else "latin-1"))
        at += 12 + length
    return " ".join(found)


def pictures_text(output: dict) -> list[str]:
    """The text alternatives of an output's pictures and the text drawn in its SVG and PNG ones
    (a chart's PNG carries its drawn text: fxcourse.charts)."""
    page = output.get("data", {}).get("text/html", "")
    page = "".join(page) if isinstance(page, list) else page
    found = [html.unescape(alt) for alt in ALT_TEXT.findall(page)]
    for picture in SVG_PICTURE.findall(page):
        drawn = SVG_TEXT.findall(base64.b64decode(picture).decode("utf-8", "replace"))
        found.append(html.unescape(" ".join(drawn)))
    pngs = PNG_PICTURE.findall(page) or [output.get("data", {}).get("image/png", "")]
    found += [png_description(base64.b64decode(png)) for png in pngs if png]
    return [text for text in found if text]


def test_the_learner_scan_reads_pictures_and_messages():
    svg = base64.b64encode(b'<svg><text x="1">a label the course</text><text>forgot</text></svg>')
    source = f"data:image/svg+xml;base64,{svg.decode()}"
    picture = f'<img alt="图：a title it forgot to translate" src="{source}">'
    output = {"output_type": "display_data", "data": {"text/html": picture}}
    assert pictures_text(output) == [
        "图：a title it forgot to translate",
        "a label the course forgot",
    ]
    known = word_runs("a label the course forgot") | word_runs("a title it forgot to")
    assert all(course_english_in(text, known) for text in pictures_text(output))


def test_a_charts_png_carries_the_words_it_draws():
    from fxcourse import charts

    chart = charts.horizontal_bars({"未融合": 3.0, "chapter fuser": 2.0}, "微秒", "图的标题")
    png = base64.b64decode(chart._repr_html_().split("base64,")[1].split('"')[0])
    drawn = png_description(png).split(" | ")
    assert {"未融合", "chapter fuser", "微秒", "图的标题", "3", "2"} <= set(drawn), drawn
    output = {"output_type": "display_data", "data": {"text/html": chart._repr_html_()}}
    assert png_description(png) in pictures_text(output)


@pytest.mark.parametrize("notebook", LEARNER_NOTEBOOKS, ids=lambda p: p.stem)
def test_no_chinese_learner_notebook_prints_the_course_s_english(notebook, monkeypatch):
    import nbclient
    import nbformat

    monkeypatch.setenv("FXCOURSE_LANGUAGE", "zh")
    nb = nbformat.read(notebook, as_version=4)
    resources = {"metadata": {"path": str(notebook.parent)}}
    client = nbclient.NotebookClient(
        nb, kernel_name="fx-course", timeout=300, allow_errors=True, resources=resources
    )
    client.execute()
    known = course_english()
    found = [
        f"cell {index}: {sentence!r}"
        for index, cell in enumerate(nb.cells)
        for output in cell.get("outputs", [])
        for text in (output_prose(output), *pictures_text(output))
        for sentence in course_english_in(text, known)
    ]
    assert not found, "\n".join(found)
