"""The learner's workspace: their own copies of the chapters and exercises, outside git's view.

    python -m fxcourse.workspace sync [--workspace DIR] [--language CODE] [--course DIR]
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
never sees the sync's output). A notebook open in the learner's running JupyterLab is not
written on disk, where the lab would meet it as "File Changed" at its next save: the update is
handed to that lab (fxcourse.lab_link finds it, fxcourse.lab_updates merges the update into the
open document, with what the learner typed and has not saved, and saves it), or, in a lab that
cannot take it, left for a later sync and named, to be saved and closed first (the command then
exits with 1). An update is only taken as delivered once a later sync finds it in the learner's
copy: until then the course version before it is kept in .fxcourse/pending/, and a sync that
finds the update gone (an older lab's "File Changed: Overwrite" wrote the old cells back)
delivers it again, as if for the first time. The merge itself, the notices and this bookkeeping
are fxcourse.course_update's. `--course DIR` syncs from another copy of the course (default:
this one).

The course version each copy came from is kept in the workspace's hidden .fxcourse/course/
folder (JupyterLab does not show it). Exercise copies open with a note: only the copy fetched in
the Assignments tab is submitted (exercise_note). `--language CODE` (a translation of
fxcourse.languages, such as zh) syncs that language's chapters (chapters/CODE/) and sets
JupyterLab's interface to that language for this workspace.

sync also writes the workspace's nbgrader_config.py: nbgrader's Assignments tab and Validate
button read it (the course id, the exchange to fetch from and submit to; fetched assignments land
in the workspace). The course id and the class data's default folder are the course's
course.json (fxcourse.course_file, which the instructor's tools read too). The exchange root is
the one sync is given, else $FXCOURSE_EXCHANGE, else the course's own <class data>/exchange
($FXCOURSE_CLASSDATA/exchange; created, writable by everyone as nbgrader requires), else ./exchange
in a student edition.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from fxcourse import course_file, course_update, lab_link, languages
from fxcourse.course_update import (  # noqa: F401  (the workspace's names, as before)
    BASES,
    LEGACY_MANIFEST,
    NOTICE_KEY,
    PENDING,
    STATE,
    beside_name,
    cells_text,
)
from fxcourse.lab_link import OpenInLab
from fxcourse.messages import _, listing, speaking, use_language
from fxcourse.validate import ValidateLimits

ROOT = Path(__file__).resolve().parents[1]
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
c.Execute.timeout = {validate_timeout!r}  # fxcourse.validate, for this process's nbgrader
'''


def exercise_note(exercise: str, language: str = languages.SOURCE.code) -> str:
    """Opens each practice copy of an exercise (the fetched copy is the one submitted). A class
    gets an exercise in a translation only when its instructor releases one (grader/exercises.py,
    ClassLanguages), which a learner's workspace cannot know: a translated copy names both."""
    translated = languages.assignment(exercise, language)
    where = f"`{exercise}/{exercise}.ipynb`"
    if translated != exercise:
        where = _(
            "`{translated}/{translated}.ipynb` if your instructor released it in your language, "
            "else {where}"
        ).format(translated=translated, where=where)
    return _(
        "**This is your practice copy: it is not submitted.** What your instructor grades is the "
        "copy you fetch in JupyterLab's **Assignments** tab (it lands in {where} of your "
        "workspace): to hand in work done here, paste your answer into the same cells of the "
        "fetched copy, **Validate** it, then **Submit**. Courses without a hub: upload this "
        "notebook as your instructor asks."
    ).format(where=where)


LAB_SETTINGS = f"{STATE}/lab-settings"


@dataclass
class SyncReport:
    copied: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)  # opened or run only: replaced
    merged: list[str] = field(default_factory=list)  # edited: the course's changes merged in
    kept: list[str] = field(default_factory=list)  # edited, colliding: course version beside
    # an earlier update that was not in the copy (JupyterLab's Overwrite): delivered again
    again: list[str] = field(default_factory=list)
    in_lab: list[str] = field(default_factory=list)  # open in the lab: handed to it
    held: list[str] = field(default_factory=list)  # open in a lab that cannot take it: not yet
    labs: OpenInLab = field(default_factory=OpenInLab)

    def lines(self) -> list[str]:
        again = _(
            "an earlier course update was not in your copy (JupyterLab's Overwrite?); "
            "brought in again: {name}"
        )
        found = [again.format(name=name) for name in self.again]
        found += [_("new: {name}").format(name=name) for name in self.copied]
        updated = _("updated (you had not edited it): {name}")
        found += [updated.format(name=name) for name in self.updated]
        merged = _("course changes merged into your edits: {name}")
        found += [merged.format(name=name) for name in self.merged]
        kept = _(
            "{name}: the course changed cells you had edited; yours are kept, the course's "
            "version is beside it as {beside} (the notebook's first cell says so)"
        )
        found += [kept.format(name=name, beside=beside_name(name)) for name in self.kept]
        found += [self.held_line(name) for name in self.held]
        return found

    def held_line(self, name: str) -> str:
        """Why `name` was not updated, and what to do (see sync_notebook)."""
        labs, beside = self.labs, beside_name(name)
        if name in labs.blocking:
            return _(
                "NOT UPDATED: {name} is open in the JupyterLab at {url}, which cannot take a "
                "course update into an open notebook. Save it and close it there (File > Close "
                "and Shut Down Notebook), then run `make workspace` again; nothing you typed is "
                "lost."
            ).format(name=name, url=labs.blocking[name].url)
        if beside in labs.delivering or beside in labs.blocking:
            return _(
                "NOT UPDATED: {name}: the course's version beside it, {beside}, which the "
                "update rewrites, is open in the JupyterLab at {url}. Close it there, then run "
                "`make workspace` again."
            ).format(name=name, beside=beside, url=labs.lab_for(beside).url)
        return _(
            "NOT UPDATED: {name}: the JupyterLab at {url} did not say which notebooks it has "
            "open (a password instead of a token?). Save and close the notebooks open there, "
            "or stop it, then run `make workspace` again."
        ).format(name=name, url=labs.unasked[0].url)


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


def course_version(
    name: str, source: Path, language: str = languages.SOURCE.code
) -> nbformat.NotebookNode:
    """The course's notebook as the learner gets it (an exercise opens with exercise_note, which
    names the assignment to fetch in `language`)."""
    notebook = nbformat.read(source, as_version=4)
    if name.startswith("exercises/"):
        note = exercise_note(Path(name).stem, language)
        notebook.cells.insert(0, nbformat.v4.new_markdown_cell(note))
    return notebook


def sync(
    workspace: Path,
    root: Path = ROOT,
    language: str = languages.SOURCE.code,
    labs: OpenInLab | None = None,
    exchange: Path | None = None,
) -> SyncReport:
    """Bring the course's notebooks in `language` into `workspace` (see the module docstring);
    `labs` says which of them are open in a running lab (fxcourse.lab_link.open_notebooks);
    nbgrader's exchange is `exchange`, else the one configured (exchange_root). The notes it
    writes are in `language`; the caller's language is as before afterwards."""
    workspace.mkdir(parents=True, exist_ok=True)
    with speaking(language):
        report = _copy_notebooks(workspace, root, language, labs or OpenInLab())
    exchange = exchange or exchange_root(root)
    write_nbgrader_config(workspace, exchange, course_file.settings(root)["course_id"])
    write_lab_language(workspace, language)
    return report


def _copy_notebooks(workspace: Path, root: Path, language: str, labs: OpenInLab) -> SyncReport:
    report = SyncReport(labs=labs)
    for name, source in course_notebooks(root, language).items():
        course = course_version(name, source, language)
        outcome = sync_notebook(workspace, name, course, report, language)
        if outcome:
            getattr(report, outcome).append(name)
    for name, source in course_modules(root, language).items():
        target = workspace / name
        if not target.exists() or target.read_bytes() != source.read_bytes():
            (report.updated if target.exists() else report.copied).append(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
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
    workspace: Path,
    name: str,
    course: nbformat.NotebookNode,
    report: SyncReport | None = None,
    language: str = languages.SOURCE.code,
) -> str | None:
    """One notebook: returns the SyncReport list it belongs to, None when nothing changed (an
    update delivered again is also listed in report.again)."""
    target = workspace / name
    if not target.exists():
        course_update.write_copy(workspace, name, course)
        course_update.commit(workspace, name, course_update.Update(None), course)
        return "copied"
    update = course_update.plan(workspace, name, nbformat.read(target, as_version=4), course)
    if update.notebook is None:  # the copy stays as it is
        course_update.commit(workspace, name, update, course)
        return None
    labs = report.labs if report is not None else OpenInLab()
    if labs.delivers(name):  # the lab merges it into the open notebook (fxcourse.lab_updates)
        course_update.stage(workspace, name, course, language)
        return "in_lab"
    if labs.lab_for(name) is not None:
        return "held"  # open in a lab that cannot take it: left for a later sync
    beside = target.with_name(beside_name(target.name))
    if update.beside is not None and labs.lab_for(beside_name(name)) is not None:
        return "held"  # the course version beside it is open: a tab must not meet it changed
    if update.again and report is not None:
        report.again.append(name)
    course_update.write_copy(workspace, name, update.notebook)
    if update.beside is not None:
        course_update.write(update.beside, beside)
    course_update.commit(workspace, name, update, course)
    return update.outcome


def course_kernel(root: Path = ROOT) -> dict[str, str]:
    """The Jupyter kernel ({"name", "display_name"}) of the course at `root` (by default the
    learner's own checkout): the one env/setup.sh installs, named in its course.json."""
    return course_file.settings(root)["kernel"]


def exchange_root(root: Path = ROOT, environ: Mapping[str, str] | None = None) -> Path:
    """The exchange the course at `root` is configured with: $FXCOURSE_EXCHANGE (or course.json's
    "exchange"), else its own."""
    environ = os.environ if environ is None else environ
    if shared := course_file.shared_exchange(root, environ):
        return shared
    if not (root / "grader").is_dir():  # a student edition
        return root / "exchange"
    return root / course_file.classdata(root, environ) / "exchange"


def ensure_exchange(exchange: Path) -> Path:
    if not exchange.exists():
        exchange.mkdir(parents=True)
        exchange.chmod(0o777)  # nbgrader's exchange must be writable by every user
    return exchange


def write_nbgrader_config(workspace: Path, exchange: Path, course_id: str) -> None:
    """The learner's nbgrader settings; also makes sure the exchange folder exists."""
    ensure_exchange(exchange)
    text = NBGRADER_CONFIG.format(
        course_id=course_id,
        exchange=str(exchange),
        workspace=str(workspace.resolve()),
        validate_timeout=ValidateLimits().cell_timeout,
    )
    (workspace / "nbgrader_config.py").write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["sync", "exchange"])
    parser.add_argument("--workspace", type=Path, default=ROOT / "workspace")
    parser.add_argument("--language", choices=languages.codes(), default=languages.SOURCE.code)
    parser.add_argument(
        "--course", type=Path, default=ROOT, help="the course folder to copy from (this one)"
    )
    args = parser.parse_args(argv)
    if args.command == "exchange":
        print(ensure_exchange(exchange_root()))
        return 0
    folder = args.workspace.resolve()
    labs = lab_link.open_notebooks(folder) if folder.is_dir() else OpenInLab()
    use_language(args.language)  # what this command prints, too
    report = sync(folder, args.course.resolve(), args.language, labs)
    for line in report.lines():
        print(f"[workspace] {line}")
    for line in lab_delivery_lines(folder, report.in_lab):
        print(f"[workspace] {line}")
    if report.held:
        held = _("{workspace}: {count} notebook(s) not updated (above)")
        print("[workspace] " + held.format(workspace=args.workspace, count=len(report.held)))
        return 1
    print("[workspace] " + _("{workspace} is up to date").format(workspace=args.workspace))
    return 0


def lab_delivery_lines(workspace: Path, names: list[str]) -> list[str]:
    """Wait for the lab to take the updates of the notebooks open in it; say what happened."""
    if not names:
        return []
    waiting = _("open in your JupyterLab, the update goes into its tab: {names}")
    print("[workspace] " + waiting.format(names=listing(names)))
    delivered = lab_link.wait_for_delivery(workspace, names)
    merged = _(
        "merged into the notebook open in your lab, with what you typed there (and saved): {name}"
    )
    lines = [merged.format(name=name) for name in delivered]
    later = _(
        "{name} is open in your lab, which has not taken its update yet: it does as soon as the "
        "notebook's tab is shown again, with what you typed kept (or, if you close the notebook "
        "first, at your next `make workspace`)"
    )
    lines += [later.format(name=name) for name in names if name not in delivered]
    return lines


if __name__ == "__main__":
    sys.exit(main())
