"""The instructor's pipeline for the course's nbgrader exercises (driven by grader/grader.mk).

    python grader/course_grader.py release [--no-publish] [--assignment NAME]
                                  student versions + gradebook entries, each exercise's
                                  translations too (exercises.py; a wrong NAME: refused)
    python grader/course_grader.py collect SUBMISSIONS [--lms NAME] [--timezone TZ]
                                  a folder or .zip into classdata/submitted (grader/intake/)
    python grader/course_grader.py collect [--assignment NAME]
                                  the submissions in nbgrader's exchange, by the same rules
    python grader/course_grader.py release-feedback [--assignment NAME]
                                  feedback through the exchange to every student who can get it
    python grader/course_grader.py submitted [ASSIGNMENT]   fail unless something is there to grade
    python grader/course_grader.py feedback                 HTML feedback in classdata/feedback
    python grader/course_grader.py export [ASSIGNMENT ...] [--out CSV]
                                  grades.csv (a column per exercise) and grades_by_test.csv (a
                                  column per graded cell); fails when nothing has been graded

An unknown assignment name or an empty input is refused with exit status 2 (1 for "nothing to
grade or export yet") and a message naming the assignments. Every command takes --course DIR
(default: this repository); nbgrader runs with DIR as its working folder, where it reads
nbgrader_config.py. The steps themselves are grader/instructor.py's, on the course
(grader/course.py) that DIR's course.json and FXCOURSE_CLASSDATA configure. Grading itself is
`python -m grader.safegrade autograde` (the AUTOGRADE variable in grader.mk), between
`submitted` and `export`.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence
from pathlib import Path

from grader import exercises, intake
from grader.course import STUDENT_VERSIONS, Course
from grader.grades_export import by_test_path
from grader.instructor import (
    UsageError,
    check_assignments,
    collect,
    collect_exchange,
    export,
    feedback,
    release,
    release_feedback,
    submitted,
)


def course_root(argv: Sequence[str] | None) -> Path:
    """--course DIR, else the course this script is in: run as grader/course_grader.py of a
    course copy, the grader package may be the repository's (installed), this file the copy's."""
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--course", type=Path, default=Path(__file__).resolve().parents[1])
    return early.parse_known_args(argv)[0].course.resolve()


def assignment_name(course: Course):
    """argparse's check of --assignment: a wrong name is refused with the near match."""

    def checked(name: str) -> str:
        try:
            return check_assignments([name], course)[0]
        except UsageError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return checked


# Two steps nbgrader both calls "release": make release is the formgrader's Generate.
RELEASED_IS_NOT_HANDED_OUT = (
    "Generated the student versions (the formgrader's Generate). Learners of a class get an "
    "exercise only once it is handed out through the exchange: the formgrader's Release button "
    "(it lists the exercise as 'draft' until then), or nbgrader release_assignment NAME."
)


def command_line(course: Course) -> argparse.ArgumentParser:
    """The commands and their options, for `course` (its assignments, its LMS patterns)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--course", type=Path, help="course root (default: this one)")
    commands = parser.add_subparsers(dest="command", required=True)
    release_cmd = commands.add_parser("release", help="student versions and gradebook entries")
    release_cmd.add_argument("--no-publish", action="store_true", help=f"skip {STUDENT_VERSIONS}")
    command = commands.add_parser("collect")
    command.add_argument("submissions", type=Path, nargs="?")
    lms_patterns = intake.lms_patterns(exercises.possible_assignments(course.root))  # any language
    command.add_argument("--lms", choices=lms_patterns, help="file-name pattern of a download")
    command.add_argument("--timezone", default="UTC", help="zone of times in file names")
    # release: make autograde ASSIGNMENT=... refuses a wrong name before generating anything
    named = (release_cmd, command, *map(commands.add_parser, ("release-feedback", "feedback")))
    for command in named:
        help_text = "one exercise (default: all)"
        checked = assignment_name(course)
        command.add_argument("--assignment", type=checked, action="append", help=help_text)
    export_cmd = commands.add_parser("export")
    export_cmd.add_argument("assignments", nargs="*", help="exercises (default: all)")
    export_cmd.add_argument("--out", type=Path)
    commands.add_parser("submitted").add_argument("assignments", nargs="*")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    course = Course.configured(course_root(argv))
    args = command_line(course).parse_args(argv)
    # A path or a reason may hold any character; the terminal's encoding must not stop us.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")

    if args.command == "release":
        publish_to = None if args.no_publish else course.student_versions
        for path in release(course, publish_to):
            print(f"wrote {path}")
        print(RELEASED_IS_NOT_HANDED_OUT)
    elif args.command == "collect" and args.submissions:
        return collect_status(args, course)
    elif args.command == "collect":
        return collect_exchange(course, args.assignment or course.assignments)
    elif args.command == "release-feedback":
        return release_feedback(course, args.assignment or course.assignments)
    elif args.command == "feedback":
        return feedback(course, assignments=args.assignment or ())
    else:
        return refusing_usage_errors(args, course)
    return 0


def refusing_usage_errors(args: argparse.Namespace, course: Course) -> int:
    """export and submitted: 2 for an unknown name, 1 when there is nothing to work on."""
    try:
        if args.command == "submitted":
            print(f"{len(submitted(course, args.assignments))} submitted notebooks to grade")
            return 0
        path = export(course, args.out, args.assignments)
    except UsageError as error:
        print(f"{args.command}: {error}", file=sys.stderr)
        return 2 if str(error).startswith("unknown") else 1
    for written in (path, by_test_path(path)):
        print(f"wrote {written}:\n{written.read_text()}", end="")
    return 0


def collect_status(args: argparse.Namespace, course: Course) -> int:
    """Exit status of a collect: 0 all collected, 1 some files not collected, 2 nothing read."""
    from dateutil import tz

    if tz.gettz(args.timezone) is None:
        print(f"collect: unknown time zone {args.timezone!r}", file=sys.stderr)
        return 2
    try:
        report = collect(args.submissions, course, args.lms, args.timezone)
    except intake.IntakeError as error:
        print(f"collect: {intake.shown(str(args.submissions))}: {error}", file=sys.stderr)
        return 2
    return 1 if report.refused or not report.collected else 0


if __name__ == "__main__":
    sys.exit(main())
