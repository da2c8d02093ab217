"""The learner's workspace: copies made once, updates that never overwrite the learner's work."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from fxcourse import course_update, lab_link, languages, workspace
from grader import exercises as grader_exercises

ROOT = Path(__file__).resolve().parents[1]


def _write_chapter(folder: Path, name: str, *sources: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=[new_code_cell(code) for code in sources]), folder / name)


def _sources(path: Path) -> list[str]:
    return [cell.source for cell in nbformat.read(path, as_version=4).cells]


def _learners_sources(path: Path) -> list[str]:
    """The cells' text without the notice a sync puts at the top, which must be there."""
    notice, *cells = nbformat.read(path, as_version=4).cells
    assert notice.metadata.get(workspace.NOTICE_KEY), f"{path.name}: no notice of the update"
    assert notice.source.startswith("**Course update (")
    return [cell.source for cell in cells]


def _open_and_run(path: Path) -> None:
    """What opening a notebook and running it does: kernel metadata, outputs, counts."""
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata["language_info"] = {"name": "python", "version": "3.11.2"}
    for count, cell in enumerate(notebook.cells, 1):
        cell.execution_count = count
        cell.outputs = [nbformat.v4.new_output("stream", text=f"ran {count}\n")]
    nbformat.write(notebook, path)


def _edit(path: Path, index: int, source: str) -> None:
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[index].source = source
    nbformat.write(notebook, path)


def test_sync_updates_what_was_only_opened_and_merges_into_what_was_edited(tmp_path):
    course, mine = tmp_path / "course", tmp_path / "workspace"
    chapters = course / "chapters"
    _write_chapter(chapters, "01_a.ipynb", "a = 1", "a")
    _write_chapter(chapters, "02_b.ipynb", "b = 1", "b")
    _write_chapter(chapters, "03_c.ipynb", "c = 1", "c")
    _write_chapter(chapters / "exercises" / "ex1", "ex1.ipynb", "e = 1")
    (chapters / "exercises" / "ex1" / "verify.py").write_text("CHECK = 1\n")
    first = workspace.sync(mine, course)
    assert first.copied == [
        "01_a.ipynb",
        "02_b.ipynb",
        "03_c.ipynb",
        "exercises/ex1/ex1.ipynb",
        "exercises/ex1/verify.py",
    ]
    _open_and_run(mine / "01_a.ipynb")
    _edit(mine / "02_b.ipynb", 1, "b + 1  # mine")
    _edit(mine / "03_c.ipynb", 0, "c = 'my answer'")
    opened = (mine / "01_a.ipynb").read_bytes()
    assert workspace.sync(mine, course).lines() == [], "notices for notebooks nobody updated"
    assert (mine / "01_a.ipynb").read_bytes() == opened

    _write_chapter(chapters, "01_a.ipynb", "a = 2", "a")  # course updates
    _write_chapter(chapters, "02_b.ipynb", "b = 2", "b")
    _write_chapter(chapters, "03_c.ipynb", "c = 2", "c")
    _write_chapter(chapters, "04_d.ipynb", "d = 1")  # a new chapter
    report = workspace.sync(mine, course)
    assert (report.copied, report.updated, report.merged, report.kept) == (
        ["04_d.ipynb"],
        ["01_a.ipynb"],
        ["02_b.ipynb"],
        ["03_c.ipynb"],
    )
    assert _learners_sources(mine / "01_a.ipynb") == ["a = 2", "a"]
    assert _learners_sources(mine / "02_b.ipynb") == ["b = 2", "b + 1  # mine"]
    notice, *kept = nbformat.read(mine / "03_c.ipynb", as_version=4).cells
    assert [cell.source for cell in kept] == ["c = 'my answer'", "c"]
    assert notice.cell_type == "markdown" and "03_c.course-version.ipynb" in notice.source
    assert _sources(mine / "03_c.course-version.ipynb") == ["c = 2", "c"]
    assert workspace.sync(mine, course).lines() == []

    (mine / "exercises" / "ex1" / "verify.py").write_text("CHECK = 'mine'\n")  # the course's
    assert workspace.sync(mine, course).updated == ["exercises/ex1/verify.py"]
    assert (mine / "exercises" / "ex1" / "verify.py").read_text() == "CHECK = 1\n"

    (mine / "03_c.ipynb").rename(mine / "03_c_mine.ipynb")  # deleting or renaming: a fresh copy
    assert workspace.sync(mine, course).copied == ["03_c.ipynb"]
    assert _sources(mine / "03_c.ipynb") == ["c = 2", "c"]


def test_an_update_overwritten_by_an_open_lab_comes_back_at_the_next_sync(tmp_path):
    """JupyterLab's "File Changed: Overwrite" writes back the copy it had open before the sync
    (as an edited or an only-opened notebook); the next sync finds the update missing from it
    and delivers it again; once it is in the copy, syncs say nothing more. (A learner's edit
    after the Overwrite that collides with the update keeps their cell, as any collision does;
    only the course's version beside it is not made again.)"""
    course, mine = tmp_path / "course", tmp_path / "workspace"
    chapters = course / "chapters"
    _write_chapter(chapters, "01_a.ipynb", "a = 1", "a")
    _write_chapter(chapters, "02_b.ipynb", "b = 1", "b")
    workspace.sync(mine, course)
    _edit(mine / "02_b.ipynb", 1, "b + 1  # mine")
    open_in_lab = {name: (mine / name).read_bytes() for name in ("01_a.ipynb", "02_b.ipynb")}
    _write_chapter(chapters, "01_a.ipynb", "a = 2", "a")
    _write_chapter(chapters, "02_b.ipynb", "b = 2", "b")
    report = workspace.sync(mine, course)
    assert (report.updated, report.merged, report.again) == (["01_a.ipynb"], ["02_b.ipynb"], [])
    for name, old in open_in_lab.items():
        (mine / name).write_bytes(old)  # Overwrite
    _edit(mine / "02_b.ipynb", 1, "b + 2  # mine, later")  # the learner goes on working

    report = workspace.sync(mine, course)
    assert report.again == ["01_a.ipynb", "02_b.ipynb"], report
    assert "brought in again: 01_a.ipynb" in report.lines()[0]
    assert (report.updated, report.merged) == (["01_a.ipynb"], ["02_b.ipynb"])
    assert _learners_sources(mine / "01_a.ipynb") == ["a = 2", "a"]
    assert _learners_sources(mine / "02_b.ipynb") == ["b = 2", "b + 2  # mine, later"]
    assert workspace.sync(mine, course).lines() == []
    _edit(mine / "01_a.ipynb", 2, "a  # read it")  # delivered: the learner's edits stay theirs
    assert workspace.sync(mine, course).lines() == []
    assert not list((mine / workspace.PENDING).rglob("*.ipynb"))


def _three_chapters(tmp_path: Path, source: str) -> tuple[Path, Path]:
    """A course of three one-cell chapters (`source` with the chapter's {letter} and {number})
    and a workspace synced from it."""
    course, mine = tmp_path / "course", tmp_path / "workspace"
    for name in ("01_a.ipynb", "02_b.ipynb", "03_c.ipynb"):
        text = source.format(letter=name[3], number=name[1])
        _write_chapter(course / "chapters", name, text)
    workspace.sync(mine, course)
    return course, mine


def test_a_notebook_open_in_a_lab_is_never_written_by_the_sync(tmp_path):
    """Open in the lab `make lab` started: the update is staged for it (the lab merges it into
    the open document, tests/test_lab_updates.py). Open in another lab: left alone and named,
    with the lab's address. Closed: updated on disk. A later sync, the notebook closed, brings a
    staged update in on disk (and forgets the staged copy)."""
    course, mine = _three_chapters(tmp_path, "{letter} = 1")
    chapters = course / "chapters"
    before = {name: (mine / name).read_bytes() for name in ("01_a.ipynb", "02_b.ipynb")}
    for name in ("01_a.ipynb", "02_b.ipynb", "03_c.ipynb"):
        _write_chapter(chapters, name, f"{name[3]} = 2")
    ours = lab_link.RunningLab("http://127.0.0.1:8888/", "t", mine, 1)
    other = lab_link.RunningLab("http://127.0.0.1:9999/", "", mine.parent, 2)
    labs = lab_link.OpenInLab(delivering={"01_a.ipynb": ours}, blocking={"02_b.ipynb": other})
    report = workspace.sync(mine, course, labs=labs)
    assert (report.in_lab, report.held, report.updated) == (
        ["01_a.ipynb"],
        ["02_b.ipynb"],
        ["03_c.ipynb"],
    )
    assert {name: (mine / name).read_bytes() for name in before} == before, "an open copy written"
    assert course_update.staged_names(mine) == ["01_a.ipynb"]
    staged, language = course_update.staged(mine, "01_a.ipynb")
    assert (staged.cells[0].source, language) == ("a = 2", "en")
    (held,) = report.lines()[1:]
    assert held.startswith("NOT UPDATED: 02_b.ipynb") and "http://127.0.0.1:9999/" in held, held
    assert "save it and close it" in held.lower(), held

    report = workspace.sync(mine, course)  # both closed now
    assert report.updated == ["01_a.ipynb", "02_b.ipynb"] and not report.held
    assert course_update.staged_names(mine) == []
    assert _learners_sources(mine / "01_a.ipynb") == ["a = 2"]
    unasked = lab_link.OpenInLab(unasked=[other])  # a lab that did not answer: nothing changed
    _write_chapter(chapters, "03_c.ipynb", "c = 3")
    report = workspace.sync(mine, course, labs=unasked)
    assert report.held == ["03_c.ipynb"] and "did not say which notebooks" in report.lines()[0]
    _edit(mine / "03_c.ipynb", 1, "c = 'mine'")  # a collision: the course's version beside it
    beside_open = lab_link.OpenInLab(delivering={workspace.beside_name("03_c.ipynb"): ours})
    report = workspace.sync(mine, course, labs=beside_open)
    assert report.held == ["03_c.ipynb"], report
    assert "03_c.course-version.ipynb, which the update rewrites, is open" in report.lines()[0]
    assert not (mine / workspace.beside_name("03_c.ipynb")).exists()
    assert workspace.sync(mine, course).kept == ["03_c.ipynb"]  # closed: it comes in


@pytest.mark.parametrize("language", ["en", "zh"])
def test_exercise_copies_say_that_the_fetched_copy_is_the_one_submitted(tmp_path, language):
    """...and name the assignment to fetch: the exercise in its language (ex1_sigmoid_to_tanh-zh
    in Chinese, grader/exercises.py)."""
    workspace.sync(tmp_path / "ws", ROOT, language, exchange=tmp_path / "exchange")
    found = workspace.course_notebooks(ROOT, language)
    exercises = [n for n in found if n.startswith("exercises/")]
    # every exercise of solutions/ is there (none at all would leave nothing to check)
    assert {Path(name).stem for name in exercises} == set(grader_exercises.names(ROOT))
    submitted = "not submitted" if language == "en" else "不会被提交"
    for name in exercises:
        note = _sources(tmp_path / "ws" / name)[0]
        exercise = Path(name).stem
        assignment = languages.assignment(exercise, language)
        assert submitted in note and f"`{assignment}/{assignment}.ipynb`" in note
        # a class gets the translation only if its instructor releases it: the exercise otherwise
        assert f"`{exercise}/{exercise}.ipynb`" in note


def test_a_copy_from_an_earlier_sync_is_updated_when_its_hash_shows_it_untouched(tmp_path):
    course, mine = tmp_path / "course", tmp_path / "workspace"
    _write_chapter(course / "chapters", "01_a.ipynb", "a = 1")
    _write_chapter(course / "chapters", "02_b.ipynb", "b = 1")
    shutil.copytree(course / "chapters", mine)  # what the earlier sync left: copies, hashes
    digests = {n: hashlib.sha256((mine / n).read_bytes()).hexdigest() for n in ("01_a.ipynb",)}
    (mine / workspace.LEGACY_MANIFEST).write_text(json.dumps(digests))
    _edit(mine / "02_b.ipynb", 0, "b = 'mine'")
    _write_chapter(course / "chapters", "01_a.ipynb", "a = 2")
    _write_chapter(course / "chapters", "02_b.ipynb", "b = 2")
    report = workspace.sync(mine, course)
    assert (report.updated, report.kept) == (["01_a.ipynb"], ["02_b.ipynb"])
    assert _learners_sources(mine / "01_a.ipynb") == ["a = 2"]
    assert _learners_sources(mine / "02_b.ipynb") == ["b = 'mine'"]


def test_sync_points_nbgrader_at_the_exchange_and_creates_it(tmp_path):
    exchange = tmp_path / "shared" / "exchange"
    workspace.sync(tmp_path / "ws", ROOT, exchange=exchange)
    assert exchange.is_dir() and exchange.stat().st_mode & 0o777 == 0o777
    config = (tmp_path / "ws" / "nbgrader_config.py").read_text()
    assert f"c.Exchange.root = {str(exchange)!r}" in config
    assert (
        f"c.CourseDirectory.course_id = {workspace.course_file.settings(ROOT)['course_id']!r}"
        in config
    )
    bases = tmp_path / "ws" / workspace.BASES
    assert {str(p.relative_to(bases)) for p in bases.rglob("*.ipynb")} == set(
        workspace.course_notebooks(ROOT)
    )


def test_the_default_workspace_is_ignored_by_git():
    for path in ("workspace/01_symbolic_tracing.ipynb", "workspace/exercises/ex1.ipynb"):
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
        assert ignored.returncode == 0, f"{path} is not git-ignored"


def test_a_chinese_workspace_gets_the_chinese_chapters_and_lab_interface(tmp_path):
    mine = tmp_path / "ws-zh"
    workspace.sync(mine, ROOT, language="zh", exchange=tmp_path / "exchange")
    chapter = nbformat.read(mine / "02_fx_ir.ipynb", as_version=4)
    assert chapter.cells[0].source.startswith("# 第 2 章")
    assert (
        chapter.cells[1].id == "fxcourse-kernel-check"
        and "请在菜单中选择" in chapter.cells[1].source
    )
    assert 'use_language("zh")' in chapter.cells[2].source
    exercise = mine / "exercises" / "ex1_sigmoid_to_tanh"
    assert (exercise / "verify.py").is_file()  # the tests' checks, beside the notebook
    note = _sources(exercise / "ex1_sigmoid_to_tanh.ipynb")[0]
    assert "不会被提交" in note and "ex1_sigmoid_to_tanh/ex1_sigmoid_to_tanh.ipynb" in note
    setting = mine / workspace.LAB_SETTINGS / "@jupyterlab/translation-extension"
    assert json.loads((setting / "plugin.jupyterlab-settings").read_text()) == {"locale": "zh_CN"}
    workspace.sync(tmp_path / "ws-en", ROOT, exchange=tmp_path / "exchange")
    assert not (tmp_path / "ws-en" / workspace.LAB_SETTINGS).exists()


def test_make_lab_follows_the_learners_language():
    def dry_run(lang: str) -> str:
        command = ["make", "-n", "lab", f"LANG={lang}"]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True).stdout

    chinese, english = dry_run("zh_CN.UTF-8"), dry_run("C.UTF-8")
    assert (
        "--language zh" in chinese
        and "workspace-zh" in chinese
        and "JUPYTERLAB_SETTINGS_DIR" in chinese
    )
    assert "--language en" in english and "workspace-zh" not in english
    assert "JUPYTERLAB_SETTINGS_DIR" not in english
