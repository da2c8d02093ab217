"""How a course update meets the learner's copy of one notebook: what changes, the notice that
says so, and what the workspace remembers about it.

`plan` decides, from the learner's copy and the course versions the workspace keeps, what the
update does; nothing is written. `commit` then records it. The two writers use them:
fxcourse.workspace's sync writes the result into a copy no lab has open; for a notebook open in
the learner's JupyterLab the sync `stage`s the update instead, and fxcourse.lab_updates merges it
into the open document through the lab (the learner's unsaved typing is part of the copy it
merges into) and commits once the lab has saved it.

The workspace's hidden .fxcourse/ folder holds, per notebook (by its workspace-relative name):
the course version the copy came from (course/), the one before an update not yet found in the
copy (pending/), an update waiting for the lab (incoming/NAME.json), and the SHA-256 of each copy
as the sync last wrote it (synced.json: a copy still so was never saved by the learner).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

from fxcourse.messages import _

STATE = ".fxcourse"  # hidden folder of the workspace: course versions (bases), progress
BASES = f"{STATE}/course"
PENDING = f"{STATE}/pending"  # the course version before an update not yet seen in the copy
INCOMING = f"{STATE}/incoming"  # updates for notebooks open in the lab, until it takes them
SYNCED = f"{STATE}/synced.json"
LEGACY_MANIFEST = ".fxcourse-sync.json"  # earlier syncs: one SHA-256 per copied notebook
BESIDE = ".course-version.ipynb"
NOTICE_KEY = "fxcourse_sync_notice"  # cell metadata marking the notice a sync added
NOTICE_ID = "fxcourse-course-update"  # its cell id: a later notice replaces it in place


def update_notice(day: str, beside: str) -> str:
    """The markdown cell a colliding course update puts at the top of the learner's notebook."""
    return _(
        "**Course update ({day}):** the course changed cells of this notebook that you had "
        "changed too. Your cells are kept as you wrote them; the course's changes that did not "
        "collide with yours are merged in. The course's new version is saved beside this "
        "notebook: [{beside}]({beside}). Compare, copy what you need, then delete this cell."
    ).format(day=day, beside=beside)


def change_notice(day: str, merged: bool) -> str:
    """The markdown cell a course update puts at the top of a notebook it changed."""
    what = (
        _("the course's changes are merged into your edits")
        if merged
        else _("you had not edited it, so it is now the course's new version")
    )
    return _(
        "**Course update ({day}):** the course changed this notebook; {what}. Delete this cell "
        "once read."
    ).format(day=day, what=what)


def beside_name(name: str) -> str:
    return name.removesuffix(".ipynb") + BESIDE


def cells_text(notebook: nbformat.NotebookNode) -> list[tuple]:
    """What the learner writes: each cell's kind and text (not outputs, counts or metadata)."""
    return [
        (cell.cell_type, cell.source, json.dumps(cell.get("attachments"), sort_keys=True))
        for cell in notebook.cells
        if NOTICE_KEY not in cell.metadata
    ]


def with_notice(notebook: nbformat.NotebookNode, text: str) -> nbformat.NotebookNode:
    """notebook with one notice cell at the top (an earlier sync's notice replaced)."""
    notice = nbformat.v4.new_markdown_cell(text, id=NOTICE_ID)
    notice.metadata[NOTICE_KEY] = True
    notebook = nbformat.from_dict(notebook)
    notebook.cells = [notice, *(c for c in notebook.cells if NOTICE_KEY not in c.metadata)]
    return notebook


@dataclass
class Update:
    """What a course update does to one copy (see `plan`)."""

    outcome: str | None  # "updated", "merged", "kept"; None: the copy stays as it is
    notebook: nbformat.NotebookNode | None = None  # the copy's new content
    beside: nbformat.NotebookNode | None = None  # the course's version, saved beside the copy
    again: bool = False  # an earlier update was not in the copy (JupyterLab's Overwrite)
    since: nbformat.NotebookNode | None = None  # the course version the update starts from


def plan(
    workspace: Path, name: str, mine: nbformat.NotebookNode, course: nbformat.NotebookNode
) -> Update:
    """What bringing `course` into `mine` (the learner's copy of `name`, as saved or as open in
    the lab) does: replaced when only opened or run, merged cell by cell when edited, the
    learner's cells kept and the course's version beside it where both changed a cell."""
    base, again = _base(workspace, name), False
    pending_path = workspace / PENDING / name
    if pending_path.exists():
        before = nbformat.read(pending_path, as_version=4)
        if base is not None and not _has_update(before, mine, base):
            base, again = before, True  # the update was lost (Overwrite): deliver it again
    if base is not None and cells_text(base) == cells_text(course):
        return Update(None, again=again)  # the course did not change this notebook
    if cells_text(mine) == cells_text(course):
        return Update(None, again=again)  # the learner already has the course's cells
    if base is not None and cells_text(mine) == cells_text(base):
        notebook = with_notice(course, change_notice(_today(), merged=False))
        return Update("updated", notebook, again=again, since=base)
    outcome, notebook, beside = _merged(mine, base, course, Path(beside_name(name)).name)
    return Update(outcome, notebook, beside, again, since=base)


def commit(workspace: Path, name: str, update: Update, course: nbformat.NotebookNode) -> None:
    """Remember that `update` reached the copy: `course` is now the version it came from, and
    the one before stays in pending/ until a later sync finds the update in the copy."""
    pending_path = workspace / PENDING / name
    pending_path.unlink(missing_ok=True)
    if update.outcome and update.since is not None:
        write(update.since, pending_path)
    write(course, workspace / BASES / name)
    (workspace / INCOMING / f"{name}.json").unlink(missing_ok=True)


def _today() -> str:
    return datetime.date.today().isoformat()


def _base(workspace: Path, name: str) -> nbformat.NotebookNode | None:
    """The course version the learner's copy came from; None when unknown."""
    base_path, target = workspace / BASES / name, workspace / name
    if base_path.exists():
        return nbformat.read(base_path, as_version=4)
    legacy = workspace / LEGACY_MANIFEST  # an earlier sync: only the copy's hash is known
    digests = json.loads(legacy.read_text()) if legacy.exists() else {}
    if target.exists() and digests.get(name) == hashlib.sha256(target.read_bytes()).hexdigest():
        return nbformat.read(target, as_version=4)
    return None


def _has_update(before, mine, after) -> bool:
    """Whether the course's changes from `before` to `after` are in the learner's copy: merging
    them into it again changes nothing (a change both sides made is merged once)."""
    from nbdime.merging import merge_notebooks

    mine = nbformat.from_dict(mine)
    mine.cells = [cell for cell in mine.cells if NOTICE_KEY not in cell.metadata]
    merged, _ = merge_notebooks(before, mine, after, _merge_args("use-local"))
    return cells_text(merged) == cells_text(mine)


def _merged(mine, base, course, beside: str) -> tuple[str, nbformat.NotebookNode, object]:
    """Three-way merge of the course's changes into the learner's edited copy: ("merged", the
    copy, None), or ("kept", the copy with the learner's cells kept, the course's version)."""
    from nbdime.merging import merge_notebooks

    mine = nbformat.from_dict(mine)
    mine.cells = [cell for cell in mine.cells if NOTICE_KEY not in cell.metadata]
    if base is None:  # nothing to merge against: keep the learner's cells whole
        merged, collided = mine, True
    else:
        _, decisions = merge_notebooks(base, mine, course, _merge_args("mergetool"))
        collided = any(decision.conflict for decision in decisions)
        merged, _ = merge_notebooks(base, mine, course, _merge_args("use-local"))
    if not collided:
        return "merged", with_notice(merged, change_notice(_today(), merged=True)), None
    return "kept", with_notice(merged, update_notice(_today(), beside)), course


def _merge_args(strategy: str) -> argparse.Namespace:
    """nbdime's merge options: `strategy` for every conflict; counts and scroll state ignored."""
    return argparse.Namespace(
        merge_strategy=strategy,
        input_strategy=None,
        output_strategy=None,
        ignore_transients=True,
        log_level="WARNING",
    )


def write(notebook: nbformat.NotebookNode, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


# ----------------------------------------------------------------------------- the copies


def write_copy(workspace: Path, name: str, notebook: nbformat.NotebookNode) -> None:
    """Write the learner's copy of `name`, remembering its digest (synced.json)."""
    target = workspace / name
    write(notebook, target)
    record = workspace / SYNCED
    digests = _synced(workspace)
    digests[name] = hashlib.sha256(target.read_bytes()).hexdigest()
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")


def untouched(workspace: Path, name: str) -> bool:
    """Whether the copy of `name` is still as the sync wrote it (the learner never saved it)."""
    target = workspace / name
    if target.is_symlink() or not target.is_file():
        return False
    known = _synced(workspace).get(name)
    if known is None and (workspace / LEGACY_MANIFEST).exists():
        known = json.loads((workspace / LEGACY_MANIFEST).read_text()).get(name)
    return known == hashlib.sha256(target.read_bytes()).hexdigest()


def _synced(workspace: Path) -> dict[str, str]:
    try:
        found = json.loads((workspace / SYNCED).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


# ----------------------------------------------------------------------------- the lab's part


def stage(workspace: Path, name: str, course: nbformat.NotebookNode, language: str) -> None:
    """Keep the update of `name` for the lab that has it open (fxcourse.lab_updates)."""
    path = workspace / INCOMING / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"language": language, "course": course}))


def staged(workspace: Path, name: str) -> tuple[nbformat.NotebookNode, str] | None:
    """The course version waiting for the lab, and the workspace's language; None if none."""
    try:
        found = json.loads((workspace / INCOMING / f"{name}.json").read_text())
        course = nbformat.from_dict(found["course"])
        nbformat.validate(course)
        return course, str(found["language"])
    except (OSError, ValueError, KeyError, TypeError, nbformat.ValidationError):
        return None


def staged_names(workspace: Path) -> list[str]:
    folder = workspace / INCOMING
    return sorted(str(p.relative_to(folder)).removesuffix(".json") for p in folder.rglob("*.json"))


def unstage(workspace: Path, name: str) -> None:
    (workspace / INCOMING / f"{name}.json").unlink(missing_ok=True)
