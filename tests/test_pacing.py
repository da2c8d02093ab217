"""Every learner chapter stays a sitting's reading: at most 90 cells and 3,300 words of prose.

Depth that needs more room goes into a chapter of its own (chapters 10 and 11 were split off this
way). Words are counted in the markdown cells of the learner chapter, as a reader meets them.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
MAX_CELLS = 90
MAX_WORDS = 3300


def prose_words(nb: nbformat.NotebookNode) -> int:
    return sum(len(re.findall(r"\S+", c.source)) for c in nb.cells if c.cell_type == "markdown")


def test_there_are_chapters():
    assert len(CHAPTERS) >= 9, [p.name for p in CHAPTERS]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_is_paced(path: Path):
    nb = nbformat.read(path, as_version=4)
    assert len(nb.cells) <= MAX_CELLS, f"{path.name}: {len(nb.cells)} cells (at most {MAX_CELLS})"
    words = prose_words(nb)
    assert words <= MAX_WORDS, f"{path.name}: {words} words of prose (at most {MAX_WORDS})"


def test_prose_words_counts_markdown_only():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("Two words"),
            nbformat.v4.new_code_cell("x = not counted at all"),
        ]
    )
    assert prose_words(nb) == 2
