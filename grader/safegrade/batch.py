"""Grade every submission of an assignment with a pool of sandboxed workers (grader side)."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass, field

from . import report, store
from .assignment import (
    Assignment,
    Submission,
    SubmittedNotebook,
    load_assignment,
    parse_submission,
)
from .course import Course
from .sandbox import Limits, SandboxConfig, SandboxUnavailable, Worker, WorkerDied, check_bwrap


@dataclass
class Options:
    workers: int = 0  # 0: one per CPU core
    limits: Limits = field(default_factory=Limits)
    force: bool = False
    sync: bool = True
    students: list[str] | None = None
    progress: bool | None = None  # None: only when stderr is a terminal
    python: str = sys.executable


@dataclass
class Summary:
    assignment: str
    total: int = 0
    graded: int = 0
    reused: int = 0
    zero: list[tuple[str, str]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    workers: int = 0
    interrupted: bool = False
    synced: int | None = None
    results: dict[str, dict] = field(default_factory=dict)

    def lines(self) -> list[str]:
        rate = self.graded / self.seconds if self.seconds else 0.0
        head = (
            f"safegrade {self.assignment}: {self.total} submissions, {self.graded} graded now, "
            f"{self.reused} unchanged (kept), {len(self.zero)} scored 0, "
            f"{len(self.errors)} errors; "
            f"{self.workers} workers, {self.seconds:.1f} s ({rate:.2f} submissions/s)"
        )
        lines = [head]
        if self.interrupted:
            lines.append(
                "INTERRUPTED: rerun the same command to grade the rest (done work is kept)"
            )
        if self.synced is not None:
            lines.append(f"gradebook updated for {self.synced} submissions (one transaction)")
        lines += [f"  zero   {student}: {reason}" for student, reason in self.zero]
        lines += [f"  ERROR  {student}: {reason}" for student, reason in self.errors]
        return lines


class Progress:
    def __init__(self, total: int, enabled: bool | None, stream=sys.stderr):
        self.total, self.done, self.zero = total, 0, 0
        self.stream = stream
        self.tty = stream.isatty() if enabled is None else enabled
        self.start = time.monotonic()
        self.last_line = -1

    def update(self, result: dict) -> None:
        self.done += 1
        self.zero += result["score"] == 0
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        text = (
            f"[{bar}] {self.done}/{self.total} graded, {self.zero} zero, "
            f"{elapsed:5.1f} s elapsed, ~{eta:4.0f} s left"
        )
        if self.tty:
            self.stream.write("\r" + text)
            if self.done == self.total:
                self.stream.write("\n")
        else:
            decile = self.done * 10 // max(self.total, 1)
            if decile != self.last_line or self.done == self.total:
                self.last_line = decile
                self.stream.write(text + "\n")
        self.stream.flush()


def grading_key(assignment: Assignment, limits: Limits) -> str:
    """What a result depends on besides the submission: the sources, grader and limits."""
    data = json.dumps([assignment.sha256, limits.__dict__], sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()


def worker_init(assignment: Assignment) -> dict:
    return {
        "assignment": assignment.name,
        "notebooks": [nb.worker_spec() for nb in assignment.notebooks],
        "preimport": assignment.preimports(),
    }


def make_job(number: int, assignment: Assignment, submission: Submission) -> dict:
    import base64

    files = {rel: base64.b64encode(data).decode() for rel, data in assignment.files.items()}
    for rel, data in submission.files.items():
        files.setdefault(rel, base64.b64encode(data).decode())  # release files win
    notebooks = {name: nb.solutions for name, nb in submission.notebooks.items() if not nb.problem}
    return {"job": number, "files": files, "notebooks": notebooks}


def job_timeout(assignment: Assignment, limits: Limits) -> float:
    tests = sum(len(nb.tests) for nb in assignment.notebooks)
    return tests * (limits.timeout + 15) + 60


class Pool:
    """Threads that each own one sandboxed worker and pull jobs from a shared queue."""

    def __init__(self, size: int, config: SandboxConfig, init: dict, timeout: float, make_job):
        self.size, self.config, self.init, self.timeout = size, config, init, timeout
        self.make_job = make_job  # built when a worker takes it: no batch-sized copy in memory
        self.jobs: queue.Queue = queue.Queue()
        self.results: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.active: dict[int, Worker] = {}
        self.fatal: list[str] = []
        self.lock = threading.Lock()

    def _thread(self, index: int) -> None:
        worker = None
        try:
            while not self.stop.is_set():
                try:
                    item = self.jobs.get_nowait()
                except queue.Empty:
                    return
                submission, number = item
                job = self.make_job(number, submission)
                started = time.monotonic()
                reply, error = None, None
                for _attempt in range(2):
                    if worker is None:
                        worker = Worker(index, self.config, self.init)
                        with self.lock:
                            self.active[index] = worker
                        try:
                            worker.start()
                        except (WorkerDied, OSError) as exc:
                            self.fatal.append(f"worker {index} could not start: {exc}")
                            self.stop.set()
                            return
                    try:
                        reply = worker.grade(job, self.timeout)
                        break
                    except WorkerDied as exc:
                        error = str(exc)
                        worker.stop()
                        worker = None
                        if self.stop.is_set():
                            return
                if reply is not None:
                    error = None
                self.results.put((submission, reply, error, time.monotonic() - started))
        finally:
            if worker is not None:
                worker.stop()

    def start(self, items: list) -> list[threading.Thread]:
        for item in items:
            self.jobs.put(item)
        threads = [
            threading.Thread(target=self._thread, args=(i,), daemon=True) for i in range(self.size)
        ]
        for thread in threads:
            thread.start()
        return threads

    def kill_all(self) -> None:
        self.stop.set()
        with self.lock:
            for worker in self.active.values():
                if worker.proc is not None:
                    try:
                        worker.proc.kill()
                    except OSError:
                        pass


def _background_import() -> threading.Thread:
    """nbgrader takes seconds to import; do it while the workers start."""

    def load():
        try:
            import nbgrader.api  # noqa: F401
        except Exception:
            pass

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    return thread


def autograde(course: Course, name: str, options: Options) -> Summary:
    started = time.monotonic()
    check_bwrap()
    assignment = load_assignment(name, course.source(name))
    key = grading_key(assignment, options.limits)
    importer = _background_import() if options.sync else None
    students = options.students if options.students is not None else course.students(name)
    summary = Summary(name, total=len(students))
    pending, ready = [], []
    for student in students:
        folder = course.submitted(student, name)
        try:
            submission = parse_submission(student, folder, assignment)
        except Exception as exc:  # a grader bug must not stop the batch: record it instead
            submission = unreadable_submission(student, folder, assignment, exc)
            ready.append((submission, None, "unreadable submission", 0.0))  # status: error
            continue
        existing = store.read_result(course.result_path(student, name))
        if not options.force and store.is_current(existing, key, submission):
            summary.reused += 1
            summary.results[student] = existing
            out = course.autograded(student, name)
            if not all((out / nb.name).exists() for nb in assignment.notebooks):
                report.write_autograded_notebooks(out, assignment, submission, existing)
        elif all(nb.problem for nb in submission.notebooks.values()):
            ready.append((submission, None, None, 0.0))
        else:
            pending.append(submission)

    def record(submission: Submission, reply, error, seconds) -> dict:
        result = store.build_result(assignment, submission, reply, seconds, key, error)
        store.write_result(course.result_path(submission.student, name), result)
        out = course.autograded(submission.student, name)
        try:
            report.write_autograded_notebooks(out, assignment, submission, result)
        except Exception as exc:  # the result is what counts; the copy for people is a bonus
            print(
                f"safegrade: no autograded notebook for {submission.student}: {exc}",
                file=sys.stderr,
            )
        summary.results[submission.student] = result
        summary.graded += 1
        return result

    progress = Progress(len(pending) + len(ready), options.progress)
    for item in ready:
        progress.update(record(*item))
    size = options.workers or os.cpu_count() or 1
    size = max(1, min(size, len(pending))) if pending else 0
    summary.workers = size
    pool = None
    try:
        if pending:
            config = SandboxConfig(
                python=options.python,
                limits=options.limits,
                forbidden=_forbidden_paths(course, name),
            )
            try:
                pool = Pool(
                    size,
                    config,
                    worker_init(assignment),
                    job_timeout(assignment, options.limits),
                    lambda number, submission: make_job(number, assignment, submission),
                )
                jobs = [(submission, i) for i, submission in enumerate(pending)]
                threads = pool.start(jobs)
                remaining = len(jobs)
                while remaining:
                    try:
                        item = pool.results.get(timeout=0.5)
                    except queue.Empty:
                        if pool.fatal:
                            raise SandboxUnavailable(pool.fatal[0]) from None
                        if not any(t.is_alive() for t in threads) and pool.results.empty():
                            break
                        continue
                    progress.update(record(*item))
                    remaining -= 1
            finally:
                config.cleanup()
    except KeyboardInterrupt:
        summary.interrupted = True
        if pool is not None:
            pool.kill_all()
    finally:
        if pool is not None:
            pool.kill_all()
        for student, result in summary.results.items():
            if result.get("status") == "error":
                summary.errors.append((student, result["reason"]))
            elif result["score"] == 0:
                summary.zero.append((student, result["reason"]))
        if options.sync:
            if importer is not None:
                importer.join()
            from . import gradebook

            results = gradebook.collect_results(course, name)
            summary.synced = gradebook.sync(course, assignment, results)
        summary.seconds = time.monotonic() - started
    return summary


def unreadable_submission(student, folder, assignment: Assignment, exc: Exception) -> Submission:
    problem = f"the grader could not read this submission ({type(exc).__name__}: {exc})"
    notebooks = {
        nb.name: SubmittedNotebook(nb.name, problem=problem) for nb in assignment.notebooks
    }
    return Submission(student, folder, notebooks, {}, f"unreadable:{exc}", None)


def _forbidden_paths(course: Course, name: str) -> list[str]:
    paths = [str(course.root), str(course.source(name))]
    gradebook = course.gradebook_path()
    if gradebook is not None:
        paths.append(str(gradebook))
    paths.append(str(course.path(course.submitted_directory, ".", ".")))
    return paths
