"""The website's build (fxcourse/website/) fails on what a reader would meet as a defect: a broken
link, a cell that raises, a missing reference. Tiny sources, the course's Sphinx configuration."""

from __future__ import annotations

import os
import subprocess

import nbformat
import pytest

from fxcourse import website

# Part of `make test-site` (each build starts a kernel: about half a minute in all).
pytestmark = [
    pytest.mark.xdist_group("site"),
    pytest.mark.skipif(
        not os.environ.get("FXCOURSE_SITE_TEST"), reason="the website is tested by make test-site"
    ),
]
PAGE = "# Start\n\n```{toctree}\nchapter\n```\n"


def build(tmp_path, index: str, cell: str = "print(1 + 1)"):
    src = tmp_path / "src"
    src.mkdir()
    (src / "index.md").write_text(index)
    kernel = {"name": "fx-course", "display_name": "fx-course", "language": "python"}
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": kernel})
    nb.cells = [nbformat.v4.new_markdown_cell("# Chapter"), nbformat.v4.new_code_cell(cell)]
    nbformat.write(nb, src / "chapter.ipynb")
    command = website.sphinx_command(src, tmp_path / "out", tmp_path / "build", "en")
    return subprocess.run(command, capture_output=True, text=True, cwd=website.ROOT)


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
