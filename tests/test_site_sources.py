"""What courseware.website writes before Sphinx runs (no build, no kernel: part of `make test`):
the cache key that re-runs a page when a helper changes, the themes' words in each language."""

from __future__ import annotations

import shutil

import nbformat
import polib

from courseware import website
from courseware.repository import HERE, Repository


def test_a_changed_helper_re_runs_every_page(tmp_path):
    """The execution cache is keyed by a page's code: the helpers' digest is part of it, so a
    changed picture or message reaches the site without a chapter changing."""
    course = Repository(tmp_path)
    shutil.copytree(HERE.package, course.package, ignore=shutil.ignore_patterns("__pycache__"))
    before = website.helpers_digest("en", course)
    assert before == website.helpers_digest("en", course) == website.helpers_digest("en")
    assert before != website.helpers_digest("zh", course)
    graphs = course.package / "graphs.py"
    graphs.write_text(graphs.read_text() + "\\n# a changed picture\\n")
    assert website.helpers_digest("en", course) != before

    chapter = nbformat.v4.new_notebook()
    chapter.cells = [nbformat.v4.new_markdown_cell("# Chapter"), nbformat.v4.new_code_cell("1")]
    page = website.site_chapter(chapter, "0123abcd")
    hidden = [cell for cell in page.cells if "0123abcd" in cell.source]
    assert len(hidden) == 1 and hidden[0].metadata["tags"] == ["remove-cell"]


def test_the_theme_s_words_are_written_for_each_translation(tmp_path):
    assert website.theme_catalogs(tmp_path / "en", "en") is None
    folder = website.theme_catalogs(tmp_path / "zh", "zh")
    for domain in website.THEME_CATALOGS:
        catalog = polib.mofile(str(folder / "zh_CN" / "LC_MESSAGES" / f"{domain}.mo"))
        words = {entry.msgid: entry.msgstr for entry in catalog}
        assert words["Print to PDF"] == "打印为 PDF" and words["System Settings"] == "跟随系统"
        assert all(words.values()) and len(words) == len(website.theme_words())


def test_a_translated_exercise_page_hides_its_language_cell():
    """The starter's language cell sets up fxcourse's messages; the page shows the task."""

    starter = HERE.chapters / "zh" / "exercises" / "ex1_sigmoid_to_tanh"
    page = website.site_exercise(nbformat.read(starter / f"{starter.name}.ipynb", as_version=4))
    hidden = [cell for cell in page.cells if "use_language" in cell.source]
    assert len(hidden) == 1 and hidden[0].metadata["tags"] == ["remove-cell"]
