"""Progress at a glance: which try-its and exercises a learner has passed, from their notebooks.

    python -m fxcourse.progress [WORKSPACE ...]     (`make progress`: the learner's own workspace)

It reads what the notebooks saved (JupyterLab autosaves them): a try-it counts as passed when its
checkpoint cell's saved output says "Checkpoint N passed."; an exercise when every visible test
cell of the copy that is submitted (the one fetched in the Assignments tab, else the practice copy
in exercises/) ran without an error. Nothing is run. Given several workspaces, it prints one
block each; `--json` prints the same as data (what the class hub's progress page reads, running
as each learner: grader/hub/progress_service.py).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat

from fxcourse.messages import in_every_language, printed_pattern
from fxcourse.workspace import course_notebooks

CHECKPOINT = re.compile(r"""checkpoint\(\s*["']([\d.]+)["']""")
# "Checkpoint N passed." as a chapter in any of the course's languages prints it.
PASSED = [printed_pattern(text) for text in in_every_language("Checkpoint {id} passed.")]


def tryits(notebook: nbformat.NotebookNode) -> dict[str, bool]:
    """Try-it id -> passed, for every checkpoint cell of a chapter."""
    found = {}
    for cell in notebook.cells:
        if cell.cell_type != "code" or not (match := CHECKPOINT.search(cell.source)):
            continue
        texts = [out.get("data", {}).get("text/plain", "") for out in cell.get("outputs", [])]
        found[match.group(1)] = any(p.match(text) for p in PASSED for text in texts)
    return found


def exercise_state(notebook: nbformat.NotebookNode) -> str:
    """'passed' (every visible test cell ran cleanly), 'failing' or 'not run'."""
    tests = [
        cell
        for cell in notebook.cells
        if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code"
    ]
    if any(out.get("output_type") == "error" for cell in tests for out in cell.get("outputs", [])):
        return "failing"
    if tests and all(cell.get("execution_count") for cell in tests):
        return "passed"
    return "not run"


def progress(workspace: Path) -> dict:
    """{"tryits": {chapter: {try-it id: passed}, or None when the chapter is not a notebook},
    "exercises": {assignment: [state, copy read]}}."""
    found = {"tryits": {}, "exercises": {}}
    for name in course_notebooks():
        path = workspace / name
        if name.startswith("exercises/"):
            assignment = Path(name).stem
            fetched = workspace / assignment / f"{assignment}.ipynb"
            chosen = fetched if fetched.exists() else path
            if not chosen.exists():
                state = "not opened"
            else:
                notebook = _read(chosen)
                state = "unreadable" if notebook is None else exercise_state(notebook)
            found["exercises"][assignment] = [state, str(chosen.relative_to(workspace))]
        elif not path.exists():
            found["tryits"][name] = {}
        else:
            notebook = _read(path)
            found["tryits"][name] = None if notebook is None else tryits(notebook)
    return found


def _read(path: Path) -> nbformat.NotebookNode | None:
    """The notebook at path; None for a file that is not a notebook (the learner's)."""
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError) as error:
        print(inert(f"progress: {path} is not readable as a notebook: {error}"), file=sys.stderr)
        return None


def report(workspace: Path) -> list[str]:
    """The lines shown for one workspace."""
    found = progress(workspace)
    lines, passed, total = [], 0, 0
    for name, marks in found["tryits"].items():
        if marks is None:
            lines.append(f"  {name}: not readable as a notebook")
            continue
        passed, total = passed + sum(marks.values()), total + len(marks)
        shown = " ".join(f"{tid}{'✓' if ok else '·'}" for tid, ok in marks.items())
        lines.append(f"  {name}: {sum(marks.values())}/{len(marks)} try-its passed  {shown}")
    for assignment, (state, copy) in found["exercises"].items():
        lines.append(f"  {assignment}: {state} ({copy})")
    return [f"{workspace}: {passed}/{total} try-its passed", *lines]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workspaces", nargs="*", type=Path, default=[Path("workspace")])
    parser.add_argument("--json", action="store_true", help="one JSON object per workspace")
    args = parser.parse_args(argv)
    missing = [str(folder) for folder in args.workspaces if not folder.is_dir()]
    if missing:
        print(
            f"progress: no workspace at {', '.join(missing)} (make lab creates it)", file=sys.stderr
        )
        return 2
    for folder in args.workspaces:
        lines = [json.dumps(progress(folder))] if args.json else report(folder)
        print("\n".join(map(inert, lines)))
    return 0


def inert(line: str) -> str:
    """A line with what a learner's notebook put in it (try-it ids, file names) unable to steer
    the terminal: characters that are not printable shown as their codes."""
    return "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in line)


if __name__ == "__main__":
    sys.exit(main())
