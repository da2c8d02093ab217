"""``make autograde``: nbgrader's own Autograde for every submission, the sandboxes side by side.

Each submission is graded by nbgrader's ``Autograde`` converter (gradebook, timestamp.txt, late
penalties, autograded notebook), whose Execute step is ``SandboxExecute``. A thread pool runs the
submissions; nbgrader's bookkeeping holds one lock, which ``SandboxExecute`` lets go while its
sandbox runs, so the sandboxes (one warm worker per thread) run in parallel. nbgrader reads a
staged copy of each submission: regular files only, bounded in number and depth, big notebooks
without their outputs, a renamed notebook under its expected name. Every submission ends with a
score and a one-line reason in ``<autograded>/.safegrade/<assignment>/<student>.json``; one whose
sources, submission and limits are unchanged since is not graded again, so an interrupted batch
resumes where it stopped and a rerun changes nothing.
"""

from __future__ import annotations

import copy
import glob
import hashlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict
from pathlib import Path

from . import VERSION, probing
from .data import clean_text, inert_text
from .preprocessors import Batch, SandboxExecute, forbidden_paths, preimports, read_regular, walk
from .sandbox import Limits, Pool, memory_limit_in_force

MAX_NOTEBOOK_BYTES = 256 << 20
STRIP_OVER_BYTES = 8 << 20  # notebooks larger than this are staged without their outputs
MAX_CELLS = 2_000  # a notebook with more is left out (the exercises have about 40)
MAX_FILE_BYTES = 32 << 20


def autograde(argv: list[str], workers: int, force: bool) -> int:
    from nbgrader.apps.autogradeapp import AutogradeApp

    warnings.filterwarnings("ignore", module="nbgrader|nbformat|sqlalchemy")  # their own noise
    app = AutogradeApp()
    app.initialize(argv)  # nbgrader_config.py and --Class.trait=value, as nbgrader reads them
    course, options = app.coursedir, SandboxExecute(config=app.config)
    if options.unsandboxed:
        print("safegrade: for unsandboxed grading use `nbgrader autograde`", file=sys.stderr)
        return 2
    tasks = find_submissions(course)
    folders = sorted({source_folder(course, assignment) for _, assignment in tasks})
    limits = options.limits()
    key = batch_key(folders, limits)
    todo = [task for task in tasks if force or not is_current(course, *task, key)]
    print(f"safegrade: {len(tasks)} submissions, {len(tasks) - len(todo)} unchanged (kept)")
    print(f"safegrade: {memory_limit_in_force(limits)}")
    size = max(1, min(workers or os.cpu_count() or 1, len(todo)))
    imports = options.preimport or preimports(folders)
    Batch.pool = Pool(size, imports, forbidden_paths(course), limits)
    try:
        if todo:
            Batch.pool.warm()  # the sandboxes import torch while this process loads the checks
            for folder in folders:
                load_checks(folder)
            with tempfile.TemporaryDirectory(prefix="safegrade-staging-") as staging:
                run(app, todo, size, key, Path(staging))
    except KeyboardInterrupt:
        print("INTERRUPTED: rerun the same command to grade the rest (done work is kept)")
        return 130
    finally:
        Batch.pool.close()
        Batch.pool = None
    summary(course, tasks)
    return 0


def source_folder(course, assignment: str) -> Path:
    return Path(course.format_path(course.source_directory, ".", assignment))


def load_checks(folder: Path) -> None:
    try:
        probing.sibling(folder / "probes.py", "checks")
    except Exception as exc:  # noqa: BLE001 - each submission of it will report it
        print(f"safegrade: the checks of {folder.name} do not load: {exc}", file=sys.stderr)


def run(app, todo: list[tuple[str, str]], size: int, key: str, staging: Path) -> None:
    """Grade todo on `size` threads, printing a progress line that names the running ones."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    started, done = {}, 0
    # One thread more than sandboxes: nbgrader's bookkeeping of the next submission goes on
    # while every sandbox runs one (the sandbox waits for no thread).
    executor = ThreadPoolExecutor(size + 1, thread_name_prefix="safegrade")
    try:
        futures = {executor.submit(grade_one, app, *t, key, staging, started): t for t in todo}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=10, return_when=FIRST_COMPLETED)
            for future in finished:
                done += 1
                result = future.result()
                line = f"{result['assignment']}/{result['student']}: {result['reason']}"
                print(progress(done, len(todo), started, futures, pending, line), flush=True)
            if not finished:
                print(progress(done, len(todo), started, futures, pending, "..."), flush=True)
    except KeyboardInterrupt:
        Batch.pool.close()  # running submissions fail at once and are not recorded
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        executor.shutdown(wait=True)


def _interrupt(_signum, _frame):
    raise KeyboardInterrupt


def progress(done: int, total: int, started: dict, futures: dict, pending: set, line: str) -> str:
    now = time.monotonic()
    running = [futures[f] for f in pending if futures[f] in started]
    names = ", ".join(f"{s}/{a} ({now - started[(s, a)]:.0f} s)" for s, a in running[:4])
    more = f" and {len(running) - 4} more" if len(running) > 4 else ""
    text = f"[{done}/{total}] {line}" + (f" | running: {names}{more}" if running else "")
    return inert_text(text, 400)


# ----------------------------------------------------------------------------- one submission


def grade_one(app, student: str, assignment: str, key: str, staging: Path, started: dict) -> dict:
    from nbgrader.converters import Autograde

    started[(student, assignment)] = time.monotonic()
    course = app.coursedir
    submitted = Path(course.format_path(course.submitted_directory, student, assignment))
    notes = stage(submitted, staging / student / assignment, source_folder(course, assignment))
    config = copy.deepcopy(app.config)
    config.CourseDirectory.submitted_directory = str(staging)
    log, errors = capturing_logger(student, assignment)
    with Batch.lock:
        from nbgrader.coursedir import CourseDirectory

        coursedir = CourseDirectory(config=config, student_id=student, assignment_id=assignment)
        converter = Autograde(coursedir=coursedir, config=config, log=log)
        converter.force = True
        Batch.grader_failed.discard((student, assignment))
        try:
            converter.start()
        except Exception as exc:  # noqa: BLE001 - nbgrader's failure for this submission only
            errors.append(f"{type(exc).__name__}: {exc}" if not errors else "")
        if errors:  # no earlier grade, autograded notebook or feedback may outlive this one
            clear_earlier(course, student, assignment)
    if Batch.pool.closed:
        raise KeyboardInterrupt
    result = read_result(course, student, assignment, [e for e in errors if e], notes)
    if (student, assignment) in Batch.grader_failed:
        reason = f"0: not graded: the grader failed, not the submission ({last_line(errors)})"
        result |= {"status": "grader-error", "reason": clean_text(reason + "; rerun", 600)}
    result["key"] = submission_key(course, student, assignment, key)
    path = result_path(course, student, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_text(json.dumps(result, indent=1))
    os.replace(path.with_suffix(".tmp"), path)  # atomic: never half a result
    return result


def clear_earlier(course, student: str, assignment: str) -> None:
    """Remove an earlier grade of this submission: gradebook entry, autograded and feedback."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.db_url, course.course_id) as gradebook:
        try:
            gradebook.remove_submission(assignment, student)
        except MissingEntry:
            pass
    for folder in (course.autograded_directory, course.feedback_directory):
        shutil.rmtree(course.format_path(folder, student, assignment), ignore_errors=True)


def capturing_logger(student: str, assignment: str) -> tuple[logging.Logger, list[str]]:
    """A logger of its own for one submission's converter: errors are kept for the reason."""
    errors: list[str] = []
    log = logging.getLogger(f"safegrade.{assignment}.{student.encode('utf-8', 'replace').hex()}")
    log.propagate = False
    log.handlers = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: errors.append(record.getMessage())
    log.addHandler(handler)
    return log, errors


def read_result(course, student: str, assignment: str, errors: list[str], notes: list[str]) -> dict:
    """Score, maximum and the one-line reason, from the autograded notebooks nbgrader wrote."""
    import nbformat
    from nbgrader import utils

    folder = Path(course.format_path(course.autograded_directory, student, assignment))
    cells = [
        cell for path in sorted(folder.glob("*.ipynb")) for cell in nbformat.read(path, 4).cells
    ]
    tests = [cell for cell in cells if utils.is_grade(cell) and cell.cell_type == "code"]
    grades = [utils.determine_grade(cell) for cell in tests]
    score, most = sum(got or 0 for got, _ in grades), sum(top for _, top in grades)
    failed = [
        f"{cell.metadata.nbgrader['grade_id']}: {first_error(cell)}"
        for cell, (got, top) in zip(tests, grades, strict=True)
        if got != top
    ]
    if errors or not tests:
        problem = last_line(errors) if errors else "no graded cell in the autograded notebook"
        reason = f"0: the grader could not grade this submission: {problem}"
    elif failed:
        reason = (
            f"{score:g}/{most:g}: {len(failed)} of {len(tests)} tests failed: {'; '.join(failed)}"
        )
    else:
        reason = f"{score:g}/{most:g}: all {len(tests)} tests passed"
    reason = " ".join((reason + "".join(f" (note: {note})" for note in notes)).split())
    status = "error" if errors or not tests else "graded"
    found = {"student": student, "assignment": assignment, "status": status, "score": score}
    return found | {"max_score": most, "reason": clean_text(reason, 600), "notes": notes}


def first_error(cell) -> str:
    errors = [
        ": ".join(filter(None, (o.ename, o.evalue)))
        for o in cell.outputs
        if o.output_type == "error"
    ]
    return errors[0] if errors else ""


def last_line(errors: list[str]) -> str:
    lines = [line for text in errors for line in text.strip().split("\n") if line.strip()]
    useful = [line for line in lines if not line.startswith(("There was an error", "Please see"))]
    return (useful or lines or ["unknown error"])[-1]


# ----------------------------------------------------------------------------- staging


def stage(submitted: Path, staged: Path, source: Path) -> list[str]:
    """A copy of the submission nbgrader can read safely; returns notes on what changed."""
    files, notes = walk(submitted)
    for rel in files:
        data = read_regular(
            str(submitted / rel), MAX_NOTEBOOK_BYTES if rel.endswith(".ipynb") else MAX_FILE_BYTES
        )
        if data is None:
            notes.append(f"{rel} was left out (too large, or linked)")
            continue
        if rel.endswith(".ipynb"):  # first: json.loads refuses bytes that are not UTF-8
            data = as_utf8(data, rel, notes)
        if rel.endswith(".ipynb") and len(data) > STRIP_OVER_BYTES:
            notes.append(f"{rel} is {len(data) >> 20} MB; graded without its outputs")
            data = without_outputs(data)
        if rel.endswith(".ipynb") and (problem := too_big(data)):
            notes.append(f"{rel} was left out: {problem}")
            continue
        target = staged / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    notes += find_renamed(staged, source)
    return [clean_text(note, 200) for note in notes[:8]]


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
    if len(notebook) > STRIP_OVER_BYTES:
        return (
            f"{len(notebook) >> 20} MB even without its outputs (at most {STRIP_OVER_BYTES >> 20})"
        )
    try:
        cells = json.loads(notebook).get("cells")
    except (ValueError, AttributeError, RecursionError):
        return None  # nbgrader reports what is wrong with it
    if isinstance(cells, list) and len(cells) > MAX_CELLS:
        return f"{len(cells)} cells (at most {MAX_CELLS})"
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


# ----------------------------------------------------------------------------- bookkeeping


def find_submissions(course) -> list[tuple[str, str]]:
    """(student, assignment) for every submission folder nbgrader would autograde."""
    pattern = course.format_path(
        course.submitted_directory, course.student_id, course.assignment_id
    )
    folders = (Path(path) for path in sorted(glob.glob(pattern)))
    return [(path.parent.name, path.name) for path in folders if path.is_dir()]


def batch_key(folders: list[Path], limits: Limits) -> str:
    digest = hashlib.sha256(json.dumps([VERSION, asdict(limits)], sort_keys=True).encode())
    for folder in folders:
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.suffix in (".ipynb", ".py"):
                digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def submission_key(course, student: str, assignment: str, key: str) -> str:
    digest = hashlib.sha256(f"{key}\0{assignment}\0".encode())
    folder = Path(course.format_path(course.submitted_directory, student, assignment))
    files, _ = walk(folder)
    for rel in files:
        digest.update(os.fsencode(rel) + b"\0")
        data = read_regular(str(folder / rel), MAX_NOTEBOOK_BYTES) or b"<unreadable>"
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def result_path(course, student: str, assignment: str) -> Path:
    root = Path(course.format_path(course.autograded_directory, ".", ".")).resolve()
    return root / ".safegrade" / assignment / f"{student}.json"


def is_current(course, student: str, assignment: str, key: str) -> bool:
    """Graded before, with the same sources, upload and limits."""
    try:
        result = json.loads(result_path(course, student, assignment).read_text())
    except (OSError, ValueError):
        return False
    autograded = Path(course.format_path(course.autograded_directory, student, assignment))
    done = result.get("status") == "error" or any(autograded.glob("*.ipynb"))
    return done and result.get("key") == submission_key(course, student, assignment, key)


def summary(course, tasks: list[tuple[str, str]]) -> None:
    print("safegrade: scores (student, assignment, reason)")
    for student, assignment in tasks:
        try:
            reason = json.loads(result_path(course, student, assignment).read_text())["reason"]
        except (OSError, ValueError, KeyError):
            reason = "not graded"
        print(inert_text(f"  {student}  {assignment}  {reason}", 600))
