"""The learner's workspace: their own copies of the chapters and exercises, outside git's view.

    python -m fxcourse.workspace sync [--workspace DIR]
    python -m fxcourse.workspace exchange     create the exchange folder if needed, print its path

`make lab` runs `sync` and opens JupyterLab in the workspace (default: ./workspace, git-ignored);
the class hub runs the same sync, as the learner, before each server start. The first run copies
every chapter and exercise starter. Later runs bring course updates in the way nbgitpuller does:

- a notebook the course did not change since the last sync is not touched (no notice);
- one the learner only opened or ran (outputs, execution counts, metadata changed; the cells'
  text unchanged) is replaced by the course's new version;
- one the learner edited gets the course's changes merged cell by cell (nbdime's three-way
  merge, the base being the course version the learner's copy came from); where the learner's
  and the course's changes collide the learner's cells are kept, the course's version is saved
  beside it (NAME.course-version.ipynb) and a markdown cell at the top of the notebook says so;
- a notebook the learner deleted or renamed comes back as the course's version;
- the module beside each exercise that its test cells import (verify.py) is always the course's.

Every notebook a sync changed opens with a notice cell that says so (the learner on a class hub
never sees the sync's output) and what to answer JupyterLab: a notebook open in the lab while the
sync wrote it gets "File Changed" on its next save, where Overwrite puts the old cells back. So an
update is only taken as delivered once a later sync finds it in the learner's copy: until then the
course version before it is kept in .fxcourse/pending/, and a sync that finds the update gone
(its changes would still change the copy) delivers it again, as if for the first time.

The course version each copy came from is kept in the workspace's hidden .fxcourse/course/
folder (JupyterLab does not show it). Exercise copies open with a note: only the copy fetched in
the Assignments tab is submitted (exercise_note). `--language CODE` (a translation of
fxcourse.languages, such as zh) syncs that language's chapters (chapters/CODE/) and sets
JupyterLab's interface to that language for this workspace.

sync also writes the workspace's nbgrader_config.py: nbgrader's Assignments tab and Validate
button read it (the course id, the exchange to fetch from and submit to; fetched assignments land
in the workspace). The exchange root is $FXCOURSE_EXCHANGE, else the course's own
classdata/exchange ($FXCOURSE_CLASSDATA/exchange; created, writable by everyone as nbgrader
requires), else ./exchange in a student edition.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from fxcourse import languages
from fxcourse.messages import _, use_language

ROOT = Path(__file__).resolve().parents[1]
STATE = ".fxcourse"  # hidden folder of the workspace: course versions (bases), progress
BASES = f"{STATE}/course"
PENDING = f"{STATE}/pending"  # the course version before an update not yet seen in the copy
LEGACY_MANIFEST = ".fxcourse-sync.json"  # earlier syncs: one SHA-256 per copied notebook
BESIDE = ".course-version.ipynb"
NOTICE_KEY = "fxcourse_sync_notice"  # cell metadata marking the notice a sync added
COURSE_ID = "fx-course"
START_PAGE = "01_symbolic_tracing.ipynb"  # where a learner's lab opens (make lab, the hub)
NBGRADER_CONFIG = '''\
"""Written by `make lab` (fxcourse.workspace sync); rewritten on every sync, do not edit.
nbgrader's Assignments tab and Validate button read it from the workspace."""

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = {course_id!r}
c.Exchange.root = {exchange!r}
# Where Fetch puts an assignment: nbgrader's default "." is the server's working folder (the
# course checkout under `make lab`), not the folder the lab shows.
c.Exchange.assignment_dir = {workspace!r}
# Importing torch can take ~10 s on a busy machine; nbgrader's default per cell is 30 s.
c.Execute.timeout = 120
'''


def exercise_note(assignment: str) -> str:
    """Opens each practice copy of an exercise (the fetched copy is the one submitted)."""
    return _(
        "**This is your practice copy: it is not submitted.** What your instructor grades is the "
        "copy you fetch in JupyterLab's **Assignments** tab (it lands in "
        "`{assignment}/{assignment}.ipynb` of your workspace): to hand in work done here, paste "
        "your answer into the same cells of the fetched copy, **Validate** it, then **Submit**. "
        "Courses without a hub: upload this notebook as your instructor asks."
    ).format(assignment=assignment)


def update_notice(day: str, beside: str) -> str:
    """The markdown cell a colliding course update puts at the top of the learner's notebook."""
    return _(
        "**Course update ({day}):** the course changed cells of this notebook that you had "
        "changed too. Your cells are kept as you wrote them; the course's changes that did not "
        "collide with yours are merged in. The course's new version is saved beside this "
        "notebook: [{beside}]({beside}). Compare, copy what you need, then delete this cell. "
        'If JupyterLab says the file "has changed on disk", choose **Revert** to load this.'
    ).format(day=day, beside=beside)


def change_notice(day: str, merged: bool) -> str:
    """The markdown cell a course update puts at the top of a notebook it changed."""
    what = (
        _("the course's changes are merged into your edits")
        if merged
        else _("you had not edited it, so it is now the course's new version")
    )
    return _(
        "**Course update ({day}):** the course changed this notebook; {what}. If JupyterLab "
        'says the file "has changed on disk", choose **Revert** to load the update (Overwrite '
        "would put your old copy back until the next update check). Delete this cell once read."
    ).format(day=day, what=what)


LAB_SETTINGS = f"{STATE}/lab-settings"


@dataclass
class SyncReport:
    copied: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)  # opened or run only: replaced
    merged: list[str] = field(default_factory=list)  # edited: the course's changes merged in
    kept: list[str] = field(default_factory=list)  # edited, colliding: course version beside
    # an earlier update that was not in the copy (JupyterLab's Overwrite): delivered again
    again: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        found = [
            f"an earlier course update was not in your copy (JupyterLab's Overwrite?); "
            f"brought in again: {name}"
            for name in self.again
        ]
        found += [f"new: {name}" for name in self.copied]
        found += [f"updated (you had not edited it): {name}" for name in self.updated]
        found += [f"course changes merged into your edits: {name}" for name in self.merged]
        found += [
            f"{name}: the course changed cells you had edited; yours are kept, the course's "
            f"version is beside it as {beside_name(name)} (the notebook's first cell says so)"
            for name in self.kept
        ]
        return found


def chapters_in(root: Path, language: str) -> Path:
    """chapters/ in the source language (English), chapters/<language>/ in a translation."""
    return root / "chapters" if language == languages.SOURCE.code else root / "chapters" / language


def course_notebooks(root: Path = ROOT, language: str = languages.SOURCE.code) -> dict[str, Path]:
    """Workspace-relative name -> the course's learner notebook it is copied from."""
    chapters = chapters_in(root, language)
    found = {p.name: p for p in sorted(chapters.glob("[0-9][0-9]_*.ipynb"))}
    exercises = sorted((chapters / "exercises").glob("*/*.ipynb"))
    found |= {f"exercises/{p.parent.name}/{p.name}": p for p in exercises}
    return found


def course_modules(root: Path = ROOT, language: str = languages.SOURCE.code) -> dict[str, Path]:
    """Workspace-relative name -> a module beside an exercise that its test cells import
    (verify.py): the course's, never the learner's to edit."""
    chapters = chapters_in(root, language)
    return {
        f"exercises/{p.parent.name}/{p.name}": p
        for p in sorted((chapters / "exercises").glob("*/*.py"))
    }


def beside_name(name: str) -> str:
    return name.removesuffix(".ipynb") + BESIDE


def course_version(name: str, source: Path) -> nbformat.NotebookNode:
    """The course's notebook as the learner gets it (an exercise opens with exercise_note)."""
    notebook = nbformat.read(source, as_version=4)
    if name.startswith("exercises/"):
        note = exercise_note(Path(name).stem)
        notebook.cells.insert(0, nbformat.v4.new_markdown_cell(note))
    return notebook


def cells_text(notebook: nbformat.NotebookNode) -> list[tuple]:
    """What the learner writes: each cell's kind and text (not outputs, counts or metadata)."""
    return [
        (cell.cell_type, cell.source, json.dumps(cell.get("attachments"), sort_keys=True))
        for cell in notebook.cells
        if NOTICE_KEY not in cell.metadata
    ]


def sync(workspace: Path, root: Path = ROOT, language: str = languages.SOURCE.code) -> SyncReport:
    """Bring the course's notebooks in `language` into `workspace` (see the module docstring)."""
    workspace.mkdir(parents=True, exist_ok=True)
    use_language(language)
    report = SyncReport()
    for name, source in course_notebooks(root, language).items():
        outcome = sync_notebook(workspace, name, course_version(name, source), report)
        if outcome:
            getattr(report, outcome).append(name)
    for name, source in course_modules(root, language).items():
        target = workspace / name
        if not target.exists() or target.read_bytes() != source.read_bytes():
            (report.updated if target.exists() else report.copied).append(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    write_nbgrader_config(workspace, exchange_root(root))
    write_lab_language(workspace, language)
    return report


def write_lab_language(workspace: Path, language: str) -> None:
    """JupyterLab's interface language for this workspace (`make lab` points JupyterLab's user
    settings at this folder when the course language is not English): the language's
    JupyterLab locale, whose language pack env/requirements.in installs."""
    locale = languages.get(language).lab_locale
    if not locale:
        return
    plugin = workspace / LAB_SETTINGS / "@jupyterlab" / "translation-extension"
    plugin.mkdir(parents=True, exist_ok=True)
    setting = json.dumps({"locale": locale}, indent=2)
    (plugin / "plugin.jupyterlab-settings").write_text(setting + "\n")


def sync_notebook(
    workspace: Path, name: str, course: nbformat.NotebookNode, report: SyncReport | None = None
) -> str | None:
    """One notebook: returns the SyncReport list it belongs to, None when nothing changed (an
    update delivered again is also listed in report.again)."""
    target, base_path = workspace / name, workspace / BASES / name
    pending_path = workspace / PENDING / name
    if not target.exists():
        _write(course, target)
        _write(course, base_path)
        pending_path.unlink(missing_ok=True)
        return "copied"
    mine = nbformat.read(target, as_version=4)
    base = _base(workspace, name, target, mine)
    if pending_path.exists():
        before = nbformat.read(pending_path, as_version=4)
        if base is not None and not _has_update(before, mine, base):
            base = before  # the update was lost (Overwrite): deliver it again
            if report is not None:
                report.again.append(name)
        pending_path.unlink()
    if base is not None and cells_text(base) == cells_text(course):
        outcome = None  # the course did not change this notebook
    elif cells_text(mine) == cells_text(course):
        outcome = None  # the learner already has the course's cells
    elif base is not None and cells_text(mine) == cells_text(base):
        _write(with_notice(course, change_notice(_today(), merged=False)), target)
        outcome = "updated"
    else:
        outcome = _merge_into(target, mine, base, course)
    if outcome and base is not None:
        _write(base, pending_path)  # until a later sync finds the update in the copy
    _write(course, base_path)
    return outcome


def _has_update(before, mine, after) -> bool:
    """Whether the course's changes from `before` to `after` are in the learner's copy: merging
    them into it again changes nothing (a change both sides made is merged once)."""
    from nbdime.merging import merge_notebooks

    mine = nbformat.from_dict(mine)
    mine.cells = [cell for cell in mine.cells if NOTICE_KEY not in cell.metadata]
    merged, _ = merge_notebooks(before, mine, after, _merge_args("use-local"))
    return cells_text(merged) == cells_text(mine)


def with_notice(notebook: nbformat.NotebookNode, text: str) -> nbformat.NotebookNode:
    """notebook with one notice cell at the top (an earlier sync's notice replaced)."""
    notice = nbformat.v4.new_markdown_cell(text)
    notice.metadata[NOTICE_KEY] = True
    notebook = nbformat.from_dict(notebook)
    notebook.cells = [notice, *(c for c in notebook.cells if NOTICE_KEY not in c.metadata)]
    return notebook


def _today() -> str:
    return datetime.date.today().isoformat()


def _base(workspace: Path, name: str, target: Path, mine) -> nbformat.NotebookNode | None:
    """The course version the learner's copy came from; None when unknown."""
    base_path = workspace / BASES / name
    if base_path.exists():
        return nbformat.read(base_path, as_version=4)
    legacy = workspace / LEGACY_MANIFEST  # an earlier sync: only the copy's hash is known
    digests = json.loads(legacy.read_text()) if legacy.exists() else {}
    untouched = digests.get(name) == hashlib.sha256(target.read_bytes()).hexdigest()
    return mine if untouched else None


def _merge_into(target: Path, mine, base, course) -> str:
    """Three-way merge of the course's changes into the learner's edited copy."""
    from nbdime.merging import merge_notebooks

    mine.cells = [cell for cell in mine.cells if NOTICE_KEY not in cell.metadata]
    if base is None:  # nothing to merge against: keep the learner's cells whole
        merged, collided = mine, True
    else:
        _, decisions = merge_notebooks(base, mine, course, _merge_args("mergetool"))
        collided = any(decision.conflict for decision in decisions)
        merged, _ = merge_notebooks(base, mine, course, _merge_args("use-local"))
    if not collided:
        _write(with_notice(merged, change_notice(_today(), merged=True)), target)
        return "merged"
    beside = target.with_name(beside_name(target.name))
    _write(course, beside)
    _write(with_notice(merged, update_notice(_today(), beside.name)), target)
    return "kept"


def _merge_args(strategy: str) -> argparse.Namespace:
    """nbdime's merge options: `strategy` for every conflict; counts and scroll state ignored."""
    return argparse.Namespace(
        merge_strategy=strategy,
        input_strategy=None,
        output_strategy=None,
        ignore_transients=True,
        log_level="WARNING",
    )


def _write(notebook: nbformat.NotebookNode, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


def exchange_root(root: Path = ROOT) -> Path:
    if configured := os.environ.get("FXCOURSE_EXCHANGE"):
        return Path(configured).resolve()
    if not (root / "grader").is_dir():  # a student edition
        return root / "exchange"
    return root / os.environ.get("FXCOURSE_CLASSDATA", "classdata") / "exchange"


def ensure_exchange(exchange: Path) -> Path:
    if not exchange.exists():
        exchange.mkdir(parents=True)
        exchange.chmod(0o777)  # nbgrader's exchange must be writable by every user
    return exchange


def write_nbgrader_config(workspace: Path, exchange: Path) -> None:
    """The learner's nbgrader settings; also makes sure the exchange folder exists."""
    ensure_exchange(exchange)
    text = NBGRADER_CONFIG.format(
        course_id=COURSE_ID, exchange=str(exchange), workspace=str(workspace.resolve())
    )
    (workspace / "nbgrader_config.py").write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["sync", "exchange"])
    parser.add_argument("--workspace", type=Path, default=ROOT / "workspace")
    parser.add_argument("--language", choices=languages.codes(), default=languages.SOURCE.code)
    args = parser.parse_args(argv)
    if args.command == "exchange":
        print(ensure_exchange(exchange_root()))
        return 0
    report = sync(args.workspace.resolve(), language=args.language)
    for line in report.lines():
        print(f"[workspace] {line}")
    print(f"[workspace] {args.workspace} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
