"""Build test submissions for the graded exercises from small snippets.

A snippet, tests/submissions/<name>.py, is one learner's answer to one exercise. Its docstring
names the exercise and the score the grader must give it, with the reason:

    assignment: ex1_sigmoid_to_tanh
    expected: 5

After the docstring (and imports kept for linting), each `# %% cell: <grade_id>` line starts the
full source of that solution cell. Solution cells a snippet does not mention get the reference
solution, so a snippet holds only the mistake it is about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
CELL_MARKER = re.compile(r"^# %% cell: (\S+)\n", re.MULTILINE)
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


@dataclass(frozen=True)
class Snippet:
    name: str
    assignment: str
    expected: float
    cells: dict[str, str]  # solution cell grade_id -> its full source


def read_snippet(path: Path) -> Snippet:
    text = path.read_text()
    assignment = re.search(r"^assignment: (\S+)$", text, re.MULTILINE)
    expected = re.search(r"^expected: ([0-9.]+)", text, re.MULTILINE)
    if not (assignment and expected):
        raise ValueError(f"{path.name}: the docstring needs 'assignment:' and 'expected:' lines")
    parts = CELL_MARKER.split(text)
    cells = {
        grade_id: body.strip("\n") for grade_id, body in zip(parts[1::2], parts[2::2], strict=True)
    }
    if not cells:
        raise ValueError(f"{path.name}: no '# %% cell: <grade_id>' line")
    return Snippet(path.stem, assignment.group(1), float(expected.group(1)), cells)


def snippets() -> list[Snippet]:
    return [read_snippet(path) for path in sorted(HERE.glob("ex*.py"))]


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


def fill(student: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    """A copy of the student version with the given solution cells answered."""
    filled = nbformat.from_dict(student)
    found = set()
    for cell in filled.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
            found.add(grade_id)
    if missing := set(answers) - found:
        raise KeyError(f"no solution cells named {sorted(missing)}")
    return filled


def write_submission(folder: Path, student: str, assignment: str, nb) -> Path:
    """Write nb as <folder>/<student>/<assignment>/<assignment>.ipynb (nbgrader's layout)."""
    path = folder / student / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path
