"""Command line: ``python -m grader.safegrade {autograde,feedback,sync} ASSIGNMENT``."""

from __future__ import annotations

import argparse
import signal
import sys

from . import batch, gradebook, report, store
from .assignment import load_assignment
from .course import load_course
from .sandbox import Limits, SandboxUnavailable


def _interrupt(_signum, _frame):
    raise KeyboardInterrupt


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog="python -m grader.safegrade",
        description="Sandboxed, parallel autograder for nbgrader assignments.",
    )
    sub = main.add_subparsers(dest="command", required=True)
    defaults = Limits()
    for name, help_text in (
        ("autograde", "grade every submission of an assignment (resumes; skips unchanged ones)"),
        ("feedback", "write feedback.html (no hidden test source) for each graded submission"),
        ("sync", "copy the stored results of an assignment into the nbgrader gradebook"),
    ):
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("assignment", nargs="+", help="assignment name(s); '*' for every one")
        cmd.add_argument(
            "--course-dir", help="nbgrader course root (default: from nbgrader_config.py)"
        )
        cmd.add_argument("--student", action="append", help="only this student (repeatable)")
        if name != "autograde":
            continue
        cmd.add_argument(
            "--workers", "-j", type=int, default=0, help="parallel workers (default: cores)"
        )
        cmd.add_argument("--timeout", type=float, default=defaults.timeout, help="seconds per test")
        cmd.add_argument("--memory-mb", type=int, default=defaults.memory_mb)
        cmd.add_argument("--nproc", type=int, default=defaults.nproc)
        cmd.add_argument("--force", action="store_true", help="regrade unchanged submissions too")
        cmd.add_argument("--no-sync", action="store_true", help="leave the gradebook alone")
        cmd.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    return main


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    course = load_course(args.course_dir)
    names = expand_assignments(course, args.assignment)
    if not names:
        print(f"safegrade: no assignment matches {args.assignment}", file=sys.stderr)
        return 2
    status = 0
    for name in names:
        status = max(status, run_command(args, course, name))
        if status >= 2:  # the sandbox or the sources are unusable: the next would fail too
            break
    return status


def expand_assignments(course, patterns: list[str]) -> list[str]:
    names: list[str] = []
    for pattern in patterns:
        if "*" in pattern or "?" in pattern:
            folders = course.path(course.source_directory, ".", pattern).parent.glob(pattern)
            names += sorted(p.name for p in folders if p.is_dir() and any(p.glob("*.ipynb")))
        else:
            names.append(pattern)
    return list(dict.fromkeys(names))


def run_command(args, course, name: str) -> int:
    args.assignment = name
    if args.command == "autograde":
        limits = Limits(timeout=args.timeout, memory_mb=args.memory_mb, nproc=args.nproc)
        options = batch.Options(
            workers=args.workers,
            limits=limits,
            force=args.force,
            sync=not args.no_sync,
            students=args.student,
            progress=args.progress,
        )
        try:
            summary = batch.autograde(course, args.assignment, options)
        except SandboxUnavailable as exc:
            print(f"safegrade: {exc}", file=sys.stderr)
            return 3
        except FileNotFoundError as exc:
            print(f"safegrade: {exc}", file=sys.stderr)
            return 2
        print("\n".join(summary.lines()))
        if summary.interrupted:
            return 130
        return 1 if summary.errors else 0
    students = args.student or course.students(args.assignment)
    if args.command == "feedback":
        written = 0
        for student in students:
            result = store.read_result(course.result_path(student, args.assignment))
            if result is not None:
                report.write_feedback(course.feedback(student, args.assignment), result)
                written += 1
        print(f"safegrade: wrote feedback for {written} of {len(students)} submissions")
        return 0
    assignment = load_assignment(args.assignment, course.source(args.assignment))
    results = gradebook.collect_results(course, args.assignment)
    if args.student:
        results = [r for r in results if r["student"] in set(args.student)]
    count = gradebook.sync(course, assignment, results)
    print(f"safegrade: gradebook updated for {count} submissions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
