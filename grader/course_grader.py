"""The instructor's pipeline for the course's three nbgrader exercises (driven by grader/grader.mk).

    python grader/course_grader.py release [--no-publish]   student versions + gradebook entries
    python grader/course_grader.py collect SUBMISSIONS      copy submissions into grader/submitted
    python grader/course_grader.py autograde [SUBMISSIONS]  collect (if given), then grade
    python grader/course_grader.py feedback                 HTML feedback in grader/feedback
    python grader/course_grader.py export [--out CSV]       grades.csv: a column per exercise

Every command takes --course DIR (default: this repository); nbgrader runs with DIR as its working
folder, where it reads nbgrader_config.py. `autograde()` is the one grading step: a sandboxed grader
can replace it (or the AUTOGRADE variable in grader.mk) without touching the other steps.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ("ex1_sigmoid_to_tanh", "ex2_node_dump", "ex3_timing_interpreter")
COURSE_ID = "fx-course"
STUDENT_VERSIONS = Path("chapters/exercises")  # where learners find the released notebooks
SOURCE = Path("solutions")  # solutions/<assignment>/<assignment>.ipynb: nbgrader's source format
RELEASE, SUBMITTED = Path("grader/release"), Path("grader/submitted")
AUTOGRADED, FEEDBACK = Path("grader/autograded"), Path("grader/feedback")
GRADEBOOK, EXPORT = Path("grader/gradebook.db"), Path("grader/exports/grades.csv")


def nbgrader(course: Path, *args: str) -> int:
    """Run one nbgrader command in the course folder; returns its exit status."""
    command = [sys.executable, "-m", "nbgrader", *args]
    print("$ nbgrader", " ".join(args), flush=True)
    return subprocess.run(command, cwd=course, check=False).returncode


def release(course: Path = ROOT, publish_to: Path | None = None) -> list[Path]:
    """generate_assignment for every exercise (gradebook entries, grader/release/), then copy the
    student versions, stripped, to publish_to/<assignment>.ipynb. Returns the copies."""
    # One nbgrader process for all (each start costs seconds); "*": every folder of solutions/.
    if nbgrader(course, "generate_assignment", "*", "--force") != 0:
        raise SystemExit("nbgrader generate_assignment failed")
    if publish_to is None:
        return []
    import nbformat

    from fxcourse.notebooks import clean

    publish_to.mkdir(parents=True, exist_ok=True)
    published = []
    for assignment in ASSIGNMENTS:
        released = course / RELEASE / assignment / f"{assignment}.ipynb"
        target = publish_to / f"{assignment}.ipynb"
        nbformat.write(clean(nbformat.read(released, as_version=4)), target)
        published.append(target)
    return published


def collect(submissions: Path, course: Path = ROOT) -> list[tuple[str, str]]:
    """Copy submissions/<student>/<assignment>/ into the course's submitted folder, replacing an
    earlier copy. Returns the (student, assignment) pairs copied."""
    copied = []
    for student in sorted(p for p in submissions.iterdir() if p.is_dir()):
        for folder in sorted(p for p in student.iterdir() if p.is_dir()):
            if folder.name not in ASSIGNMENTS:
                print(f"skipping {folder}: not one of {', '.join(ASSIGNMENTS)}")
                continue
            if not (folder / f"{folder.name}.ipynb").exists():
                # Kept all the same: the grader finds a renamed notebook by its answer cells, or
                # records a zero with the reason, instead of the student silently going missing.
                print(f"note: {folder} has no {folder.name}.ipynb; collected as it is")
            target = course / SUBMITTED / student.name / folder.name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(folder, target)
            copied.append((student.name, folder.name))
    print(f"collected {len(copied)} submission(s) into {course / SUBMITTED}")
    return copied


def autograde(course: Path = ROOT, extra_args: Sequence[str] = ()) -> int:
    """Grade every submitted notebook of every exercise in one `nbgrader autograde` batch. A
    submission that crashes its kernel or loops is graded, not fatal to the batch. Returns the exit
    status: non-zero when nbgrader could not grade some submission (its log says which)."""
    if not any((course / SUBMITTED).glob("*/*/*.ipynb")):
        print(f"nothing to grade in {course / SUBMITTED}")
        return 0
    return nbgrader(course, "autograde", "*", "--force", *extra_args)


def feedback(course: Path = ROOT, students: Iterable[str] = ()) -> int:
    """HTML feedback for every autograded submission (or only `students`) in grader/feedback."""
    selections = [[f"--student={student}"] for student in students] or [[]]  # one id per run
    return max(nbgrader(course, "generate_feedback", "*", "--force", *s) for s in selections)


def scores(course: Path = ROOT) -> dict[str, dict[str, float]]:
    """student id -> {assignment: score}; an assignment a student did not submit scores 0."""
    from nbgrader.api import Gradebook, MissingEntry

    table = {}
    with Gradebook(f"sqlite:///{course / GRADEBOOK}", COURSE_ID) as gradebook:
        for student in gradebook.students:
            row = {}
            for assignment in ASSIGNMENTS:
                try:
                    row[assignment] = gradebook.find_submission(assignment, student.id).score
                except MissingEntry:
                    row[assignment] = 0.0
            table[student.id] = row
    return table


def export(course: Path = ROOT, out: Path | None = None) -> Path:
    """Write student_id, one column per exercise, total (sorted by student id) to a CSV file."""
    out = out or course / EXPORT
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student_id", *ASSIGNMENTS, "total"])
        for student, row in sorted(scores(course).items()):
            points = [row[assignment] for assignment in ASSIGNMENTS]
            writer.writerow([student, *(f"{p:g}" for p in points), f"{sum(points):g}"])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--course", type=Path, default=ROOT, help="course root (default: repo)")
    commands = parser.add_subparsers(dest="command", required=True)
    release_cmd = commands.add_parser("release", help="student versions and gradebook entries")
    release_cmd.add_argument("--no-publish", action="store_true", help=f"skip {STUDENT_VERSIONS}")
    commands.add_parser("collect").add_argument("submissions", type=Path)
    commands.add_parser("autograde").add_argument("submissions", type=Path, nargs="?")
    commands.add_parser("feedback")
    commands.add_parser("export").add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    course = args.course.resolve()

    if args.command == "release":
        publish_to = None if args.no_publish else course / STUDENT_VERSIONS
        for path in release(course, publish_to):
            print(f"wrote {path}")
    elif args.command == "collect":
        collect(args.submissions, course)
    elif args.command == "autograde":
        if args.submissions:
            collect(args.submissions, course)
        return autograde(course)
    elif args.command == "feedback":
        return feedback(course)
    elif args.command == "export":
        path = export(course, args.out)
        print(f"wrote {path}:\n{path.read_text()}", end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
