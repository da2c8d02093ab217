"""What nbgrader and the sandbox get of a submission: a staged copy nbgrader can read safely
(regular files only, bounded in number, depth and size, big notebooks without their outputs, a
renamed notebook under its expected name), the files shipped into the sandbox, the modules a
sandbox imports first, and the paths no sandbox may see.
"""

from __future__ import annotations

import ast
import base64
import json
from pathlib import Path

from nbgrader.coursedir import CourseDirectory

from .data import clean_text
from .files import read_regular, walk
from .limits import LIMITS


def files_for_sandbox(folders: list[Path], ignore: list[str]) -> dict[str, str]:
    """Regular files (no links, FIFOs or devices; no notebooks, probes or checks) of the
    folders, later folders winning (the source's over the submission's, as nbgrader copies
    them), size-capped."""
    skip = [*ignore, "*.ipynb", "timestamp.txt", "probes.py", "checks.py", "__pycache__"]
    files, total = {}, 0
    for folder in folders:
        for rel in walk(folder, skip)[0]:
            data = read_regular(str(folder / rel), LIMITS.sandbox_files_bytes - total)
            if data is not None:
                total += len(data)
                files[rel] = base64.b64encode(data).decode("ascii")
    return files


def preimports(folders: list[Path]) -> list[str]:
    """Modules imported by the source notebooks' code cells and the probes of these exercises,
    but not the modules beside the notebooks (verify.py): those a submission's cells import from
    its own folder, never a template."""
    sources = [(folder / "probes.py").read_text() for folder in folders]
    local = {path.stem for folder in folders for path in folder.glob("*.py")}
    for path in (path for folder in folders for path in sorted(folder.glob("*.ipynb"))):
        cells = json.loads(path.read_text())["cells"]
        sources += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    names = []
    for source in sources:
        lines = [line for line in source.split("\n") if not line.lstrip().startswith(("%", "!"))]
        try:
            nodes = ast.walk(ast.parse("\n".join(lines)))
        except SyntaxError:
            continue
        for node in nodes:
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.append(node.module)
    return [name for name in dict.fromkeys(names) if name.partition(".")[0] not in local]


def forbidden_paths(course: CourseDirectory) -> list[str]:
    """What no sandbox may see: the course, its sources, submissions and gradebook."""
    paths = [course.root, course.format_path(course.source_directory, ".", ".")]
    paths.append(course.format_path(course.submitted_directory, ".", "."))
    if course.db_url.startswith("sqlite:///"):
        paths.append(course.db_url.removeprefix("sqlite:///"))
    return paths


def stage(submitted: Path, staged: Path, source: Path) -> list[str]:
    """A copy of the submission nbgrader can read safely; returns notes on what changed."""
    files, notes = walk(submitted)
    for rel in files:
        data = read_regular(str(submitted / rel), LIMITS.file_cap(rel))
        if data is None:
            notes.append(f"{rel} was left out (too large, or linked)")
            continue
        if rel.endswith(".ipynb"):  # first: json.loads refuses bytes that are not UTF-8
            data = as_utf8(data, rel, notes)
        if rel.endswith(".ipynb") and len(data) > LIMITS.strip_over_bytes:
            notes.append(f"{rel} is {len(data) >> 20} MB; graded without its outputs")
            data = without_outputs(data)
        if rel.endswith(".ipynb") and (problem := too_big(data)):
            notes.append(f"{rel} was left out: {problem}")
            continue
        target = staged / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    notes += find_renamed(staged, source)
    return [clean_text(note, LIMITS.name_chars) for note in notes[: LIMITS.notes_kept]]


def as_utf8(data: bytes, rel: str, notes: list[str]) -> bytes:
    """A notebook's bytes as UTF-8: bytes that are not (an editor's or a copy's damage) replaced
    by U+FFFD, with a note, so that the rest of the notebook is graded rather than none of it."""
    try:
        data.decode("utf-8")
        return data
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
    notes.append(
        f"{rel} held {text.count(chr(0xFFFD))} byte(s) that are not UTF-8, replaced by \ufffd"
    )
    return text.encode("utf-8")


def too_big(notebook: bytes) -> str | None:
    """Why nbgrader may not read this notebook (its parsing and validation run under the batch's
    lock, so a huge one would stall every classmate's grading), or None."""
    if len(notebook) > LIMITS.strip_over_bytes:
        most = LIMITS.strip_over_bytes >> 20
        return f"{len(notebook) >> 20} MB even without its outputs (at most {most})"
    try:
        cells = json.loads(notebook).get("cells")
    except (ValueError, AttributeError, RecursionError):
        return None  # nbgrader reports what is wrong with it
    if isinstance(cells, list) and len(cells) > LIMITS.notebook_cells:
        return f"{len(cells)} cells (at most {LIMITS.notebook_cells})"
    return None


def without_outputs(data: bytes) -> bytes:
    """The notebook without outputs, parsed with memory bounded by its size (not its outputs)."""
    try:
        nb = json.loads(data, object_hook=lambda item: None if "output_type" in item else item)
        for cell in nb["cells"]:
            if isinstance(cell, dict) and "outputs" in cell:
                cell["outputs"] = []
        return json.dumps(nb).encode()
    except (ValueError, TypeError, KeyError, RecursionError):
        return data  # nbgrader reports what is wrong with it


def find_renamed(staged: Path, source: Path) -> list[str]:
    """Put a renamed notebook under the name nbgrader expects, if its answer cells say which."""
    notes = []
    for expected in sorted(source.glob("*.ipynb")):
        if (staged / expected.name).exists():
            continue
        answers = grade_ids(expected.read_bytes())
        for candidate in sorted(staged.rglob("*.ipynb")):
            if answers & grade_ids(candidate.read_bytes()):
                candidate.rename(staged / expected.name)
                notes.append(f"graded {candidate.relative_to(staged)} in place of {expected.name}")
                break
    return notes


def grade_ids(data: bytes) -> set[str]:
    try:
        cells = json.loads(data).get("cells", [])
        return {
            c["metadata"]["nbgrader"]["grade_id"]
            for c in cells
            if "nbgrader" in c.get("metadata", {})
        }
    except (ValueError, AttributeError, KeyError, TypeError, RecursionError):
        return set()
