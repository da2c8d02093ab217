"""The learner's workspace: their own copies of the chapters and exercises, outside git's view.

    python -m fxcourse.workspace sync [--workspace DIR]
    python -m fxcourse.workspace exchange     create the exchange folder if needed, print its path

`make lab` runs `sync` and opens JupyterLab in the workspace (default: ./workspace, git-ignored).
The first run copies every chapter and exercise starter. Later runs bring in new chapters and
course updates of the notebooks the learner has not changed since they were copied; a notebook the
learner changed (edited, saved, ran) is never touched: sync says a newer version exists, and
deleting or renaming the learner's copy brings the course's version on the next sync. What was
copied is remembered in the workspace's .fxcourse-sync.json (one SHA-256 per notebook).

sync also writes the workspace's nbgrader_config.py: nbgrader's Assignments tab and Validate
button read it (the course id, the exchange to fetch from and submit to; fetched assignments land
in the workspace). The exchange root is $FXCOURSE_EXCHANGE, else the course's own grader/exchange
(created, writable by everyone as nbgrader requires), else ./exchange in a student edition.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ".fxcourse-sync.json"
COURSE_ID = "fx-course"
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


@dataclass
class SyncReport:
    copied: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # learner's edits, with a newer course version

    def lines(self) -> list[str]:
        found = [f"new: {name}" for name in self.copied]
        found += [f"updated (you had not changed it): {name}" for name in self.updated]
        found += [
            f"kept your copy of {name}; the course has a newer version: rename or delete yours "
            "and run `make lab` (or `make workspace`) again to get it"
            for name in self.kept
        ]
        return found


def course_notebooks(root: Path = ROOT) -> dict[str, Path]:
    """Workspace-relative name -> the course's learner notebook it is copied from."""
    chapters = root / "chapters"
    found = {p.name: p for p in sorted(chapters.glob("[0-9][0-9]_*.ipynb"))}
    found |= {f"exercises/{p.name}": p for p in sorted((chapters / "exercises").glob("*.ipynb"))}
    return found


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sync(workspace: Path, root: Path = ROOT) -> SyncReport:
    """Copy new notebooks, and those the learner left unchanged, into `workspace`."""
    workspace.mkdir(parents=True, exist_ok=True)
    manifest_path = workspace / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    report = SyncReport()
    for name, source in course_notebooks(root).items():
        target = workspace / name
        wanted = _digest(source)
        if target.exists() and _digest(target) == wanted:
            manifest[name] = wanted
            continue
        if target.exists() and _digest(target) != manifest.get(name):
            report.kept.append(name)
            continue
        (report.updated if target.exists() else report.copied).append(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        manifest[name] = wanted
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    write_nbgrader_config(workspace, exchange_root(root))
    return report


def exchange_root(root: Path = ROOT) -> Path:
    if configured := os.environ.get("FXCOURSE_EXCHANGE"):
        return Path(configured).resolve()
    return root / "grader" / "exchange" if (root / "grader").is_dir() else root / "exchange"


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
    args = parser.parse_args(argv)
    if args.command == "exchange":
        print(ensure_exchange(exchange_root()))
        return 0
    report = sync(args.workspace.resolve())
    for line in report.lines():
        print(f"[workspace] {line}")
    print(f"[workspace] {args.workspace} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
