"""The website's build (courseware/website/) fails on what a reader would meet as a defect: a broken
link, a cell that raises, a missing reference; what it writes around the pages (the answers'
folds, the themes' words) is named in the page's language. Tiny sources, the course's Sphinx
configuration."""

from __future__ import annotations

import os
import re
import subprocess

import nbformat
import pytest

from courseware import website
from courseware.repository import HERE

# Part of `make test-site` (each build starts a kernel: about half a minute in all).
pytestmark = [
    pytest.mark.xdist_group("site"),
    pytest.mark.skipif(
        not os.environ.get("FXCOURSE_SITE_TEST"), reason="the website is tested by make test-site"
    ),
]
PAGE = "# Start\n\n```{toctree}\nchapter\n```\n"


def build(tmp_path, index: str, cell: str = "print(1 + 1)", language: str = "en", answer=None):
    src = tmp_path / "src"
    src.mkdir()
    (src / "index.md").write_text(index)
    kernel = {"name": "fx-course", "display_name": "fx-course", "language": "python"}
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": kernel})
    nb.cells = [nbformat.v4.new_markdown_cell("# Chapter"), nbformat.v4.new_code_cell(cell)]
    if answer is not None:
        nb.cells.append(answer)
    nbformat.write(nb, src / "chapter.ipynb")
    command = website.sphinx_command(src, tmp_path / "out", tmp_path / "build", language)
    return subprocess.run(command, capture_output=True, text=True, cwd=HERE.root)


def test_a_clean_page_builds(tmp_path):
    result = build(tmp_path, PAGE)
    assert result.returncode == 0, result.stderr
    assert "2" in (tmp_path / "out" / "chapter.html").read_text()


@pytest.mark.parametrize(
    "index, cell, complaint",
    [
        (PAGE + "\nSee [the missing chapter](missing.ipynb).\n", "1", "missing"),
        (PAGE + "\nSee {ref}`no-such-label`.\n", "1", "no-such-label"),
        (PAGE, "raise RuntimeError('a broken cell')", "a broken cell"),
    ],
    ids=["broken link", "missing reference", "cell error"],
)
def test_the_build_fails_and_says_why(tmp_path, index, cell, complaint):
    result = build(tmp_path, index, cell)
    assert result.returncode != 0
    assert complaint in result.stderr + result.stdout


def folded_answer() -> nbformat.NotebookNode:
    """A reference answer as courseware.website.site_chapter folds it."""
    cell = nbformat.v4.new_code_cell("answer = 42")
    cell.metadata["tags"] = ["hide-cell"]
    cell.metadata["mystnb"] = {"code_prompt_show": "Show it", "code_prompt_hide": "Hide it"}
    return cell


def test_an_answer_s_fold_is_named_by_its_visible_label(tmp_path):
    """MyST-NB's fold carries aria-label="Toggle hidden content", which a screen reader says
    instead of "Show a reference answer" (WCAG 2.5.3): the site's fold has no such label."""
    result = build(tmp_path, PAGE, answer=folded_answer())
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "out" / "chapter.html").read_text()
    summary = re.search(r"<summary[^>]*>(.*?)</summary>", page, re.S)
    assert summary and summary.group(0).startswith("<summary>"), summary
    assert "Show it" in summary.group(1) and "Hide it" in summary.group(1)
    assert "Toggle hidden content" not in page
    assert re.search(r'<button class="[^"]*search-button-field[^"]*"(?![^>]*aria-label)', page)


def test_a_table_labelling_its_rows_gets_row_headers(tmp_path):
    """A table whose top-left header cell is empty names its rows by their first cell: those
    cells are headers, so every data cell has a header in its row (axe: td-has-header)."""
    table = "| | Interpreter | rewrite |\n| --- | --- | --- |\n| runs | yes | no |\n"
    plain = "| kind | method |\n| --- | --- |\n| placeholder | placeholder |\n"
    result = build(tmp_path, PAGE + "\n" + table + "\n\ntext\n\n" + plain)
    assert result.returncode == 0, result.stderr
    index = (tmp_path / "out" / "index.html").read_text()
    assert re.search(r'<th class="stub">\s*<p>runs</p>', index), index
    assert re.search(r"<td>\s*<p>placeholder</p>", index)  # a table with a full header row


def test_the_chinese_edition_s_chrome_is_chinese(tmp_path):
    """The themes' words a Chinese reader meets on every page, in the site's own Chinese."""
    section = nbformat.v4.new_markdown_cell("## 一节")  # so that the print-only contents show
    result = build(tmp_path, PAGE, language="zh", answer=section)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "out" / "chapter.html").read_text()
    chinese = ("颜色模式", "跟随系统", "打印为 PDF", "显示或隐藏侧边栏", 'placeholder="搜索..."')
    for words in chinese:
        assert words in page, words
    for english in ("Color mode", "System Settings", "列印", "Toggle primary", "Search..."):
        assert english not in page, english
    assert 'aria-label="课程页面"' in page and 'aria-label="语言"' in page
    assert 'aria-label="本页目录"' in page and 'aria-label="Page"' not in page  # print contents
    assert 'hreflang="en" lang="en">English</a>' in page
