"""Read the instructor's source notebooks and the students' submissions (grader side).

The instructor's source notebook (nbgrader source format) is the only origin of setup, read-only
and test cells, identified by their nbgrader ``grade_id``. From a submission only the code of the
answer (solution) cells is taken. Submissions are parsed defensively: any file may be empty,
truncated, not UTF-8, not JSON, renamed, from another assignment, or enormous; each case ends in a
readable note or problem, never in an exception.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from . import VERSION

MAX_NOTEBOOK_BYTES = 200 * 1024 * 1024
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_FILES_TOTAL = 50 * 1024 * 1024
MAX_FILES = 500
MAX_SOLUTION_CHARS = 1_000_000
HIDDEN = re.compile(
    r"^[ \t]*#+[ \t]*BEGIN HIDDEN TESTS.*?^[ \t]*#+[ \t]*END HIDDEN TESTS[^\n]*\n?", re.S | re.M
)
IGNORED_PARTS = {".ipynb_checkpoints", "__pycache__", ".git"}


def cell_source(cell: dict) -> str | None:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return source if isinstance(source, str) else None


def nbgrader_meta(cell: dict) -> dict:
    meta = cell.get("metadata")
    meta = meta.get("nbgrader") if isinstance(meta, dict) else None
    return meta if isinstance(meta, dict) else {}


def visible_test_source(source: str) -> str:
    """A test cell as the learner saw it: hidden test blocks removed (an unclosed block hides
    everything after its start)."""
    visible = HIDDEN.sub("", source)
    cut = re.search(r"^[ \t]*#+[ \t]*BEGIN HIDDEN TESTS", visible, re.M)
    return visible[: cut.start()] if cut else visible


@dataclass
class SourceCell:
    index: int
    id: str
    cell_type: str
    kind: str  # instructor | solution | test | manual | markdown
    source: str
    points: float = 0.0
    locked: bool = False
    metadata: dict = field(default_factory=dict)


@dataclass
class SourceNotebook:
    name: str  # file name, e.g. ex1.ipynb
    cells: list[SourceCell]
    kernelspec: dict = field(default_factory=dict)

    @property
    def stem(self) -> str:
        return self.name[: -len(".ipynb")]

    @property
    def tests(self) -> list[SourceCell]:
        return [c for c in self.cells if c.kind == "test"]

    @property
    def solution_ids(self) -> list[str]:
        return [c.id for c in self.cells if c.kind == "solution"]

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.tests)

    def worker_spec(self) -> dict:
        cells = []
        for cell in self.cells:
            if cell.kind in ("instructor", "test"):
                cells.append({"id": cell.id, "kind": cell.kind, "source": cell.source})
            elif cell.kind == "solution":
                cells.append({"id": cell.id, "kind": "solution"})
        return {"name": self.name, "cells": cells}


@dataclass
class Assignment:
    name: str
    source_dir: Path
    notebooks: list[SourceNotebook]
    files: dict[str, bytes]  # non-notebook files of the source folder (public release material)
    sha256: str

    @property
    def max_score(self) -> float:
        return sum(nb.max_score for nb in self.notebooks)

    def preimports(self) -> list[str]:
        import ast

        names: list[str] = []
        for nb in self.notebooks:
            for cell in nb.cells:
                if cell.kind not in ("instructor", "test"):
                    continue
                try:
                    tree = ast.parse(cell.source)
                except SyntaxError:
                    continue
                for node in ast.walk(tree):
                    if isinstance(node, ast.Import):
                        names += [a.name for a in node.names]
                    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                        names.append(node.module)
        return list(dict.fromkeys(names))


def classify(cell: dict, index: int) -> SourceCell:
    meta = nbgrader_meta(cell)
    cell_type = cell.get("cell_type") if isinstance(cell.get("cell_type"), str) else "raw"
    source = cell_source(cell) or ""
    grade_id = meta.get("grade_id")
    cell_id = grade_id if isinstance(grade_id, str) and grade_id else f"cell-{index}"
    points = meta.get("points", 0) or 0
    points = float(points) if isinstance(points, int | float) else 0.0
    locked = bool(meta.get("locked"))
    if cell_type == "code" and meta.get("solution"):
        kind = "solution"
    elif cell_type == "code" and meta.get("grade"):
        kind = "test"
    elif cell_type == "code":
        kind = "instructor"
    elif meta.get("grade") or meta.get("task") or meta.get("solution"):
        kind = "manual"
    else:
        kind = "markdown"
    metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    return SourceCell(index, cell_id, cell_type, kind, source, points, locked, metadata)


def load_source_notebook(path: Path) -> SourceNotebook:
    data = json.loads(path.read_text(encoding="utf-8"))
    cells = [classify(c, i) for i, c in enumerate(data.get("cells", [])) if isinstance(c, dict)]
    ids = [c.id for c in cells if c.kind in ("solution", "test")]
    duplicates = {i for i in ids if ids.count(i) > 1}
    if duplicates:
        raise ValueError(f"{path}: duplicate nbgrader grade_id(s) {sorted(duplicates)}")
    kernelspec = data.get("metadata", {}).get("kernelspec", {})
    return SourceNotebook(path.name, cells, kernelspec if isinstance(kernelspec, dict) else {})


def load_assignment(name: str, source_dir: Path) -> Assignment:
    source_dir = Path(source_dir)
    paths = sorted(p for p in source_dir.glob("*.ipynb") if p.is_file())
    if not paths:
        raise FileNotFoundError(f"no source notebooks in {source_dir}")
    digest = hashlib.sha256(f"safegrade {VERSION}\n".encode())
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    files = {}
    for rel, data in _regular_files(source_dir, {".ipynb"}):
        files[rel] = data
        digest.update(rel.encode() + b"\0" + data + b"\0")
    notebooks = [load_source_notebook(p) for p in paths]
    return Assignment(name, source_dir, notebooks, files, digest.hexdigest())


def _regular_files(root: Path, skip_suffixes: set[str]) -> list[tuple[str, bytes]]:
    """Regular files under root (no symlinks followed), size-capped; (relative path, bytes)."""
    found, total = [], 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_PARTS)
        for filename in sorted(filenames):
            path = os.path.join(dirpath, filename)
            rel = os.path.relpath(path, root)
            if Path(filename).suffix in skip_suffixes or filename == "timestamp.txt":
                continue
            data = _read_regular(path, MAX_FILE_BYTES)
            if data is None or len(found) >= MAX_FILES or total + len(data) > MAX_FILES_TOTAL:
                continue
            total += len(data)
            found.append((rel, data))
    return found


def _read_regular(path: str, cap: int) -> bytes | None:
    """The bytes of a regular file, refusing symlinks, devices, FIFOs and hard links."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_size > cap:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(cap + 1)[:cap]
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------- submissions


@dataclass
class SubmittedNotebook:
    name: str  # the source notebook it answers
    graded_file: str | None = None
    solutions: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None  # set when nothing can run: the notebook scores 0 for this reason
    cells: list[dict] = field(default_factory=list)  # the parsed submission cells (for reports)


@dataclass
class Submission:
    student: str
    path: Path
    notebooks: dict[str, SubmittedNotebook]
    files: dict[str, bytes]
    sha256: str
    timestamp: str | None


def read_notebook_bytes(data: bytes) -> tuple[list[dict] | None, list[str], str | None]:
    """(cells, notes, problem) from raw notebook bytes."""
    notes: list[str] = []
    if not data.strip():
        return None, notes, "the notebook file is empty"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", "replace")
        notes.append(f"the notebook is not valid UTF-8 (byte {exc.start}); bad bytes replaced")
    try:
        nb = json.loads(text)
    except RecursionError:
        return None, notes, "the notebook is nested too deeply to read"
    except ValueError as exc:
        detail = getattr(exc, "msg", str(exc))
        where = f" at line {exc.lineno}" if hasattr(exc, "lineno") else ""
        return None, notes, f"the notebook is not valid JSON ({detail}{where}; truncated file?)"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None, notes, "the file is not an nbformat 4 notebook (no list of cells)"
    cells = [c for c in nb["cells"] if isinstance(c, dict)]
    return cells, notes, None


def extract_solutions(source: SourceNotebook, cells: list[dict], notes: list[str]) -> dict:
    wanted = set(source.solution_ids)
    test_ids = {c.id for c in source.tests}
    solutions: dict[str, str] = {}
    seen_tests: dict[str, int] = {}
    for cell in cells:
        grade_id = nbgrader_meta(cell).get("grade_id")
        if not isinstance(grade_id, str):
            continue
        if grade_id in test_ids:
            seen_tests[grade_id] = seen_tests.get(grade_id, 0) + 1
        if grade_id not in wanted:
            continue
        if cell.get("cell_type") != "code":
            notes.append(f"answer cell {grade_id!r} is not a code cell; ignored")
            continue
        code = cell_source(cell)
        if code is None:
            notes.append(f"answer cell {grade_id!r} has no readable source")
            continue
        if grade_id in solutions:
            notes.append(f"answer cell {grade_id!r} appears more than once; the first was graded")
            continue
        if len(code) > MAX_SOLUTION_CHARS:
            notes.append(f"answer cell {grade_id!r} is over {MAX_SOLUTION_CHARS} characters")
            code = "raise RuntimeError('answer cell too long to grade')"
        solutions[grade_id] = code
    for grade_id in source.solution_ids:
        if grade_id not in solutions:
            notes.append(f"answer cell {grade_id!r} is missing")
    for test in source.tests:
        count = seen_tests.get(test.id, 0)
        if count == 0:
            notes.append(f"test cell {test.id!r} was deleted (the instructor's copy was run)")
        elif count > 1:
            notes.append(f"test cell {test.id!r} was duplicated (the instructor's copy was run)")
    return solutions


def _notebook_candidates(folder: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_PARTS)
        found += [Path(dirpath, f) for f in sorted(filenames) if f.endswith(".ipynb")]
    return found


def parse_submission(student: str, folder: Path, assignment: Assignment) -> Submission:
    folder = Path(folder)
    digest = hashlib.sha256()
    candidates = _notebook_candidates(folder)
    raw: dict[Path, bytes | None] = {
        p: _read_regular(str(p), MAX_NOTEBOOK_BYTES) for p in candidates
    }
    for path, data in sorted(raw.items()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        digest.update(hashlib.sha256(data or b"<unreadable>").digest())
    files = _regular_files(folder, {".ipynb"})
    for rel, data in files:
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    timestamp = None
    stamp = _read_regular(str(folder / "timestamp.txt"), 4096)
    if stamp is not None:
        timestamp = stamp.decode("utf-8", "replace").strip()[:64]
        digest.update(b"timestamp\0" + stamp)

    parsed: dict[Path, tuple] = {}
    for path, data in raw.items():
        if data is None:
            parsed[path] = (None, [], "the notebook file cannot be read (too large or not a file)")
        else:
            parsed[path] = read_notebook_bytes(data)

    notebooks = {}
    used: set[Path] = set()
    for source in assignment.notebooks:
        notebooks[source.name] = _match(source, folder, parsed, used)
    return Submission(student, folder, notebooks, dict(files), digest.hexdigest(), timestamp)


def _match(source: SourceNotebook, folder: Path, parsed: dict, used: set) -> SubmittedNotebook:
    result = SubmittedNotebook(source.name)
    expected = folder / source.name
    wanted = set(source.solution_ids)

    def matches(path: Path) -> int:
        cells = parsed[path][0] or []
        return len({nbgrader_meta(c).get("grade_id") for c in cells} & wanted)

    if expected in parsed:
        chosen = expected
    else:
        others = [p for p in parsed if p not in used and matches(p)]
        if not others:
            names = ", ".join(sorted(str(p.relative_to(folder)) for p in parsed)) or "none"
            result.problem = (
                f"no notebook answers {source.name} (notebooks found: {names}; "
                "renamed, or another assignment?)"
            )
            return result
        chosen = max(others, key=matches)
        result.notes.append(f"graded {chosen.relative_to(folder)} in place of {source.name}")
    used.add(chosen)
    result.graded_file = str(chosen.relative_to(folder))
    cells, notes, problem = parsed[chosen]
    result.notes += notes
    if problem:
        result.problem = problem
        return result
    result.cells = cells
    result.solutions = extract_solutions(source, cells, result.notes)
    if wanted and not result.solutions:
        result.problem = (
            f"none of the {len(wanted)} answer cells of {source.name} is in "
            f"{result.graded_file} (another assignment, or cells deleted?)"
        )
    return result
