"""The instructor's pipeline for the course's nbgrader exercises (driven by grader/grader.mk).

    python grader/course_grader.py release [--no-publish] [--assignment NAME]
                                  student versions + gradebook entries, each exercise's
                                  translations too (exercises.py; a wrong NAME: refused)
    python grader/course_grader.py collect SUBMISSIONS [--lms NAME] [--timezone TZ]
                                  a folder or .zip into classdata/submitted (intake.py)
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
nbgrader_config.py. Grading itself is `python -m grader.safegrade autograde` (the AUTOGRADE
variable in grader.mk), between `submitted` and `export`.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from grader import exercises, grades_export, intake
from grader.grades_export import by_test_path
from grader.intake import class_exchange
from grader.safegrade.data import inert_text
from grader.safegrade.limits import LIMITS
from grader.safegrade.results import not_graded

# nbgrader runs `alembic` by name when it creates a gradebook: the venv's bin must be on PATH even
# when this script runs from a login shell that never activated the venv (a hub terminal).
_BIN = str(Path(sys.executable).parent)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join(filter(None, [_BIN, os.environ.get("PATH")]))

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = exercises.names(ROOT)  # this repository's; a course copy's: exercises_of(course)
exercises_of = exercises.of_course  # a course's exercises (this repository's for a bare folder)
COURSE_ID = "fx-course"
STUDENT_VERSIONS = Path("chapters/exercises")  # where learners find the released notebooks
SOURCE = exercises.SOURCE  # solutions/<assignment>/<assignment>.ipynb: nbgrader's source format
# The instructor's class data: nbgrader's working folders, the exchange, the gradebook and the
# grading secret (autograded/.safegrade_secret), in a git-ignored folder of the course's own,
# outside every package, so that no install of the code (and no sandbox) carries it along.
# FXCOURSE_CLASSDATA (make CLASSDATA=...) moves it: a path relative to the course, or absolute.
CLASSDATA = Path(os.environ.get("FXCOURSE_CLASSDATA", "classdata"))
RELEASE, SUBMITTED = CLASSDATA / "release", CLASSDATA / "submitted"
AUTOGRADED, FEEDBACK = CLASSDATA / "autograded", CLASSDATA / "feedback"
GRADEBOOK, EXPORT = CLASSDATA / "gradebook.db", CLASSDATA / "exports" / "grades.csv"
EXCHANGE, DOWNLOADED = CLASSDATA / "exchange", CLASSDATA / "downloaded"
LMS_PATTERNS = intake.lms_patterns(exercises.possible_assignments(ROOT))  # LMS=<name>, any language


def copy_course(target: Path, assignments: Sequence[str] = ASSIGNMENTS) -> Path:
    """A course folder at `target` with this course's grading configuration and the sources of
    `assignments` (not its working folders): for tests, benchmarks and a class hub. Copying
    again over an earlier copy brings it up to date and keeps its working folders."""
    skip = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    for assignment in assignments:
        source, copy = ROOT / SOURCE / assignment, target / SOURCE / assignment
        shutil.copytree(source, copy, ignore=skip, dirs_exist_ok=True)
    safegrade = Path("grader") / "safegrade"
    shutil.copytree(ROOT / safegrade, target / safegrade, ignore=skip, dirs_exist_ok=True)
    for path in (ROOT / "grader").glob("*.py"):
        shutil.copy(path, target / "grader")
    shutil.copy(ROOT / "nbgrader_config.py", target)
    return target


def nbgrader(course: Path, *args: str) -> int:
    """Run one nbgrader command in the course folder; returns its exit status."""
    command = [sys.executable, "-m", "nbgrader", *args]
    print("$ nbgrader", " ".join(args), flush=True)
    return subprocess.run(command, cwd=course, check=False).returncode


def release(course: Path = ROOT, publish_to: Path | None = None) -> list[Path]:
    """generate_assignment for every exercise and its translations (gradebook entries,
    classdata/release/; exercises.py), then copy each exercise's released folder to
    publish_to/<assignment>/: the student version, stripped, and the files beside it (verify.py,
    the tests' checks). Returns the notebooks' copies. Translations go out by the exchange only."""
    assignments, every = exercises_of(course), exercises.write_translations(course)
    _clear(course / RELEASE / a for a in every)
    # One process for all (each start costs seconds), naming the exercises ("*" would also try
    # each chapter of solutions/ and warn about every one). Before grading (no publish_to) its
    # log of every file it copies says nothing new.
    quiet = ["--log-level=30"] if publish_to is None else []  # 30: warnings and errors only
    print("$ nbgrader generate_assignment --force", *quiet, *every, flush=True)
    command = [sys.executable, "-m", "grader.exercises", "generate", *quiet, *every]
    if subprocess.run(command, cwd=course, check=False).returncode != 0:
        raise SystemExit("nbgrader generate_assignment failed")
    if publish_to is None:
        return []
    import nbformat

    from courseware.notebooks import clean
    from fxcourse.stamps import stamp_notebook, stamp_python

    _clear(publish_to / a for a in assignments)
    published = []
    for assignment in assignments:
        released, target = course / RELEASE / assignment, publish_to / assignment
        shutil.copytree(released, target, ignore=shutil.ignore_patterns("*.ipynb"))
        for module in target.glob("*.py"):  # each says where it comes from (fxcourse.stamps)
            origin = [f"{SOURCE.as_posix()}/{assignment}/{module.name}"]
            module.write_text(stamp_python(module.read_text(), origin, "make release"))
        notebook = clean(nbformat.read(released / f"{assignment}.ipynb", as_version=4))
        origin = [f"solutions/{assignment}/{assignment}.ipynb"]
        notebook = stamp_notebook(exercises.one_folder_deeper(notebook), origin, "make release")
        nbformat.write(notebook, target / f"{assignment}.ipynb")
        published.append(target / f"{assignment}.ipynb")
    return published


def collect(
    submissions: Path, course: Path = ROOT, lms: str | None = None, zone: str = "UTC"
) -> intake.Report:
    """Copy the submissions in a folder or .zip (nbgrader's <student>/<assignment>/ layout, or
    files an LMS named: see grader/intake/) into the course's submitted folder, each replacing
    an earlier copy. Prints what was collected and every file that was not, with the reason."""
    names, presets = exercises.assignments_of(course), exercises.possible_assignments(course)
    pattern = intake.file_name_pattern(course, lms, intake.lms_patterns(presets))
    report = intake.collect(Path(submissions), course / SUBMITTED, names, pattern, zone)
    print("\n".join(report.lines(str(submissions))), flush=True)
    return report


def collect_exchange(course: Path, assignments: Sequence[str]) -> int:
    """Collect from nbgrader's exchange; prints the report. Exit status: 0 all collected, 1 some
    files or folders refused, 2 nothing to collect."""
    root, course_id = class_exchange.settings(course, COURSE_ID)
    return class_exchange.collect_command(root, course_id, course / SUBMITTED, assignments)


def release_feedback(course: Path, assignments: Sequence[str]) -> int:
    """Release the feedback of `assignments` through the exchange to every student who can get it,
    naming each folder that cannot be released. Exit status: 0 all released, 1 some not, 2 none
    to release."""
    root, course_id = class_exchange.settings(course, COURSE_ID)
    pages, results = course / FEEDBACK, course / AUTOGRADED / ".safegrade"  # names ungraded
    return class_exchange.release_feedback_command(root / course_id, pages, assignments, results)


class UsageError(Exception):
    """A wrong name or an empty input: the message says what would be right."""


def check_assignments(names: Iterable[str], course: Path = ROOT) -> list[str]:
    """`names` (all assignments when empty), refusing one that is not an assignment of course."""
    names, known = list(names), exercises.assignments_of(course)
    if unknown := [name for name in names if name not in known]:
        hints = "".join(exercises.near_name(name, course) for name in unknown)
        raise UsageError(
            f"unknown assignment {', '.join(map(repr, unknown))}{hints}: "
            f"the assignments are {', '.join(known)}"
        )
    return names or list(known)


def submitted(course: Path = ROOT, assignments: Sequence[str] = ()) -> list[Path]:
    """The submitted notebooks of `assignments` (all when empty); UsageError when there are none."""
    chosen = check_assignments(assignments, course)
    found = (sorted((course / SUBMITTED).glob(f"*/{a}/*.ipynb")) for a in chosen)
    found = sorted(path for paths in found for path in paths)
    if not found:
        raise UsageError(
            f"nothing to grade: {course / SUBMITTED} holds no submission of "
            f"{', '.join(chosen)}; collect first: make collect (from the exchange) or "
            "make autograde SUBMISSIONS=FOLDER-OR-ZIP"
        )
    return found


def _clear(outputs: Iterable[Path]) -> None:
    """Remove the folders a command regenerates. nbgrader's --force removes them too, but warns
    about each ("Removing existing assignment"), which asks nothing of the instructor."""
    for output in outputs:
        shutil.rmtree(output, ignore_errors=True)


def feedback(
    course: Path = ROOT, students: Iterable[str] = (), assignments: Sequence[str] = ()
) -> int:
    """HTML feedback for every autograded submission (or only `students`' and `assignments`')
    in classdata/feedback; names those the last make autograde could not grade (none for them)."""
    selections = [[f"--student={student}"] for student in students] or [[]]  # one id per run
    chosen = set(students)
    chosen_assignments = assignments or exercises.assignments_of(course)
    for result in not_graded(course / AUTOGRADED / ".safegrade", chosen_assignments):
        if not chosen or result.student in chosen:
            note = f"feedback: none for {result.student}/{result.assignment}: {result.reason}"
            print(inert_text(note, LIMITS.reason_chars), file=sys.stderr)
    graded = [
        folder
        for folder in (course / AUTOGRADED).glob("[!.]*/*")
        if folder.is_dir()
        and (not chosen or folder.parent.name in chosen)
        and (not assignments or folder.name in assignments)
    ]
    if not graded:
        print(
            f"feedback: nothing{' of ' + ', '.join(assignments) if assignments else ''} "
            f"autograded yet in {course / AUTOGRADED}: run make autograde first",
            file=sys.stderr,
        )
        return 1
    _clear(course / FEEDBACK / folder.relative_to(course / AUTOGRADED) for folder in graded)
    return max(
        nbgrader(course, "generate_feedback", assignment, "--force", *selection)
        for assignment in assignments or ["*"]
        for selection in selections
    )


def export_sources(course: Path) -> grades_export.Where:
    """Where the export of the course at `course` reads."""
    (course / GRADEBOOK).parent.mkdir(parents=True, exist_ok=True)  # a course not used yet
    return grades_export.Where(
        gradebook_url=f"sqlite:///{course / GRADEBOOK}",
        course_id=COURSE_ID,
        assignments=tuple(exercises_of(course)),
        results=course / AUTOGRADED / ".safegrade",
        sources=course / SOURCE,
    )


def scores(course: Path = ROOT) -> dict[str, dict[str, float | None]]:
    """student id -> {assignment: score after any late penalty, None when not submitted}."""
    return grades_export.scores(export_sources(course))


def export(course: Path = ROOT, out: Path | None = None, assignments: Sequence[str] = ()) -> Path:
    """grades.csv and grades_by_test.csv of `assignments` (default: all; grades_export.write
    says what each cell means). UsageError for an unknown name, or when nothing has been
    graded."""
    chosen = list(dict.fromkeys(map(exercises.exercise_of, check_assignments(assignments, course))))
    where = export_sources(course)
    if not grades_export.anything_to_export(where, chosen):
        raise UsageError(
            f"nothing to export: {course / GRADEBOOK} holds no graded submission of "
            f"{', '.join(chosen)}; grade first: make collect, then make autograde "
            "(or make autograde SUBMISSIONS=FOLDER-OR-ZIP)"
        )
    return grades_export.write(where, out or course / EXPORT, chosen)


def assignment_name(name: str) -> str:
    """argparse's check of --assignment: a wrong name is refused with the near match."""
    try:
        return check_assignments([name])[0]
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# Two steps nbgrader both calls "release": make release is the formgrader's Generate.
RELEASED_IS_NOT_HANDED_OUT = (
    "Generated the student versions (the formgrader's Generate). Learners of a class get an "
    "exercise only once it is handed out through the exchange: the formgrader's Release button "
    "(it lists the exercise as 'draft' until then), or nbgrader release_assignment NAME."
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--course", type=Path, default=ROOT, help="course root (default: repo)")
    commands = parser.add_subparsers(dest="command", required=True)
    release_cmd = commands.add_parser("release", help="student versions and gradebook entries")
    release_cmd.add_argument("--no-publish", action="store_true", help=f"skip {STUDENT_VERSIONS}")
    command = commands.add_parser("collect")
    command.add_argument("submissions", type=Path, nargs="?")
    command.add_argument("--lms", choices=LMS_PATTERNS, help="file-name pattern of a download")
    command.add_argument("--timezone", default="UTC", help="zone of times in file names")
    # release: make autograde ASSIGNMENT=... refuses a wrong name before generating anything
    named = (release_cmd, command, *map(commands.add_parser, ("release-feedback", "feedback")))
    for command in named:
        help_text = "one exercise (default: all)"
        command.add_argument("--assignment", type=assignment_name, action="append", help=help_text)
    export_cmd = commands.add_parser("export")
    export_cmd.add_argument("assignments", nargs="*", help="exercises (default: all)")
    export_cmd.add_argument("--out", type=Path)
    commands.add_parser("submitted").add_argument("assignments", nargs="*")
    args = parser.parse_args(argv)
    course = args.course.resolve()
    # A path or a reason may hold any character; the terminal's encoding must not stop us.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")

    if args.command == "release":
        publish_to = None if args.no_publish else course / STUDENT_VERSIONS
        for path in release(course, publish_to):
            print(f"wrote {path}")
        print(RELEASED_IS_NOT_HANDED_OUT)
    elif args.command == "collect" and args.submissions:
        return collect_status(args, course)
    elif args.command == "collect":
        return collect_exchange(course, args.assignment or exercises.assignments_of(course))
    elif args.command == "release-feedback":
        return release_feedback(course, args.assignment or exercises.assignments_of(course))
    elif args.command == "feedback":
        return feedback(course, assignments=args.assignment or ())
    else:
        return refusing_usage_errors(args, course)
    return 0


def refusing_usage_errors(args: argparse.Namespace, course: Path) -> int:
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


def collect_status(args: argparse.Namespace, course: Path) -> int:
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
