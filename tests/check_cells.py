"""A chapter's check cell run as a test runs it: the source notebook's cells, and the checkpoint's
result handed to the test instead of drawn on the screen."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import nbformat

from courseware import authoring
from fxcourse import tryit

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"


@cache
def solution(stem: str) -> nbformat.NotebookNode:
    """The instructor's source notebook `solutions/<stem>.ipynb`."""
    return nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)


def check_source(stem: str, tryit_id: str) -> str:
    """The source of try-it `tryit_id`'s check cell in chapter `stem`."""
    nb = solution(stem)
    (index,) = authoring.tryits(nb)[tryit_id]["check"]
    return nb.cells[index].source


def code_cell_starting(stem: str, start: str) -> str:
    """The one code cell of chapter `stem` whose source starts with `start`."""
    (source,) = [
        cell.source
        for cell in solution(stem).cells
        if cell.cell_type == "code" and cell.source.startswith(start)
    ]
    return source


def judged(check: str, namespace: dict, monkeypatch) -> tryit.CheckpointResult:
    """Run the check cell `check` in `namespace`: its one result, neither shown nor recorded."""
    shown = []
    monkeypatch.setattr(tryit, "_display", shown.append)
    monkeypatch.setattr(tryit, "record_tryit", lambda *args: None)
    exec(compile(check, "check", "exec"), namespace)  # noqa: S102
    (result,) = shown
    return result


def cells_until(stem: str, names: set[str]) -> dict:
    """A namespace holding chapter `stem`'s code cells outside its try-its, run in order until
    `names` are all defined."""
    namespace: dict = {"__name__": "chapter"}
    for cell in solution(stem).cells:
        if cell.cell_type == "code" and "tryit" not in cell.metadata:
            exec(compile(cell.source, stem, "exec"), namespace)  # noqa: S102
        if names <= namespace.keys():
            return namespace
    raise LookupError(f"{stem} never defines {sorted(names - namespace.keys())}")
