"""What nbgrader and the sandbox get of a submission: a staged copy nbgrader can read safely
(regular files only, bounded in number, depth and size, big notebooks without their outputs, a
renamed notebook under its expected name), the files shipped into the sandbox, the modules a
sandbox imports first, and the paths no sandbox may see.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from nbgrader.coursedir import CourseDirectory

from .data import clean_text
from .files import read_regular, walk
from .grading_limits import LIMITS
from .jsontext import as_utf8, json_values, without_outputs

# An exercise's files that the grader alone reads (its checking processes): never released by
# nbgrader (preprocessors.configure), never copied into a sandbox.
GRADER_ONLY = ["probes.py", "checks.py", "solution.py"]


def files_for_sandbox(folders: list[Path], ignore: list[str]) -> dict[str, bytes]:
    """Regular files (no links, FIFOs or devices; no notebooks, nothing GRADER_ONLY) of the
    folders, later folders winning (the source's over the submission's, as nbgrader copies
    them), size-capped."""
    skip = [*ignore, "*.ipynb", "timestamp.txt", *GRADER_ONLY, "__pycache__"]
    files, total = {}, 0
    for folder in folders:
        for rel in walk(folder, skip)[0]:
            data = read_regular(str(folder / rel), LIMITS.sandbox_files_bytes - total)
            if data is not None:
                total += len(data)
                files[rel] = data
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
        if rel.endswith(".ipynb") and (problem := readable_notebook(data, rel, notes))[0]:
            notes.append(f"{rel} was left out: {problem[0]}")
            continue
        target = staged / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(problem[1] if rel.endswith(".ipynb") else data)
    notes += find_renamed(staged, source)
    return [clean_text(note, LIMITS.name_chars) for note in notes[: LIMITS.notes_kept]]


def readable_notebook(data: bytes, rel: str, notes: list[str]) -> tuple[str | None, bytes]:
    """(why nbgrader may not read it, or None; the notebook nbgrader reads): its JSON values
    counted before anything parses it; too large, or too many values, without its outputs (cut
    out of its bytes); bytes that are not UTF-8 (an editor's or a copy's damage) replaced by
    U+FFFD, with a note, so that the rest of the notebook is graded rather than none of it."""
    values = json_values(data, stop_over=LIMITS.notebook_scan_values)
    if values > LIMITS.notebook_scan_values:
        return f"over {LIMITS.notebook_scan_values} JSON values", data
    if len(data) > LIMITS.strip_over_bytes or values > LIMITS.notebook_values:
        size = f"{len(data) >> 20} MB, {values} JSON values"
        notes.append(f"{rel} is {size}; graded without its outputs")
        data = without_outputs(data)
    data, bad = as_utf8(data)
    if bad:
        notes.append(f"{rel} held {bad} byte(s) that are not UTF-8, replaced by \ufffd")
    if problem := too_big(data):
        return problem, data
    return too_many_cells(data), with_metadata(data, rel, notes)


def too_big(notebook: bytes) -> str | None:
    """Why nbgrader may not read this notebook (it parses and validates it under the batch's
    lock, about 2 KB of memory per JSON value: a huge one would stall every classmate's grading
    and hold the memory), or None."""
    if len(notebook) > LIMITS.strip_over_bytes:
        most = LIMITS.strip_over_bytes >> 20
        return f"{len(notebook) >> 20} MB even without its outputs (at most {most})"
    if (values := json_values(notebook)) > LIMITS.notebook_values:
        return f"{values} JSON values even without its outputs (at most {LIMITS.notebook_values})"
    return None


def parsed(notebook: bytes) -> dict | None:
    """The notebook's JSON (bounded by too_big first), or None: nbgrader says what is wrong."""
    try:
        found = json.loads(notebook)
    except (ValueError, RecursionError):
        return None
    return found if isinstance(found, dict) else None


def too_many_cells(notebook: bytes) -> str | None:
    cells = (parsed(notebook) or {}).get("cells")
    if isinstance(cells, list) and len(cells) > LIMITS.notebook_cells:
        return f"{len(cells)} cells (at most {LIMITS.notebook_cells})"
    return None


def with_metadata(notebook: bytes, rel: str, notes: list[str]) -> bytes:
    """The notebook with each cell's metadata an object: an editor or a script that wrote null
    there makes nbformat refuse the whole notebook (it would score 0); {} it is, with a note."""
    found = parsed(notebook)
    cells = found.get("cells") if found is not None else None
    if not isinstance(cells, list):
        return notebook
    damaged = [c for c in cells if isinstance(c, dict) and not isinstance(c.get("metadata"), dict)]
    if not damaged:
        return notebook
    for cell in damaged:
        cell["metadata"] = {}
    notes.append(f"{rel}: {len(damaged)} cell(s) had metadata that was not an object, now {{}}")
    return json.dumps(found, ensure_ascii=False).encode()


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
