"""python -m grader.safegrade autograde [ASSIGNMENT] [--workers N] [--force] [--student ID]
python -m grader.safegrade limits     every limit of the grader in force, with its unit

Run from the course root (where nbgrader_config.py is). Other options
(--GradingLimits.cell_timeout=30, --GradingLimits.budget=60, ...) go to nbgrader as they would
on its own command line.
"""

import argparse
import atexit
import glob
import os
import sys
from pathlib import Path

# jsonschema imports its optional IRI parser (rfc3987-syntax, in the environment for Jupyter's
# event schemas) when nbformat loads it: building that parser takes seconds, more than grading a
# submission, and nothing here validates an IRI. Without it jsonschema leaves that format alone.
sys.modules.setdefault("rfc3987_syntax", None)

from grader.course import Course  # noqa: E402 (imports no nbgrader: the sandboxes overlap that)

from .grading_limits import GradingLimits  # noqa: E402
from .pool import Pool  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.safegrade", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    grade = commands.add_parser("autograde", help="grade every submission (resumes; in parallel)")
    grade.add_argument("assignment", nargs="?", default="*", help="assignment id or glob")
    grade.add_argument("--workers", "-j", type=int, default=0, help="sandboxes (default: cores)")
    grade.add_argument("--force", action="store_true", help="regrade unchanged submissions too")
    grade.add_argument("--student", default="*", help="student id or glob")
    commands.add_parser("limits", help="every limit of the grader, its value and unit")
    args, nbgrader_options = parser.parse_known_args(argv)
    if args.command == "limits":
        return print_limits(nbgrader_options)
    selection = [
        f"--CourseDirectory.assignment_id={args.assignment}",
        f"--CourseDirectory.student_id={args.student}",
    ]
    # The sandboxes import torch while this process imports nbgrader to read the configuration,
    # if there is something to grade: started for nothing, each costs seconds of CPU.
    early = None
    if something_submitted(args.assignment, args.student, nbgrader_options):
        early = Pool.early(args.workers if args.workers > 0 else os.cpu_count() or 1)
    try:
        from .batch import autograde

        return autograde(selection + nbgrader_options, args.workers, args.force, early)
    finally:
        if early is not None:
            early.close()


def something_submitted(assignment: str, student: str, nbgrader_options: list[str]) -> bool:
    """Whether a submission folder of the selected students and assignments is there, where the
    course's layout puts them (the configured Course's, or --CourseDirectory.root and
    .submitted_directory on the command line): a guess from folder names alone, made before
    nbgrader reads the configuration, that decides only whether the sandboxes start early."""
    layout = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    layout.add_argument("--CourseDirectory.root", dest="root", default=".")
    layout.add_argument("--CourseDirectory.submitted_directory", dest="folder")
    known, _ = layout.parse_known_args(nbgrader_options)
    folder = known.folder or Course.configured(Path(known.root)).submitted
    pattern = os.path.join(known.root, folder, student, assignment)
    return any(os.path.isdir(path) for path in glob.iglob(pattern))


def print_limits(nbgrader_options: list[str]) -> int:
    """The limits as nbgrader's configuration (nbgrader_config.py here, options) sets them."""
    from nbgrader.apps.autogradeapp import AutogradeApp

    app = AutogradeApp()
    app.initialize(nbgrader_options)
    print("\n".join(GradingLimits(config=app.config).lines()))
    return 0


if __name__ == "__main__":
    status = main()
    # Every grade, result file and gradebook write is done and closed: the exit handlers run
    # (the sandboxes' site folder is removed), the interpreter's teardown of nbgrader's and
    # torch's modules, which would only add a second, does not.
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
