"""What the checks said the last time they ran, written down where the learner's notebooks live,
so that progress (`make progress`, the hub's progress page) agrees with them at once: a notebook's
saved outputs are only as new as its last save, and nbgrader's Validate saves none at all.

Two records, both in the workspace's hidden .fxcourse/results/ (a workspace is the folder a
sync wrote its .fxcourse/course/ bases into; outside one, such as the course's own chapters/
under the tests, nothing is written):

- a checkpoint block, when it ends, writes its try-it's result (tryit-<id>.json);
- an exercise's test cells import verify.py, whose released copies end in RECORDING (written
  there by Generate, grader/exercises.py, and by `make chapters` for a translation's; no
  exercise's own verify.py holds it), which asks for every later cell of that kernel to be
  recorded: whether it ran without an error, keyed by the SHA-256 of its text (the file mirrors
  the notebook's folder: exercises/<assignment>.json, <assignment>.json for a fetched copy).
  Validate runs the notebook in a kernel of its own, in the notebook's folder: its run is
  recorded the same way.

The records are the learner's own files, so what is read back is a claim: read with a size cap,
anything not shaped as written is ignored.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
from pathlib import Path

RESULTS = ".fxcourse/results"
BASES = ".fxcourse/course"  # fxcourse.workspace.BASES: a sync made the folder holding it
MAX_BYTES = 256 * 1024
MAX_CELLS = 200  # cell texts remembered per notebook folder: the newest
TRYIT_ID = re.compile(r"^[0-9]+(\.[0-9]+)*$")
WHEN = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def workspace_of(folder: Path) -> Path | None:
    """The workspace holding `folder` (itself or one of the two folders above it), if any."""
    folder = folder.resolve()
    for candidate in [folder, *folder.parents][:3]:
        if (candidate / BASES).is_dir():
            return candidate
    return None


def cell_key(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _write(path: Path, data: dict) -> None:
    """Whole or not at all: a reader never meets half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(data))
    os.replace(partial, path)


def read(path: Path) -> dict:
    """A record as a dict; empty when missing, too large or not JSON."""
    try:
        with open(path, "rb") as file:
            text = file.read(MAX_BYTES + 1)
        data = json.loads(text) if len(text) <= MAX_BYTES else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# ----------------------------------------------------------------------------- the kernel's side


def record_tryit(tryit_id: str, passed: bool, folder: Path | None = None) -> None:
    """A checkpoint's result, in the workspace of `folder` (the kernel's working folder)."""
    home = workspace_of(folder or Path.cwd())
    if home is None or not TRYIT_ID.match(tryit_id) or _grading():
        return
    _write(home / RESULTS / f"tryit-{tryit_id}.json", {"passed": bool(passed), "at": now()})


def _grading() -> bool:
    return os.environ.get("NBGRADER_EXECUTION") == "autograde"


class CellRecorder:
    """IPython's post_run_cell callback: each cell's text (hashed) and whether it ran cleanly."""

    def __init__(self, path: Path):
        self.path = path

    def __call__(self, result) -> None:
        try:
            cells = read(self.path).get("cells", {})
            cells = cells if isinstance(cells, dict) else {}
            cells.pop(key := cell_key(result.info.raw_cell), None)
            cells[key] = {"ok": bool(result.success), "at": now()}
            _write(self.path, {"cells": dict(list(cells.items())[-MAX_CELLS:])})
        except OSError:
            pass  # a full disk or a read-only folder costs the record, never the learner's cell


# The end of every released verify.py: an exercise copied without the course's fxcourse package
# (or with one that cannot be imported) runs its tests unrecorded.
RECORDING = """
try:
    from fxcourse.results import record_cells
except (ImportError, OSError):
    pass
else:
    record_cells()
"""


def with_recording(module: str) -> str:
    """The text of an exercise's verify.py, released: RECORDING at its end (once)."""
    if module.endswith(RECORDING):
        return module
    return f"{module.rstrip()}\n\n{RECORDING}"


def record_cells(folder: Path | None = None) -> None:
    """From now on, record every cell this kernel runs (see the module docstring). Once per
    kernel; nothing outside a workspace, in a plain Python or under nbgrader's autograde."""
    try:
        shell = get_ipython()  # type: ignore[name-defined]  # noqa: F821 - IPython's builtin
    except NameError:
        return
    folder = (folder or Path.cwd()).resolve()
    home = workspace_of(folder)
    if home is None or _grading() or shell is None:
        return
    recorder = CellRecorder(home / RESULTS / f"{folder.relative_to(home)}.json")
    callbacks = shell.events.callbacks["post_run_cell"]
    if not any(isinstance(known, CellRecorder) for known in callbacks):
        shell.events.register("post_run_cell", recorder)


# ----------------------------------------------------------------------------- progress's side


def tryit_results(workspace: Path) -> dict[str, tuple[bool, str]]:
    """Try-it id -> (passed, when) as its checkpoint last said."""
    found = {}
    for path in sorted((workspace / RESULTS).glob("tryit-*.json")):
        tryit_id, data = path.stem.removeprefix("tryit-"), read(path)
        passed, when = data.get("passed"), data.get("at")
        if TRYIT_ID.match(tryit_id) and isinstance(passed, bool) and _is_when(when):
            found[tryit_id] = (passed, when)
    return found


def cell_results(workspace: Path, notebook: Path) -> dict[str, tuple[bool, str]]:
    """Cell text's SHA-256 -> (ran cleanly, when), for the cells last run in notebook's folder."""
    folder = notebook.parent.relative_to(workspace)
    cells = read(workspace / RESULTS / f"{folder}.json").get("cells")
    if not isinstance(cells, dict):
        return {}
    return {
        key: (cell["ok"], cell["at"])
        for key, cell in cells.items()
        if isinstance(cell, dict) and isinstance(cell.get("ok"), bool) and _is_when(cell.get("at"))
    }


def _is_when(value: object) -> bool:
    return isinstance(value, str) and bool(WHEN.match(value))


def saved_at(path: Path) -> str:
    """When the file was last written, as the records write times."""
    stamp = datetime.datetime.fromtimestamp(path.lstat().st_mtime, datetime.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
