"""Progress at a glance: which try-its and exercises a learner has passed, from their notebooks.

    python -m fxcourse.progress [--language CODE] [WORKSPACE ...]
                        (`make progress`: the learner's own workspace, in their language)

A try-it counts as passed when its checkpoint last said so; an exercise when every visible test
cell of the copy that is submitted (the one fetched in the Assignments tab, else the practice copy
in exercises/) last ran without an error, in the lab or under nbgrader's Validate. Those results
are recorded as the checks run (fxcourse/results.py), so progress agrees with what the checks say
now, saved or not; a check with no record (run before records were kept) is read from the saved
notebook's outputs. Each chapter and exercise says when that was ("checks ran" or "notebook
saved"; nothing for a notebook the learner never saved, whose file time is only when the sync
copied it). Nothing is run. Given several workspaces, it prints one block each; `--json` prints the
same as data (what the class hub's progress page reads, running as each learner:
grader/hub/progress_service.py), whose states and "checks ran"/"notebook saved" stay English keys
whatever the language; `--language CODE` (a code of fxcourse.languages, as `make progress LANG=zh`
passes it) says the lines in that language, FXCOURSE_LANGUAGE's by default (fxcourse.messages).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from enum import StrEnum
from pathlib import Path

import nbformat

from fxcourse import languages, results
from fxcourse.course_update import untouched
from fxcourse.messages import _, in_every_language, listing, printed_pattern, use_language
from fxcourse.workspace import course_notebooks


class ExerciseState(StrEnum):
    """An exercise's state in a learner's progress: the one vocabulary of progress()'s data, the
    learner's lines (shown_state) and the class hub's progress page, which accepts a workspace's
    claim only in these words (grader/hub/progress_service.py)."""

    PASSED = "passed"
    FAILING = "failing"
    NOT_RUN = "not run"
    NOT_OPENED = "not opened"
    UNREADABLE = "unreadable"


# What a chapter's or exercise's time says (progress()'s "as_of"), in the same data.
CHECKS_RAN, NOTEBOOK_SAVED = "checks ran", "notebook saved"
AS_OF_KINDS = (CHECKS_RAN, NOTEBOOK_SAVED)
CHECKPOINT = re.compile(r"""checkpoint\(\s*["']([\d.]+)["']""")
# "Checkpoint N passed." as a chapter in any of the course's languages prints it.
PASSED = [printed_pattern(text) for text in in_every_language("Checkpoint {id} passed.")]


def tryits(notebook: nbformat.NotebookNode, recorded: dict | None = None) -> dict[str, bool]:
    """Try-it id -> passed, for every checkpoint cell of a chapter: as its checkpoint last said
    (`recorded`: results.tryit_results), else as its saved output says."""
    found = {}
    for cell in notebook.cells:
        if cell.cell_type != "code" or not (match := CHECKPOINT.search(cell.source)):
            continue
        if (tryit_id := match.group(1)) in (recorded or {}):
            found[tryit_id] = recorded[tryit_id][0]
            continue
        texts = [out.get("data", {}).get("text/plain", "") for out in cell.get("outputs", [])]
        found[tryit_id] = any(p.match(text) for p in PASSED for text in texts)
    return found


def test_cells(notebook: nbformat.NotebookNode) -> list:
    return [
        cell
        for cell in notebook.cells
        if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code"
    ]


def exercise_state(notebook: nbformat.NotebookNode, recorded: dict | None = None) -> ExerciseState:
    """'passed' (every visible test cell last ran cleanly), 'failing' or 'not run'. A cell's last
    run is in `recorded` (results.cell_results), else in its saved outputs."""
    states = []
    for cell in test_cells(notebook):
        if (key := results.cell_key(cell.source)) in (recorded or {}):
            states.append("ok" if recorded[key][0] else "error")
        elif any(out.get("output_type") == "error" for out in cell.get("outputs", [])):
            states.append("error")
        else:
            states.append("ok" if cell.get("execution_count") else "not run")
    if "error" in states:
        return ExerciseState.FAILING
    if states and set(states) == {"ok"}:
        return ExerciseState.PASSED
    return ExerciseState.NOT_RUN


def as_of(path: Path, times: list[str], workspace: Path | None = None) -> list[str] | None:
    """["checks ran", when] for the newest recorded run among `times`, else ["notebook saved",
    the file's time]; None for a link (whatever it points at is not the learner's to date) and
    for a copy still as the workspace's sync wrote it (never saved by the learner: its time is
    the sync's)."""
    if times:
        return [CHECKS_RAN, max(times)]
    if path.is_symlink():
        return None
    if workspace is not None and path.is_relative_to(workspace):
        if untouched(workspace, str(path.relative_to(workspace))):
            return None
    return [NOTEBOOK_SAVED, results.saved_at(path)]


def chapter_progress(
    workspace: Path, path: Path, recorded: dict
) -> tuple[dict | None, list[str] | None]:
    notebook = _read(path)
    if notebook is None:
        return None, None
    marks = tryits(notebook, recorded)
    return marks, as_of(path, [recorded[t][1] for t in marks if t in recorded], workspace)


def exercise_progress(workspace: Path, path: Path) -> tuple[ExerciseState, list[str] | None]:
    notebook = _read(path)
    if notebook is None:
        return ExerciseState.UNREADABLE, None
    recorded = results.cell_results(workspace, path)
    keys = [results.cell_key(cell.source) for cell in test_cells(notebook)]
    times = [recorded[k][1] for k in keys if k in recorded]
    return exercise_state(notebook, recorded), as_of(path, times, workspace)


def fetched_copies(workspace: Path, exercise: str) -> list[Path]:
    """Where the Assignments tab puts the exercise in each language (a Chinese class fetches
    <exercise>-zh: fxcourse.languages.assignment)."""
    names = dict.fromkeys(languages.assignment(exercise, code) for code in languages.codes())
    return [workspace / name / f"{name}.ipynb" for name in names]


def progress(workspace: Path) -> dict:
    """{"tryits": {chapter: {try-it id: passed}, or None when the chapter is not a notebook},
    "exercises": {assignment: [state, copy read]}, "as_of": {chapter or assignment: [what,
    when]}} (as_of(): when the results shown were last checked)."""
    found = {"tryits": {}, "exercises": {}, "as_of": {}}
    recorded = results.tryit_results(workspace)
    for name in course_notebooks():
        path = workspace / name
        if name.startswith("exercises/"):
            assignment = Path(name).stem
            chosen = next((p for p in fetched_copies(workspace, assignment) if p.exists()), path)
            when = None
            if not chosen.exists():
                state = ExerciseState.NOT_OPENED
            else:
                state, when = exercise_progress(workspace, chosen)
            found["exercises"][assignment] = [state, str(chosen.relative_to(workspace))]
        elif not path.exists():
            found["tryits"][name], when = {}, None
        else:
            found["tryits"][name], when = chapter_progress(workspace, path, recorded)
        if when:
            found["as_of"][Path(name).stem if name.startswith("exercises/") else name] = when
    return found


def _read(path: Path) -> nbformat.NotebookNode | None:
    """The notebook at path; None for a file that is not a notebook (the learner's)."""
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError) as error:
        unreadable = _("progress: {path} is not readable as a notebook: {error}")
        print(inert(unreadable.format(path=path, error=error)), file=sys.stderr)
        return None


def report(workspace: Path) -> list[str]:
    """The lines shown for one workspace, in fxcourse.messages' language."""
    found = progress(workspace)
    lines, passed, total = [], 0, 0
    counted = _("{name}: {passed}/{total} try-its passed")
    for name, marks in found["tryits"].items():
        if marks is None:
            lines.append("  " + _("{name}: not readable as a notebook").format(name=name))
            continue
        passed, total = passed + sum(marks.values()), total + len(marks)
        shown = " ".join(f"{tid}{'✓' if ok else '·'}" for tid, ok in marks.items())
        line = counted.format(name=name, passed=sum(marks.values()), total=len(marks))
        lines.append(f"  {line}  {shown}" + when(found["as_of"].get(name)))
    for assignment, (state, copy) in found["exercises"].items():
        shown = _("{assignment}: {state} ({copy})").format(
            assignment=assignment, state=shown_state(state), copy=copy
        )
        lines.append(f"  {shown}" + when(found["as_of"].get(assignment)))
    return [counted.format(name=workspace, passed=passed, total=total), *lines]


def shown_state(state: str) -> str:
    """An exercise's state (progress()'s English key) as the learner reads it."""
    shown = {
        ExerciseState.PASSED: _("passed"),
        ExerciseState.FAILING: _("failing"),
        ExerciseState.NOT_RUN: _("not run"),
        ExerciseState.NOT_OPENED: _("not opened"),
        ExerciseState.UNREADABLE: _("unreadable"),
    }
    return shown.get(state, state)


def when(stamp: list[str] | None) -> str:
    """ "  [checks ran 2026-01-31 12:00 UTC]", or nothing for a notebook not opened yet."""
    if not stamp:
        return ""
    what, at = stamp
    shown = {"checks ran": _("checks ran"), "notebook saved": _("notebook saved")}.get(what, what)
    return f"  [{shown} {at[:10]} {at[11:16]} UTC]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workspaces", nargs="*", type=Path, default=[Path("workspace")])
    parser.add_argument("--json", action="store_true", help="one JSON object per workspace")
    parser.add_argument("--language", choices=languages.codes(), help="of the lines shown")
    args = parser.parse_args(argv)
    if args.language:
        use_language(args.language)
    missing = [str(folder) for folder in args.workspaces if not folder.is_dir()]
    if missing:
        nowhere = _("progress: no workspace at {folders} (make lab creates it)")
        print(nowhere.format(folders=listing(missing)), file=sys.stderr)
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
