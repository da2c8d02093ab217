"""The course's nbgrader preprocessors (grader/nbgrader_config.py puts them in place).

SandboxExecute replaces nbgrader's Execute step of ``Autograde``; everything else (gradebook,
timestamps, late penalties, the autograded notebook, feedback) stays nbgrader's own. It sends the
notebook's code cells, in nbgrader's order, to a sandbox (``sandbox``), with each graded test
cell replaced by the instructor's probe for it. The records that come back are data. Each probe's
data then goes, with the exercise's checks, to a check process of this submission's own (a second
sandboxed child, ``checking``), which decodes it under size caps, rebuilds graphs without
compiling code and returns each verdict as data; this process, which holds the gradebook and the
grading secret, never decodes a learner's graph or runs a check on learner data. A failing check
becomes an error output of its cell, which is what nbgrader scores.
``--SandboxExecute.unsandboxed=True`` runs nbgrader's plain kernel instead, with a loud warning.

ResilientExecute: the plain path; a kernel that dies fails its cell and the later ones.
HideHiddenTests: feedback without hidden tests, tracebacks of graded cells cut to their last line.
"""

from __future__ import annotations

import ast
import base64
import fnmatch
import hashlib
import json
import os
import re
import secrets
import stat
import sys
import threading
from pathlib import Path

from nbclient.exceptions import DeadKernelError
from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import (
    ClearHiddenTests,
    DeduplicateIds,
    Execute,
    GetGrades,
    NbGraderPreprocessor,
)
from traitlets import Bool, Float, Integer, List

from . import checking, probing
from .checking import GraderFailure
from .data import clean_text, encode
from .runner import FRAME_CAP
from .sandbox import Limits, Pool, SandboxError, memory_limit_in_force

MAX_FILES_BYTES = 32 << 20  # the submission's other files, shipped into the sandbox
MAX_FILES, MAX_DEPTH = 1000, 16
UNSANDBOXED = (
    "UNSANDBOXED GRADING: learners' code runs in a plain kernel with your permissions and can "
    "read the hidden tests, the gradebook and your files, and forge its own score. Use it only "
    "for code you trust (--SandboxExecute.unsandboxed=True was given)."
)


def configure(c, source: Path) -> None:
    """The grading settings of a course's nbgrader configuration (grader/nbgrader_config.py):
    Autograde's Execute step replaced by SandboxExecute, deleted test cells put back, probes and
    checks never released, feedback without hidden tests, where the hidden part of each test cell
    finds the exercises' probes and checks (SAFEGRADE_SOURCE, kernel.py), and this interpreter's
    folder on PATH (for nbgrader's `alembic`). Limits: Execute.timeout (per cell) and the traits
    of SandboxExecute, set after this call."""
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.converters import Autograde

    steps = Autograde.class_traits()["autograde_preprocessors"].default()
    c.Autograde.autograde_preprocessors = [SandboxExecute if s is Execute else s for s in steps]
    steps = Autograde.class_traits()["sanitize_preprocessors"].default()
    at = steps.index(DeduplicateIds) + 1
    c.Autograde.sanitize_preprocessors = [*steps[:at], ForgetDuplicates, *steps[at:]]
    c.OverwriteCells.add_missing_cells = True
    c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]
    c.CourseDirectory.ignore += ["probes.py", "checks.py"]
    c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, HideHiddenTests]
    c.Autograde.pre_convert_hook = ClearUnreadableUpload(c)
    os.environ["SAFEGRADE_SOURCE"] = str(source)
    # nbgrader's gradebook runs the `alembic` command; make and `make lab` do not activate the venv.
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])


class ClearUnreadableUpload:
    """Autograde's pre-convert hook (also under plain `nbgrader autograde` and the formgrader's
    button): before a submission whose notebooks cannot be read is graded (and fails), its
    earlier grade, autograded notebook and feedback are removed, so that no grade of an earlier
    upload outlives it (nbgrader's own failure handling removes only the autograded folder)."""

    def __init__(self, config):
        self.config = config

    def __call__(self, assignment: str, student: str, notebooks: list[str]) -> None:
        import nbformat
        from nbgrader.coursedir import CourseDirectory

        from .batch import clear_earlier

        course = CourseDirectory(config=self.config)
        # nbgrader passes the command line's ids ("*" for every student): each notebook's folder
        # says whose it is
        folder = course.format_path(
            course.submitted_directory, "(?P<s>[^/]+)", "(?P<a>[^/]+)", escape=True
        )
        for path in notebooks:
            try:
                nbformat.read(path, as_version=4)
            except Exception:  # noqa: BLE001 - whatever makes a learner's file unreadable
                if found := re.fullmatch(folder, os.path.dirname(os.path.abspath(path))):
                    clear_earlier(course, found["s"], found["a"])


class ForgetDuplicates(NbGraderPreprocessor):
    """After DeduplicateIds: a duplicated cell's emptied nbgrader metadata removed, so that it is
    a plain cell (OverwriteCells' add_missing_cells fails on the empty dict otherwise)."""

    def preprocess_cell(self, cell, resources, index):
        if cell.metadata.get("nbgrader") == {}:
            del cell.metadata["nbgrader"]
        return cell, resources


class Batch:
    """Set by ``batch.autograde``: a shared pool, and a lock that serialises nbgrader's own
    bookkeeping while the sandboxes run side by side; (student, assignment) of the submissions
    the grader itself failed on."""

    pool: Pool | None = None
    lock = threading.Lock()
    grader_failed: set[tuple[str, str]] = set()


class ResilientExecute(Execute):
    """nbgrader's Execute, except that a kernel that dies fails the cell it died in and every
    later code cell instead of failing the whole submission."""

    def preprocess(self, nb, resources=None, km=None):
        self._died_in: str | None = None
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        if self._died_in is not None:
            cell.outputs = [error_output("DeadKernelError", f"not run: {self._died_in}")]
            return cell, resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._died_in = f"the kernel died in an earlier cell ({first_line(cell.source)})"
            cell.outputs.append(error_output("DeadKernelError", "the kernel died in this cell"))
            return cell, resources


class SandboxExecute(ResilientExecute):
    """Execute's replacement: learners' code runs in the sandbox, verdicts come from checks."""

    unsandboxed = Bool(False, help="Run learners' code unsandboxed (nbgrader's plain Execute)")
    budget = Float(120.0, help="Wall-clock seconds for a whole submission in the sandbox")
    memory_mb = Integer(3072, help="Memory of a submission beyond the sandbox's own, in MiB")
    nproc = Integer(64, help="Processes and threads the submission may run")
    file_mb = Integer(64, help="Largest file the submission may write, in MiB")
    tmp_mb = Integer(256, help="Size of the submission's /tmp, in MiB")
    preimport = List([], help="Modules a sandbox imports before any submission (default: those "
                      "imported by the source notebooks and probes)")  # fmt: skip
    for trait in (unsandboxed, budget, memory_mb, nproc, file_mb, tmp_mb, preimport):
        trait.tag(config=True)
    del trait

    def preprocess(self, nb, resources=None, km=None):
        if self.unsandboxed:
            self.log.warning("!" * 20 + " " + UNSANDBOXED)
            return super().preprocess(nb, resources, km)
        info = resources["nbgrader"]
        course = CourseDirectory(config=self.config)
        folder = Path(course.format_path(course.source_directory, ".", info["assignment"]))
        checks = Checks(folder, seed(course, info["student"], info["assignment"]))
        submitted = course.format_path(
            course.submitted_directory, info["student"], info["assignment"]
        )
        cells = code_cells(nb)
        self.course, self.folder, self.own_pool = course, folder, None
        try:
            job = {
                "cells": [step(cell, checks) for cell in cells],
                "probes": (folder / "probes.py").read_text(),
                "files": files_for_sandbox([Path(submitted), folder], course.ignore),
            }
            stream, nonce = self.run_job(job)
            records = read_records(stream, len(cells), nonce)
            missing = stopped(self.last_reply, records, cells)
            verdicts = self.verdicts(cells, records, checks.seed)
        except GraderFailure:
            Batch.grader_failed.add((info["student"], info["assignment"]))
            raise
        finally:
            if self.own_pool is not None:
                self.own_pool.close()
        for index, cell in enumerate(cells):
            cell.outputs = outputs(cell, records.get(index), missing, verdicts.get(index))
        return nb, resources

    def verdicts(self, cells: list, records: dict, seed: int) -> dict[int, tuple | None]:
        """cell index -> the verdict of its check (None: passed), for every test cell whose
        probe sent data, from a check process of this submission's own (checking.py)."""
        tested = [i for i, c in enumerate(cells) if is_test(c) and sent_data(c, records.get(i))]
        if not tested:
            return {}
        files = {
            path.name: base64.b64encode(path.read_bytes()).decode("ascii")
            for path in sorted(self.folder.glob("*.py"))
        }
        tests = [(grade_id(cells[i]), records[i]["value"]) for i in tested]
        stream, nonce = self.run_job(checking.check_job(files, seed, tests))
        found = read_records(stream, len(tests), nonce)
        reply = self.last_reply
        why = f"the grader's check of this test did not finish: its process {reply.get('status')}"
        if reply.get("timed_out"):
            why = "the grader's check of this test did not finish within the submission's budget"
        return {i: checking.verdict_of(found.get(k), why) for k, i in enumerate(tested)}

    def limits(self) -> Limits:
        names = ("budget", "memory_mb", "nproc", "file_mb", "tmp_mb")
        return Limits(cell_timeout=self.timeout, **{name: getattr(self, name) for name in names})

    def run_job(self, job: dict) -> tuple[bytes, str]:
        """The records the job's sandboxed process sent, and the job's nonce; a sandbox that
        fails is replaced and the job run once more. The reply is kept as last_reply."""
        job = job | {"nonce": secrets.token_hex(16)}
        failure = None
        for attempt in ("retrying in a fresh sandbox", "giving up"):
            try:
                self.last_reply = self.run_once(job)
                return self.last_reply["records"], job["nonce"]
            except SandboxError as exc:
                self.log.warning("safegrade: the sandbox failed (%s); %s", exc, attempt)
                failure = exc
        raise GraderFailure(f"the grader's sandbox failed twice: {failure}")

    def run_once(self, job: dict) -> dict:
        if Batch.pool is not None:
            Batch.lock.release()  # nbgrader's bookkeeping of other submissions goes on meanwhile
            try:
                with Batch.pool.sandbox() as box:
                    return box.run(job)
            finally:
                Batch.lock.acquire()
                # nbgrader deletes this when the notebook is done; another thread may have.
                os.environ["NBGRADER_EXECUTION"] = "autograde"
        if self.own_pool is None:  # one sandbox for this notebook: its submission and checks
            self.log.info("safegrade: %s", memory_limit_in_force(self.limits()))
            imports = self.preimport or preimports([self.folder])
            self.own_pool = Pool(1, imports, forbidden_paths(self.course), self.limits())
        with self.own_pool.sandbox() as box:
            return box.run(job)


def sent_data(cell, record: dict | None) -> bool:
    """Whether a test cell's record holds its probe's data (not an error)."""
    return (
        isinstance(record, dict)
        and "error" not in record
        and record.get("probe") == grade_id(cell)
        and "value" in record
    )


def grade_id(cell) -> str:
    return cell.metadata.nbgrader["grade_id"]


def first_line(source: str) -> str:
    lines = source.strip().split("\n")
    return repr(lines[0][:60]) if lines and lines[0] else "an empty cell"


def error_output(ename: str, evalue: str, traceback: list[str] = ()):
    ename, evalue = clean_text(ename, 200), clean_text(evalue, 2000)
    return new_output(
        "error", ename=ename, evalue=evalue, traceback=list(traceback) or [f"{ename}: {evalue}"]
    )


def code_cells(nb) -> list:
    """The code cells up to the last graded one: later cells cannot change a score."""
    cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    graded = [i for i, cell in enumerate(cells) if is_test(cell)]
    return cells[: graded[-1] + 1] if graded else []


def is_test(cell) -> bool:
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


class Checks:
    """An exercise's checks.py (loaded here, never sent), and this submission's seed, from which
    checks.py makes each test's inputs."""

    def __init__(self, folder: Path, seed: int):
        self.module, self.seed = probing.sibling(folder / "probes.py", "checks"), seed

    def __getattr__(self, name: str):
        return getattr(self.module, name)


def seed(course: CourseDirectory, student: str, assignment: str) -> int:
    """The seed of a submission's test inputs: from its student, assignment and a secret kept
    beside the autograded submissions (made on first use), so a regrade sees the same inputs."""
    folder = Path(course.format_path(course.autograded_directory, ".", "."))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".safegrade_secret"
    if not path.exists():  # written whole, then linked: a reader never sees half a secret
        draft = folder / f".safegrade_secret.{os.getpid()}.{threading.get_ident()}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, secrets.token_hex(32).encode())
        os.close(fd)
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    text = f"{path.read_text().strip()}\0{student}\0{assignment}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def step(cell, checks=None) -> dict:
    """A cell's job entry: its code, or for a test cell the probe's name and its inputs as data."""
    if not is_test(cell):
        return {"code": cell.source}
    grade_id = cell.metadata.nbgrader["grade_id"]
    try:
        inputs = trusted_inputs(checks, grade_id)
    except Exception as exc:  # noqa: BLE001 - the instructor's checks.py failed, not the learner
        why = f"{type(exc).__name__}: {clean_text(str(exc), 300)}"
        raise GraderFailure(f"checks.py could not make the inputs of {grade_id} ({why})") from exc
    return {"probe": grade_id} | ({} if inputs is None else {"inputs": encode(inputs)})


def trusted_inputs(checks, grade_id: str):
    return probing.make_inputs(checks, grade_id, getattr(checks, "seed", 0))


def files_for_sandbox(folders: list[Path], ignore: list[str]) -> dict[str, str]:
    """Regular files (no links, FIFOs or devices; no notebooks, probes or checks) of the
    folders, later folders winning (the source's over the submission's, as nbgrader copies
    them), size-capped."""
    skip = [*ignore, "*.ipynb", "timestamp.txt", "probes.py", "checks.py", "__pycache__"]
    files, total = {}, 0
    for folder in folders:
        for rel in walk(folder, skip)[0]:
            data = read_regular(str(folder / rel), MAX_FILES_BYTES - total)
            if data is not None:
                total += len(data)
                files[rel] = base64.b64encode(data).decode("ascii")
    return files


def walk(folder: Path, skip: list[str] = ()) -> tuple[list[str], list[str]]:
    """Relative paths of the regular files under folder (names matching `skip` left out),
    without following links or recursing, and notes on what else was left out."""
    found, notes, stack = [], [], [("", 0)]
    while stack:
        rel, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder / rel), key=lambda entry: entry.name)
        except OSError as exc:
            notes.append(f"{rel or '.'} could not be read ({exc.strerror})")
            continue
        for entry in entries:
            path = os.path.join(rel, entry.name)
            if any(fnmatch.fnmatch(entry.name, pattern) for pattern in skip):
                continue
            if entry.is_dir(follow_symlinks=False) and depth < MAX_DEPTH:
                stack.append((path, depth + 1))
            elif entry.is_file(follow_symlinks=False) and len(found) < MAX_FILES:
                found.append(path)
            else:
                notes.append(f"{path} was left out (a link, FIFO or device, or too deep or many)")
    return found, notes


def read_regular(path: str, cap: int) -> bytes | None:
    """The bytes of a regular, unlinked file no larger than cap, else None. Never follows a
    symlink and never blocks on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_size > cap:
            return None
        return handle.read(cap + 1)[:cap]


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


# ----------------------------------------------------------------------------- verdicts


def read_records(stream: bytes, count: int, nonce: str) -> dict[int, dict]:
    """cell index -> its record, from the child's frames: a length, this job's nonce, a JSON
    record. The runner sends one frame per cell, in order, then a final one. Bytes that are not
    such a frame (written by the submission's code) are skipped to the next frame with the
    nonce; they, and a frame that is not the next cell's (out of order, malformed), fail the
    cell that was running when they came, never another. A second record for a cell already
    read fails that cell alone: one of its two records is forged, and a forgery of an earlier
    cell's record can only cost points, never earn them."""
    records: dict[int, dict] = {}
    expected, at, mark = 0, 0, nonce.encode()
    while expected < count and at < len(stream):
        size = int.from_bytes(stream[at : at + 4], "big")
        frame = stream[at + 4 : at + 4 + size]
        if not (len(mark) <= size <= FRAME_CAP and len(frame) == size and frame.startswith(mark)):
            records[expected] = rejected("bytes that are not a record arrived while it ran")
            found = stream.find(mark, at + 5)
            at = found - 4 if found >= 4 else len(stream)
            continue
        at += 4 + size
        record = parse_frame(frame[len(mark) :])
        if record is not None and record.get("done") is True:
            break
        index = record.get("cell") if record is not None else None
        if index == expected:
            records.setdefault(expected, record)  # a cell failed by a forged frame stays failed
            expected += 1
            continue
        if type(index) is int and 0 <= index < expected:  # which of the two is forged is unknown
            records[index] = rejected("a second record for this cell arrived later")
            continue
        records[expected] = rejected("a record that is not this cell's arrived while it ran")
    return records


def parse_frame(payload: bytes) -> dict | None:
    """The record in a frame; None if it is malformed."""
    try:
        record = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if type(record) is not dict:
        return None
    return record if record.get("done") is True or type(record.get("cell")) is int else None


def rejected(why: str) -> dict:
    """The record of a cell whose records were tampered with (by the submission's own code)."""
    message = f"the grader rejected this cell's result: {why} (the submission wrote to the records)"
    return {"error": {"ename": "GraderError", "evalue": message, "traceback": []}}


def outputs(cell, record: dict | None, missing: tuple[str, str], verdict) -> list:
    """The cell's outputs: the learner's output and error, or for a test cell the verdict of
    its check (None: passed)."""
    if record is None:
        return [error_output(*missing)] if is_test(cell) else []
    found = []
    for name in ("stdout",) if is_test(cell) else ("stdout", "stderr"):
        if isinstance(record.get(name), str) and record[name]:
            found.append(new_output("stream", name=name, text=clean_text(record[name], 25_000)))
    error = record.get("error")
    if isinstance(error, dict):
        lines = error.get("traceback") if isinstance(error.get("traceback"), list) else []
        lines = [clean_text(line, 4000) for line in lines[-30:] if isinstance(line, str)]
        found.append(error_output(str(error.get("ename")), str(error.get("evalue")), lines))
    elif is_test(cell) and not sent_data(cell, record):
        found.append(error_output("GraderError", "the probe for this test sent no data"))
    elif is_test(cell) and verdict is not None:
        found.append(error_output(*verdict))
    return found


def stopped(reply: dict, records: dict, cells: list) -> tuple[str, str]:
    """Why test cells have no record: where the submission's process stopped, and how."""
    index = max(records) + 1 if records else 0
    if index >= len(cells):
        where = "after its last cell"
    elif is_test(cells[index]):
        where = f"test {cells[index].metadata.nbgrader['grade_id']}"
    else:
        where = f"the cell that starts {first_line(cells[index].source)}"
    if reply.get("timed_out"):
        return "TimeoutError", f"not run: the submission used up its time budget in {where}"
    return "DeadKernelError", f"not run: the submission's process {reply.get('status')} in {where}"


class HideHiddenTests(ClearHiddenTests):
    """ClearHiddenTests for feedback: also shorten graded cells' tracebacks to their last line."""

    # The feedback exporter configures this for every preprocessor (as nbgrader's GetGrades has).
    display_data_priority = List(GetGrades.class_traits()["display_data_priority"].default())
    display_data_priority.tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        # Only instructor cells hold hidden tests; a learner's answer may quote the markers.
        if not utils.is_solution(cell):
            cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if utils.is_grade(cell) and cell.cell_type == "code":
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources
