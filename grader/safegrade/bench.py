"""Benchmark: plain ``nbgrader autograde`` against the sandboxed, parallel grader.

    python -m grader.safegrade.bench [--n 8] [--workers 2] [--assignment ex1_sigmoid_to_tanh]

Both grade the same N generated submissions (reference answers and untouched starters, alternating)
of one of the course's exercises, each in its own copy of the course; the script prints both wall
times, the throughput ratio and whether every student got the same score from both.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def run(command: list[str], cwd: Path, env: dict | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}\n{tail}")
    return seconds


def make_course(base: Path, assignment: str) -> Path:
    """A copy of the course's grader configuration and one exercise's source, released."""
    course = base / "course"
    shutil.copytree(ROOT / "solutions" / assignment, course / "solutions" / assignment)
    (course / "grader").mkdir(parents=True)
    for path in (ROOT / "grader").glob("*.py"):
        shutil.copy(path, course / "grader")
    shutil.copy(ROOT / "nbgrader_config.py", course)
    nbgrader = [sys.executable, "-m", "nbgrader"]
    run([*nbgrader, "generate_assignment", assignment, "--force"], course)
    return course


def add_submissions(course: Path, assignment: str, count: int) -> dict[str, str]:
    """Alternating reference answers and untouched starters; returns student -> kind."""
    release = next((course / "grader" / "release" / assignment).glob("*.ipynb"))
    source = json.loads((course / "solutions" / assignment / release.name).read_text())
    answers = {}
    for cell in source["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution") and cell["cell_type"] == "code":
            text = "".join(cell["source"]).split("\n")
            answers[meta["grade_id"]] = "\n".join(
                line for line in text if line.strip() not in SOLUTION_MARKERS
            )
    kinds = {}
    for i in range(count):
        student, kind = f"student{i:03d}", "reference" if i % 2 == 0 else "starter"
        nb = json.loads(release.read_text())
        if kind == "reference":
            for cell in nb["cells"]:
                grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
                if grade_id in answers:
                    cell["source"] = answers[grade_id]
        folder = course / "grader" / "submitted" / student / assignment
        folder.mkdir(parents=True)
        (folder / release.name).write_text(json.dumps(nb))
        kinds[student] = kind
    return kinds


def scores(course: Path, assignment: str) -> dict[str, float]:
    with sqlite3.connect(course / "grader" / "gradebook.db") as db:
        rows = db.execute(
            "select s.student_id, sum(coalesce(g.manual_score, g.auto_score, 0)) from grade g "
            "join submitted_notebook n on g.notebook_id = n.id "
            "join submitted_assignment s on n.assignment_id = s.id "
            "join assignment a on s.assignment_id = a.id where a.name = ? group by s.student_id",
            (assignment,),
        ).fetchall()
    return {student: float(total) for student, total in rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=8, help="submissions (default 8)")
    parser.add_argument("--workers", type=int, default=0, help="safegrade workers (default: cores)")
    parser.add_argument("--assignment", default="ex1_sigmoid_to_tanh")
    parser.add_argument("--keep", action="store_true", help="keep the temporary courses")
    args = parser.parse_args(argv)
    workers = args.workers or os.cpu_count() or 1
    base = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        print(f"bench-grading: {args.n} submissions of {args.assignment}, {os.cpu_count()} cores")
        template = make_course(base / "template", args.assignment)
        kinds = add_submissions(template, args.assignment, args.n)
        plain, sandboxed = base / "nbgrader", base / "safegrade"
        shutil.copytree(template, plain)
        shutil.copytree(template, sandboxed)

        nbgrader = [sys.executable, "-m", "nbgrader", "autograde", args.assignment, "--force"]
        t_plain = run(nbgrader, plain)
        print(f"  nbgrader autograde:        {t_plain:7.1f} s  ({args.n / t_plain:.2f} per s)")

        env = dict(os.environ, PYTHONPATH=str(ROOT))
        safegrade = [sys.executable, "-m", "grader.safegrade", "autograde", args.assignment]
        safegrade += [f"--workers={workers}", "--force", "--no-progress"]
        t_safe = run(safegrade, sandboxed, env)
        print(
            f"  safegrade ({workers} workers):     {t_safe:7.1f} s  ({args.n / t_safe:.2f} per s)"
        )
        print(f"  throughput ratio (safegrade / nbgrader): {t_plain / t_safe:.2f}x")

        a, b = scores(plain, args.assignment), scores(sandboxed, args.assignment)
        differ = sorted(s for s in kinds if a.get(s) != b.get(s))
        counts = {k: sum(1 for v in kinds.values() if v == k) for k in set(kinds.values())}
        print(f"  submissions: {counts}; same score from both graders: {not differ}")
        for student in differ:
            got = f"nbgrader {a.get(student)}, safegrade {b.get(student)}"
            print(f"    {student} ({kinds[student]}): {got}")
        return 1 if differ else 0
    finally:
        if args.keep:
            print(f"  kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
