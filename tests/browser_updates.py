"""A course update made while the learner's lab is open, in a real browser (tests/test_browser.py,
in every language of the registry).

The learner has two chapters open in the lab `make lab` started (autosave off, as a learner may
have it): one only opened, one where they typed an attempt into a try-it and did not save. The
course changes both (a sentence added to a Markdown cell, a cell inserted), and `make workspace`
runs (fxcourse.workspace's command line, from a copy of the course holding the change). Then:

- the command says that both went into the notebooks open in the lab, and wrote neither on disk
  itself; the open tab holds the typed attempt and the update, with the update's notice cell on
  top, the lab says so in a notification, and the notebook is saved with both;
- the tab that was only opened holds the update too;
- the learner goes on typing and saves (Ctrl+S): no "File Changed" dialog, or any other, appears
  (before, one did, and Revert lost the attempt while Enter chose Overwrite and lost the update);
- a second `make workspace` finds the update in place and has nothing to say.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from browser_lab import LabPage, visible_banners, warning_outputs
from lab_runner import LabServer

from fxcourse import messages, workspace

ROOT = Path(__file__).resolve().parents[1]
KERNEL = workspace.course_kernel()["name"]
TYPED_CHAPTER, OPENED_CHAPTER = "04_operator_fusion.ipynb", "05_interpreter.ipynb"
ATTEMPT = "# my attempt, typed and not saved"
MORE = "# and more, typed after the update"
INSERTED = "print('a cell the course added while the lab was open')"
SAVE_WAIT_S = 60
UPDATE_MARK = "updated while the lab was open"  # the sentence the update adds, in brackets


@dataclass
class Words:
    """What the learner reads, in one language."""

    language: str
    marker: str  # the sentence the course update adds
    notice: str  # how the update's notice cell starts
    merged_toast: str  # the notification once the update is in the open tab
    opened_notice: str  # the notice of a notebook the learner had not edited


def words_of(language: str) -> Words:
    """What the learner reads in `language` (a code of fxcourse.languages), from the course's
    own messages in its catalog: a language of the registry needs nothing written here."""
    notice = said_in(
        language,
        "**Course update ({day}):** the course changed this notebook; {what}. Delete this cell "
        "once read.",
    )
    toast = said_in(
        language,
        "Course update: the course's changes are merged into {name}, with what you had typed "
        "in it, and the notebook is saved.",
    )
    return Words(
        language,
        f"[{UPDATE_MARK}]",
        notice.split("{day}")[0],
        toast.split("{name}")[0] + TYPED_CHAPTER,
        said_in(language, "you had not edited it, so it is now the course's new version"),
    )


def said_in(language: str, message: str) -> str:
    """What `make workspace` prints for `message` in the learner's language."""
    with messages.speaking(language):
        return messages._(message)


def course_with_update(course: Path, words: Words) -> Path:
    """A copy of the course's two chapters, changed: the marker added to the first Markdown
    cell after each title, and a code cell inserted before the typed chapter's last cell."""
    chapters = workspace.chapters_in(ROOT, words.language)
    target = workspace.chapters_in(course, words.language)
    target.mkdir(parents=True)
    for name in (TYPED_CHAPTER, OPENED_CHAPTER):
        notebook = nbformat.read(chapters / name, as_version=4)
        prose = next(c for c in notebook.cells[1:] if c.cell_type == "markdown")
        prose.source += f" {words.marker}"
        if name == TYPED_CHAPTER:
            notebook.cells.insert(len(notebook.cells) - 1, nbformat.v4.new_code_cell(INSERTED))
        nbformat.write(notebook, target / name)
    return course


def make_workspace(server: LabServer, course: Path, words: Words) -> str:
    """`make workspace`'s command, run against the lab's workspace; its output."""
    command = [sys.executable, "-m", "fxcourse.workspace", "sync", "--workspace"]
    command += [str(server.workspace), "--course", str(course), "--language", words.language]
    done = subprocess.run(
        command, cwd=ROOT, env=server.environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _saved(path: Path, holds, what: str) -> nbformat.NotebookNode:
    deadline = time.monotonic() + SAVE_WAIT_S
    while time.monotonic() < deadline:
        try:
            notebook = nbformat.read(path, as_version=4)
            if holds(nbformat.writes(notebook)):
                return notebook
        except nbformat.reader.NotJSONError:  # read while the server was writing it
            pass
        time.sleep(0.5)
    raise AssertionError(f"{path.name} was not saved with {what} in {SAVE_WAIT_S} s")


def _open(lab: LabPage, name: str, shot: str) -> None:
    with lab.step(shot):
        lab.double_click_path(name)
        lab.wait_for_notebook(name, KERNEL)


def _no_dialog(lab: LabPage, where: str) -> None:
    banners = visible_banners(lab.page) + warning_outputs(lab.cells())
    assert not banners, f"{where}: a dialog or warning on the page:\n" + "\n".join(banners)


def _dirty(lab: LabPage) -> bool:
    return lab.page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty")


def update_reaches_the_open_tabs(lab: LabPage, course: Path, words: Words) -> None:
    """The whole story of the module docstring, on `lab` (a fresh tab on the learner's lab)."""
    server, folder = lab.server, lab.server.workspace
    _open(lab, OPENED_CHAPTER, "50-opened-chapter")
    _open(lab, TYPED_CHAPTER, "50-typed-chapter")
    with lab.step("50-typed-not-saved"):
        scaffold = next(c for c in lab.cells() if (c.get("tryit") or {}).get("role") == "scaffold")
        typed = f"{scaffold['source']}\n{ATTEMPT}"
        lab.replace_cell_source(scaffold["index"], typed)
        lab.shot("50-typed-not-saved")
        assert _dirty(lab) and ATTEMPT not in (folder / TYPED_CHAPTER).read_text()

    with lab.step("51-update-merged-into-the-open-tab"):
        said = make_workspace(server, course_with_update(course, words), words)
        delivered = said_in(
            words.language,
            "merged into the notebook open in your lab, with what you typed there (and saved): "
            "{name}",
        )
        for name in (TYPED_CHAPTER, OPENED_CHAPTER):
            assert delivered.format(name=name) in said, said
        lab.page.locator(".jp-toast-message, .Toastify__toast").filter(
            has_text=words.merged_toast
        ).first.wait_for()
        cells = lab.cells()
        notice = cells[0]["source"]
        assert notice.startswith(words.notice), notice
        assert cells[scaffold["index"] + 1]["source"] == typed, "the typed attempt is gone"
        assert any(words.marker in c["source"] for c in cells), "the update is not in the tab"
        assert [c["source"] for c in cells].count(INSERTED) == 1, "the inserted cell is missing"
        lab.cell(0).scroll_into_view_if_needed()
        lab.shot("51-update-merged-into-the-open-tab")
        assert not _dirty(lab), "the merged notebook was not saved"
        _no_dialog(lab, "the open tab after the update")
    saved = nbformat.writes(nbformat.read(folder / TYPED_CHAPTER, as_version=4))
    assert ATTEMPT in saved and words.marker in saved and INSERTED in saved

    with lab.step("52-opened-tab-updated"):
        lab.page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=OPENED_CHAPTER).click()
        lab.wait_for_notebook(OPENED_CHAPTER, KERNEL)
        cells = lab.cells()
        assert words.opened_notice in cells[0]["source"], cells[0]["source"]
        assert any(words.marker in c["source"] for c in cells), "the opened tab has no update"
        lab.shot("52-opened-tab-updated")
        _no_dialog(lab, "the only-opened tab after the update")

    with lab.step("53-typed-more-and-saved"):
        lab.page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=TYPED_CHAPTER).click()
        lab.wait_for_notebook(TYPED_CHAPTER, KERNEL)
        lab.replace_cell_source(scaffold["index"] + 1, f"{typed}\n{MORE}")
        lab.page.keyboard.press("ControlOrMeta+s")
        _saved(folder / TYPED_CHAPTER, lambda text: MORE in text, "what was typed after it")
        lab.page.wait_for_timeout(1500)  # where "File Changed" came up before
        lab.shot("53-typed-more-and-saved")
        _no_dialog(lab, "saving after the update")
    saved = nbformat.writes(nbformat.read(folder / TYPED_CHAPTER, as_version=4))
    assert all(text in saved for text in (ATTEMPT, MORE, words.marker, INSERTED))
    again = make_workspace(server, course, words)
    up_to_date = said_in(words.language, "{workspace} is up to date").format(workspace=folder)
    assert again.splitlines() == [f"[workspace] {up_to_date}"], again
