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
import signal
import sys
import tempfile
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path

from . import VERSION
from .bookkeeping import batch_bookkeeping
from .data import clean_text, inert_text
from .files import read_regular, walk
from .gradebook import clear_earlier
from .grading_files import results_folder
from .grading_limits import LIMITS, GradingLimits
from .pool import Pool
from .preprocessors import SandboxExecute
from .result_files import (
    NOT_GRADABLE,
    SubmissionResult,
    grader_failed,
    load,
    read_result,
    result_path,
    save,
    tests_path,
)
from .sandbox import Limits, memory_limit_in_force
from .session import GradingSession
from .staging import forbidden_paths, preimports, stage


def autograde(argv: list[str], workers: int, force: bool, early: Pool | None = None) -> int:
    """Grade every submission nbgrader's options select; `early`: sandboxes already starting
    (Pool.early), used if they fit."""
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
    results = results_folder(app.config)
    todo = [task for task in tasks if force or not is_current(course, results, *task, key)]
    print(f"safegrade: {len(tasks)} submissions, {len(tasks) - len(todo)} unchanged (kept)")
    print("\n".join(GradingLimits(config=app.config).summary()))
    print(f"safegrade: {memory_limit_in_force(limits)}")
    size = max(1, min(workers or os.cpu_count() or 1, len(todo)))
    imports, forbidden = options.preimport or preimports(folders), forbidden_paths(course)
    pool = early.settle(size, imports, forbidden, limits) if early and todo else None
    if early and not todo:
        early.close()  # nothing to grade: its sandboxes stop now
    session = GradingSession(pool or Pool(size, imports, forbidden, limits))
    try:
        if todo:
            session.pool.warm()  # the sandboxes import torch while nbgrader stages the first
            with (
                tempfile.TemporaryDirectory(prefix="safegrade-staging-") as staging,
                batch_bookkeeping(),
            ):
                run(app, session, todo, size, key, Path(staging))
    except KeyboardInterrupt:
        print("INTERRUPTED: rerun the same command to grade the rest (done work is kept)")
        return 130
    finally:
        session.pool.close()
    summary(results, tasks)
    return 0


def source_folder(course, assignment: str) -> Path:
    return Path(course.format_path(course.source_directory, ".", assignment))


def run(app, session: GradingSession, todo: list, size: int, key: str, staging: Path) -> None:
    """Grade todo on `size` threads, printing a progress line that names the running ones."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    started, done = {}, 0
    # One thread more than sandboxes: nbgrader's bookkeeping of the next submission goes on
    # while every sandbox runs one (the sandbox waits for no thread).
    executor = ThreadPoolExecutor(size + 1, thread_name_prefix="safegrade")
    try:
        futures = {
            executor.submit(grade_one, app, session, *t, key, staging, started): t for t in todo
        }
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=10, return_when=FIRST_COMPLETED)
            for future in finished:
                done += 1
                result = future.result()
                line = f"{result.assignment}/{result.student}: {result.reason}"
                print(progress(done, len(todo), started, futures, pending, line), flush=True)
            if not finished:
                print(progress(done, len(todo), started, futures, pending, "..."), flush=True)
    except KeyboardInterrupt:
        session.pool.close()  # running submissions fail at once and are not recorded
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
    return inert_text(text, LIMITS.progress_line_chars)


# ----------------------------------------------------------------------------- one submission


def grade_one(
    app, session: GradingSession, student: str, assignment: str, key: str, staging: Path, started
) -> SubmissionResult:
    from nbgrader.converters import Autograde

    started[(student, assignment)] = time.monotonic()
    course, results = app.coursedir, results_folder(app.config)
    if problem := pattern_in(student):  # never handed to nbgrader
        result = not_graded_as(course, student, assignment, problem)
        result = replace(result, key=submission_key(course, student, assignment, key))
        save(result, result_path(results, student, assignment))
        return result
    submitted = Path(course.format_path(course.submitted_directory, student, assignment))
    notes = stage(submitted, staging / student / assignment, source_folder(course, assignment))
    config = copy.deepcopy(app.config)
    config.CourseDirectory.submitted_directory = str(staging)
    config.SandboxExecute.session = session
    log, errors = capturing_logger(student, assignment)
    with session.bookkeeping():
        from nbgrader.coursedir import CourseDirectory

        coursedir = CourseDirectory(config=config, student_id=student, assignment_id=assignment)
        converter = Autograde(coursedir=coursedir, config=config, log=log)
        converter.force = True
        session.grader_failed.discard((student, assignment))
        tests_path(results, student, assignment).unlink(missing_ok=True)  # written afresh
        try:
            converter.start()
        except Exception as exc:  # noqa: BLE001 - nbgrader's failure for this submission only
            errors.append(f"{type(exc).__name__}: {exc}" if not errors else "")
        if errors:  # no earlier grade, autograded notebook or feedback may outlive this one
            clear_earlier(course, student, assignment)
    if session.pool.closed:
        raise KeyboardInterrupt
    result = read_result(results, student, assignment, [e for e in errors if e], notes)
    if (student, assignment) in session.grader_failed:
        result = grader_failed(result, errors)
    result = replace(result, key=submission_key(course, student, assignment, key))
    save(result, result_path(results, student, assignment))
    return result


def pattern_in(student: str) -> str | None:
    """Why nbgrader cannot grade a folder of this name as itself, or None. nbgrader matches a
    student id as a file pattern, then the folder it found as a pattern again: "Ann [TA] Lee"
    matches no notebook, "[A-Z]*" its classmates' (intake refuses such ids; this catches a
    folder put in place by hand)."""
    found = sorted(set(student) & set("[]*?"))
    if not found:
        return None
    return (
        f"the student id holds {' '.join(found)}, which nbgrader reads as a file pattern: rename "
        f"the folder (intake refuses such ids) and grade again"
    )


def not_graded_as(course, student: str, assignment: str, problem: str) -> SubmissionResult:
    reason = clean_text(f"could not be graded: {problem}", LIMITS.reason_chars)
    return SubmissionResult(student, assignment, NOT_GRADABLE, 0.0, 0.0, reason, detail=problem)


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


# ----------------------------------------------------------------------------- bookkeeping


def find_submissions(course) -> list[tuple[str, str]]:
    """(student, assignment) for every submission folder nbgrader would autograde."""
    pattern = course.format_path(
        course.submitted_directory, course.student_id, course.assignment_id
    )
    folders = (Path(path) for path in sorted(glob.glob(pattern)))
    return [(path.parent.name, path.name) for path in folders if path.is_dir()]


def batch_key(folders: list[Path], limits: Limits) -> str:
    digest = hashlib.sha256(json.dumps([VERSION, limits.values()], sort_keys=True).encode())
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
        data = read_regular(str(folder / rel), LIMITS.notebook_bytes) or b"<unreadable>"
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def is_current(course, results: Path, student: str, assignment: str, key: str) -> bool:
    """Graded before, with the same sources, upload and limits."""
    result = load(result_path(results, student, assignment))
    if result is None:
        return False
    autograded = Path(course.format_path(course.autograded_directory, student, assignment))
    done = result.status == NOT_GRADABLE or any(autograded.glob("*.ipynb"))
    return done and result.key == submission_key(course, student, assignment, key)


def summary(results: Path, tasks: list[tuple[str, str]]) -> None:
    print("safegrade: scores (student, assignment, reason)")
    found = [load(result_path(results, student, assignment)) for student, assignment in tasks]
    for (student, assignment), result in zip(tasks, found, strict=True):
        reason = result.reason if result is not None else "not graded"
        print(inert_text(f"  {student}  {assignment}  {reason}", LIMITS.reason_chars))
    if any(result is not None and result.status == NOT_GRADABLE for result in found):
        folder = os.path.relpath(results)
        print(f"safegrade: the errors behind 'could not be graded': make report, or {folder}/")
