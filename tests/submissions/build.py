"""Build test submissions for the graded exercises from small snippets.

A snippet, tests/submissions/<name>.py (or tests/hostile/attacks/<name>.py), is one learner's
answer to one exercise. Its docstring names the exercise and the score the grader must give it,
with the reason:

    assignment: ex1_sigmoid_to_tanh
    expected: 5

After the docstring (and imports kept for linting), each marker line starts the source of one
cell, up to the next marker:

    # %% cell: <grade_id>     the full source of that answer cell
    # %% before: <grade_id>   a cell of the learner's own, added before that cell
    # %% draft: <grade_id>    a second copy of that answer cell (same nbgrader metadata), added
                              before it, as a learner who duplicated the cell to keep a draft

Answer cells a snippet does not mention get the reference solution, so a snippet holds only what
it is about.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
MARKER = re.compile(r"^# %% (cell|before|draft): (\S+)\n", re.MULTILINE)
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


@dataclass(frozen=True)
class Snippet:
    name: str
    assignment: str
    expected: float
    cells: dict[str, str]  # answer cell grade_id -> its full source
    added: tuple[tuple[str, str, str], ...] = ()  # (kind, grade_id, source): before / draft


def read_snippet(path: Path) -> Snippet:
    text = path.read_text()
    assignment = re.search(r"^assignment: (\S+)$", text, re.MULTILINE)
    expected = re.search(r"^expected: ([0-9.]+)", text, re.MULTILINE)
    if not (assignment and expected):
        raise ValueError(f"{path.name}: the docstring needs 'assignment:' and 'expected:' lines")
    parts = MARKER.split(text)
    bodies = [body.strip("\n") for body in parts[3::3]]
    found = list(zip(parts[1::3], parts[2::3], bodies, strict=True))
    if not found:
        raise ValueError(f"{path.name}: no '# %% cell: <grade_id>' line")
    cells = {grade_id: body for kind, grade_id, body in found if kind == "cell"}
    added = tuple((kind, grade_id, body) for kind, grade_id, body in found if kind != "cell")
    return Snippet(path.stem, assignment.group(1), float(expected.group(1)), cells, added)


def snippets(folder: Path = HERE) -> list[Snippet]:
    return [read_snippet(path) for path in sorted(folder.glob("ex*.py"))]


def reference_solutions(source: nbformat.NotebookNode) -> dict[str, str]:
    """grade_id -> the solution cell's source with the solution markers removed."""
    solutions = {}
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            lines = cell.source.split("\n")
            kept = [line for line in lines if line.strip() not in SOLUTION_MARKERS]
            solutions[meta["grade_id"]] = "\n".join(kept)
    return solutions


def fill(student, answers: dict[str, str], added=()) -> nbformat.NotebookNode:
    """A copy of the student version with the given answer cells answered and cells added."""
    filled = nbformat.from_dict(student)
    found = set()
    for cell in filled.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
            found.add(grade_id)
    if missing := set(answers) - found:
        raise KeyError(f"no solution cells named {sorted(missing)}")
    for kind, grade_id, source in added:
        at = next(i for i, c in enumerate(filled.cells) if grade_id_of(c) == grade_id)
        new = nbformat.v4.new_code_cell(source)
        if kind == "draft":  # the answer cell again, nbgrader metadata and all
            new.metadata = copy.deepcopy(filled.cells[at].metadata)
        filled.cells.insert(at, new)
    return filled


def grade_id_of(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def submission(student: nbformat.NotebookNode, answers: dict[str, str], snippet: Snippet):
    """The student version answered with the reference `answers`, then the snippet's cells."""
    return fill(student, answers | snippet.cells, snippet.added)


def write_submission(folder: Path, student: str, assignment: str, nb) -> Path:
    """Write nb as <folder>/<student>/<assignment>/<assignment>.ipynb (nbgrader's layout), with
    the timestamp.txt and submission_secret.txt that `nbgrader submit` leaves beside it."""
    path = folder / student / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    (path.parent / "timestamp.txt").write_text("2025-01-06 09:00:00.000000 UTC")
    (path.parent / "submission_secret.txt").write_text(f"secret of {student}")
    return path
