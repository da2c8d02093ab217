"""The learner's workspace: copies made once, updates that never overwrite the learner's work."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from fxcourse import workspace

ROOT = Path(__file__).resolve().parents[1]


def _write_chapter(folder: Path, name: str, code: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=[new_code_cell(code)]), folder / name)


def _source(path: Path) -> str:
    return nbformat.read(path, as_version=4).cells[0].source


def test_sync_copies_once_then_updates_only_what_the_learner_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("FXCOURSE_EXCHANGE", str(tmp_path / "exchange"))
    course, mine = tmp_path / "course", tmp_path / "workspace"
    _write_chapter(course / "chapters", "01_a.ipynb", "a = 1")
    _write_chapter(course / "chapters", "02_b.ipynb", "b = 1")
    _write_chapter(course / "chapters" / "exercises", "ex1.ipynb", "e = 1")
    first = workspace.sync(mine, course)
    assert sorted(first.copied) == ["01_a.ipynb", "02_b.ipynb", "exercises/ex1.ipynb"]
    assert workspace.sync(mine, course).lines() == []

    _write_chapter(mine, "02_b.ipynb", "b = 'my answer'")  # the learner's work
    _write_chapter(course / "chapters", "01_a.ipynb", "a = 2")  # course updates
    _write_chapter(course / "chapters", "02_b.ipynb", "b = 2")
    _write_chapter(course / "chapters", "03_c.ipynb", "c = 1")  # a new chapter
    report = workspace.sync(mine, course)
    assert (report.copied, report.updated, report.kept) == (
        ["03_c.ipynb"],
        ["01_a.ipynb"],
        ["02_b.ipynb"],
    )
    assert _source(mine / "01_a.ipynb") == "a = 2"
    assert _source(mine / "02_b.ipynb") == "b = 'my answer'"
    assert any("newer version" in line for line in report.lines())

    (mine / "02_b.ipynb").rename(mine / "02_b_mine.ipynb")  # how a learner takes the update
    assert workspace.sync(mine, course).copied == ["02_b.ipynb"]
    assert _source(mine / "02_b.ipynb") == "b = 2"
    assert _source(mine / "02_b_mine.ipynb") == "b = 'my answer'"


def test_sync_points_nbgrader_at_the_exchange_and_creates_it(tmp_path, monkeypatch):
    exchange = tmp_path / "shared" / "exchange"
    monkeypatch.setenv("FXCOURSE_EXCHANGE", str(exchange))
    workspace.sync(tmp_path / "ws", ROOT)
    assert exchange.is_dir() and exchange.stat().st_mode & 0o777 == 0o777
    config = (tmp_path / "ws" / "nbgrader_config.py").read_text()
    assert f"c.Exchange.root = {str(exchange)!r}" in config
    assert "c.CourseDirectory.course_id = 'fx-course'" in config
    manifest = json.loads((tmp_path / "ws" / workspace.MANIFEST).read_text())
    assert set(manifest) == set(workspace.course_notebooks(ROOT))


def test_the_default_workspace_is_ignored_by_git():
    for path in ("workspace/01_symbolic_tracing.ipynb", "workspace/exercises/ex1.ipynb"):
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
        assert ignored.returncode == 0, f"{path} is not git-ignored"
