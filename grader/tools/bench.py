"""Benchmark: plain `nbgrader autograde` against `make autograde` (this grader) on N submissions.

    python -m grader.tools.bench [--n 8] [--assignment NAME] [--workers W]

Both grade the same N generated submissions (reference answers and untouched starters,
alternating) of one exercise, each in its own copy of the course; the script prints both wall
times, the throughput ratio, and whether every student got the same score from both (exit 1 if
not). Plain nbgrader runs the notebooks in a Jupyter kernel, one after another; its per-cell
timeout is the course's GradingLimits.cell_timeout, as for the sandbox.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from grader.course import Course
from grader.instructor import copy_course
from grader.standings import ClassBook

MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def run(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(cwd))
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{(done.stdout + done.stderr)[-3000:]}")
    return time.perf_counter() - start


def make_course(base: Path, assignment: str, count: int) -> Path:
    """A copy of the course's grading setup and one exercise, released, with `count` uploads."""
    course = Course.configured(copy_course(base / "course", [assignment]))
    command = [sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force"]
    run(command, course.root)
    name = f"{assignment}.ipynb"
    starter = nbformat.read(course.release / assignment / name, as_version=4)
    answers = {}
    for cell in nbformat.read(course.source / assignment / name, as_version=4).cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            lines = [line for line in cell.source.split("\n") if line.strip() not in MARKERS]
            answers[cell.metadata.nbgrader.grade_id] = "\n".join(lines)
    for i in range(count):
        nb = nbformat.from_dict(starter)
        for cell in nb.cells if i % 2 == 0 else []:
            cell.source = answers.get(
                cell.metadata.get("nbgrader", {}).get("grade_id"), cell.source
            )
        folder = course.submitted / f"student{i:03d}" / assignment
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / name)
    return course.root


def scores(course: Course, assignment: str) -> dict[str, float]:
    """student id -> the gradebook's score of their submission of `assignment`, read as every
    reader of the gradebook reads it (grader/standings.py)."""
    with ClassBook.of(course) as book:
        return book.scores(assignment)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=8, help="submissions (default 8)")
    first = Course.configured().exercises[0]
    parser.add_argument("--assignment", default=first, help=f"an exercise (default {first})")
    parser.add_argument("--workers", type=int, default=0, help="sandboxes (default: cores)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as base:
        template = make_course(Path(base) / "template", args.assignment, args.n)
        plain, sandboxed = Path(base) / "plain", Path(base) / "sandboxed"
        shutil.copytree(template, plain)
        shutil.copytree(template, sandboxed)
        print(f"bench-grading: {args.n} submissions of {args.assignment}, {os.cpu_count()} cores")
        command = [sys.executable, "-m", "nbgrader", "autograde", args.assignment, "--force"]
        t_plain = run([*command, "--SandboxExecute.unsandboxed=True"], plain)
        print(f"  plain nbgrader autograde: {t_plain:7.1f} s  ({args.n / t_plain:.2f} per s)")
        command = [sys.executable, "-m", "grader.safegrade", "autograde", args.assignment]
        t_safe = run([*command, f"--workers={args.workers}"], sandboxed)
        print(f"  make autograde (sandbox): {t_safe:7.1f} s  ({args.n / t_safe:.2f} per s)")
        print(f"  throughput ratio: {t_plain / t_safe:.2f}x")
        a, b = (scores(Course.configured(root), args.assignment) for root in (plain, sandboxed))
        differ = sorted(s for s in a.keys() | b.keys() if a.get(s) != b.get(s))
        print(f"  same score for every student: {not differ} ({len(a)} students)")
        for student in differ:
            print(f"    {student}: plain {a.get(student)}, sandbox {b.get(student)}")
        return 1 if differ or len(a) != args.n else 0


if __name__ == "__main__":
    sys.exit(main())
