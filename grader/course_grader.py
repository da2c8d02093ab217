"""The instructor's pipeline for the course's three nbgrader exercises (driven by grader/grader.mk).

    python grader/course_grader.py release [--no-publish]   student versions + gradebook entries
    python grader/course_grader.py collect SUBMISSIONS [--lms NAME] [--timezone TZ]
                                  a folder or .zip of submissions into classdata/submitted
                                  (intake.py)
    python grader/course_grader.py collect [--assignment NAME]
                                  the submissions in nbgrader's exchange, by the same rules
    python grader/course_grader.py release-feedback [--assignment NAME]
                                  feedback through the exchange to every student who can get it
    python grader/course_grader.py autograde [SUBMISSIONS]  collect (if given), then grade
    python grader/course_grader.py submitted [ASSIGNMENT]   fail unless something is there to grade
    python grader/course_grader.py feedback                 HTML feedback in classdata/feedback
    python grader/course_grader.py export [ASSIGNMENT ...] [--out CSV]
                                  grades.csv (a column per exercise) and grades_by_test.csv (a
                                  column per graded cell); fails when nothing has been graded

An unknown assignment name or an empty input is refused with exit status 2 (1 for "nothing to
grade or export yet") and a message naming the assignments.

Every command takes --course DIR (default: this repository); nbgrader runs with DIR as its working
folder, where it reads nbgrader_config.py. `autograde()` is the one grading step: a sandboxed grader
can replace it (or the AUTOGRADE variable in grader.mk) without touching the other steps.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader import class_exchange, intake
from grader.safegrade.data import spreadsheet_cell

# nbgrader runs `alembic` by name when it creates a gradebook: the venv's bin must be on PATH even
# when this script runs from a login shell that never activated the venv (a hub terminal).
_BIN = str(Path(sys.executable).parent)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join(filter(None, [_BIN, os.environ.get("PATH")]))

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ("ex1_sigmoid_to_tanh", "ex2_node_dump", "ex3_timing_interpreter")
EXERCISE_FOLDERS = "ex[0-9]_*"  # matches ASSIGNMENTS and no chapter (tests/test_grading.py)
COURSE_ID = "fx-course"
STUDENT_VERSIONS = Path("chapters/exercises")  # where learners find the released notebooks
SOURCE = Path("solutions")  # solutions/<assignment>/<assignment>.ipynb: nbgrader's source format
# The instructor's class data: nbgrader's working folders, the exchange, the gradebook and the
# grading secret (autograded/.safegrade_secret), in a git-ignored folder of the course's own,
# outside every package, so that no install of the code (and no sandbox) carries it along.
# FXCOURSE_CLASSDATA (make CLASSDATA=...) moves it: a path relative to the course, or absolute.
CLASSDATA = Path(os.environ.get("FXCOURSE_CLASSDATA", "classdata"))
RELEASE, SUBMITTED = CLASSDATA / "release", CLASSDATA / "submitted"
AUTOGRADED, FEEDBACK = CLASSDATA / "autograded", CLASSDATA / "feedback"
GRADEBOOK, EXPORT = CLASSDATA / "gradebook.db", CLASSDATA / "exports" / "grades.csv"
EXCHANGE, DOWNLOADED = CLASSDATA / "exchange", CLASSDATA / "downloaded"
LMS_PATTERNS = intake.lms_patterns(ASSIGNMENTS)  # file names of LMS downloads: LMS=<name>


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
    """generate_assignment for every exercise (gradebook entries, classdata/release/), then copy
    each released folder to publish_to/<assignment>/: the student version, stripped, and the
    files beside it (verify.py, the tests' checks). Returns the notebooks' copies."""
    _clear(course / RELEASE / a for a in ASSIGNMENTS)
    # One nbgrader process for all (each start costs seconds). Its pattern names the exercises'
    # folders only: "*" would also try each chapter of solutions/ and warn about every one.
    # Before grading (no publish_to) its log of every file it copies says nothing new.
    quiet = ["--log-level=30"] if publish_to is None else []  # 30: warnings and errors only
    if nbgrader(course, "generate_assignment", EXERCISE_FOLDERS, "--force", *quiet) != 0:
        raise SystemExit("nbgrader generate_assignment failed")
    if publish_to is None:
        return []
    import nbformat

    from fxcourse.notebooks import clean

    _clear(publish_to / a for a in ASSIGNMENTS)
    published = []
    for assignment in ASSIGNMENTS:
        released, target = course / RELEASE / assignment, publish_to / assignment
        shutil.copytree(released, target, ignore=shutil.ignore_patterns("*.ipynb"))
        notebook = clean(nbformat.read(released / f"{assignment}.ipynb", as_version=4))
        nbformat.write(one_folder_deeper(notebook), target / f"{assignment}.ipynb")
        published.append(target / f"{assignment}.ipynb")
    return published


def one_folder_deeper(notebook):
    """The notebook's relative links to the chapters (`../NN_….ipynb`, written for
    solutions/<assignment>/) as seen from chapters/exercises/<assignment>/, with nbgrader's
    checksums of the cells that changed made again (so `nbgrader validate` accepts them)."""
    from nbgrader.utils import compute_checksum

    for cell in notebook.cells:
        if cell.cell_type == "markdown" and "](../" in cell.source:
            cell.source = cell.source.replace("](../", "](../../")
            if "checksum" in cell.metadata.get("nbgrader", {}):
                cell.metadata.nbgrader["checksum"] = compute_checksum(cell)
    return notebook


def file_name_pattern(course: Path, lms: str | None) -> intake.FileNamePattern:
    """LMS_PATTERNS[lms], or else the course config's FileNameCollectorPlugin.named_regexp (the
    pattern `nbgrader zip_collect` reads too), applied by nbgrader's own plugin."""

    def load():
        from nbgrader.plugins import FileNameCollectorPlugin
        from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

        quiet = logging.getLogger("course_grader.collect")  # the report says what did not match
        quiet.setLevel(logging.ERROR)
        if lms:
            plugin = FileNameCollectorPlugin(named_regexp=LMS_PATTERNS[lms], log=quiet)
        else:
            try:
                config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
            except ConfigFileNotFound as error:
                raise intake.IntakeError(f"{error}: name a pattern with --lms") from error
            plugin = FileNameCollectorPlugin(config=config, log=quiet)
        regex = plugin.named_regexp
        try:
            groups = set(re.compile(regex).groupindex)
        except re.error as error:
            raise intake.IntakeError(f"file-name pattern {regex!r}: {error}") from error
        if not {"student_id", "file_id"} <= groups:
            raise intake.IntakeError(
                f"the file-name pattern {regex!r} needs (?P<student_id>...) and (?P<file_id>...)"
            )
        names = [name for name, preset in LMS_PATTERNS.items() if preset == regex]
        label = f"LMS={names[0]}" if names else f"{regex!r} (FileNameCollectorPlugin.named_regexp)"
        return plugin.collect, label

    return intake.FileNamePattern(load)


def collect(
    submissions: Path, course: Path = ROOT, lms: str | None = None, zone: str = "UTC"
) -> intake.Report:
    """Copy the submissions in a folder or .zip (nbgrader's <student>/<assignment>/ layout, or
    files an LMS named: see grader/intake.py) into the course's submitted folder, each replacing
    an earlier copy. Prints what was collected and every file that was not, with the reason."""
    pattern = file_name_pattern(course, lms)
    report = intake.collect(Path(submissions), course / SUBMITTED, ASSIGNMENTS, pattern, zone)
    print("\n".join(report.lines(str(submissions))), flush=True)
    return report


def exchange_settings(course: Path) -> tuple[Path, str]:
    """The exchange root and course id of the course's nbgrader configuration."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    return Path(config.Exchange.root), config.CourseDirectory.course_id or COURSE_ID


def collect_exchange(course: Path, assignments: Sequence[str]) -> int:
    """Collect from nbgrader's exchange (class_exchange.collect); prints the report. Exit status:
    0 all collected, 1 some files or folders refused, 2 nothing to collect."""
    root, course_id = exchange_settings(course)
    try:
        report = class_exchange.collect(root, course_id, course / SUBMITTED, assignments)
    except intake.IntakeError as error:
        print(f"collect: {error}", file=sys.stderr)
        return 2
    inbound = class_exchange.inbound_folder(root, course_id)
    if not report.collected and not report.refused:
        names = ", ".join(assignments)
        print(f"collect: no submission of {names} in {inbound} yet", file=sys.stderr)
        return 2
    print("\n".join(report.lines(str(inbound))), flush=True)
    return 1 if report.refused or not report.collected else 0


def release_feedback(course: Path, assignments: Sequence[str]) -> int:
    """Release the feedback of `assignments` through the exchange to every student who can get it,
    naming each folder that cannot be released. Exit status: 0 all released, 1 some not, 2 none
    to release."""
    root, course_id = exchange_settings(course)
    outbound = root / course_id / "feedback"
    folders = {a: list((course / FEEDBACK).glob(f"*/{a}")) for a in assignments}
    if not any(folders.values()):
        print(
            f"release-feedback: no feedback of {', '.join(assignments)} in {course / FEEDBACK}: "
            "run make feedback first",
            file=sys.stderr,
        )
        return 2
    not_released = 0
    for assignment, found in folders.items():
        result = class_exchange.release_feedback(found, assignment, outbound)
        print(f"{assignment}:", *result.lines(), sep="\n  ", flush=True)
        not_released += len(result.not_released)
    return 1 if not_released else 0


class UsageError(Exception):
    """A wrong name or an empty input: the message says what would be right."""


def check_assignments(names: Iterable[str]) -> list[str]:
    """`names` (all exercises when empty), refusing a name that is not one of ASSIGNMENTS."""
    names = list(names)
    if unknown := [name for name in names if name not in ASSIGNMENTS]:
        hints = "".join(intake.near_match(name, ASSIGNMENTS) for name in unknown)
        raise UsageError(
            f"unknown assignment {', '.join(map(repr, unknown))}{hints}: "
            f"the assignments are {', '.join(ASSIGNMENTS)}"
        )
    return names or list(ASSIGNMENTS)


def submitted(course: Path = ROOT, assignments: Sequence[str] = ()) -> list[Path]:
    """The submitted notebooks of `assignments` (all when empty); UsageError when there are none."""
    chosen = check_assignments(assignments)
    found = sorted(
        path
        for assignment in chosen
        for path in (course / SUBMITTED).glob(f"*/{assignment}/*.ipynb")
    )
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


def autograde(course: Path = ROOT, extra_args: Sequence[str] = ()) -> int:
    """Grade every submitted notebook of every exercise in one `nbgrader autograde` batch. A
    submission that crashes its kernel or loops is graded, not fatal to the batch. Returns the exit
    status: non-zero when nbgrader could not grade some submission (its log says which), or when
    nothing was submitted."""
    try:
        submitted(course)
    except UsageError as error:
        print(f"autograde: {error}", file=sys.stderr)
        return 1
    return nbgrader(course, "autograde", "*", "--force", *extra_args)


def feedback(
    course: Path = ROOT, students: Iterable[str] = (), assignments: Sequence[str] = ()
) -> int:
    """HTML feedback for every autograded submission (or only `students`' and `assignments`')
    in classdata/feedback."""
    selections = [[f"--student={student}"] for student in students] or [[]]  # one id per run
    chosen = set(students)
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


@dataclass(frozen=True)
class Result:
    """One student's graded submission of one exercise."""

    score: float  # after the late penalty
    late_penalty: float
    cells: dict[str, float | None]  # grade cell id -> points


def results(course: Path = ROOT) -> tuple[dict[str, dict[str, Result | None]], dict[str, list]]:
    """(student id -> {assignment: Result, or None when nothing was submitted}, for every student
    the gradebook knows; assignment -> its graded cell ids, in the source notebook's order)."""
    from nbgrader.api import Gradebook, MissingEntry

    table, cells = {}, {}
    (course / GRADEBOOK).parent.mkdir(parents=True, exist_ok=True)  # a course not used yet
    with Gradebook(f"sqlite:///{course / GRADEBOOK}", COURSE_ID) as gradebook:
        for assignment in ASSIGNMENTS:
            try:
                notebooks = gradebook.find_assignment(assignment).notebooks
            except MissingEntry:
                notebooks = []
            names = [cell.name for notebook in notebooks for cell in notebook.grade_cells]
            cells[assignment] = sorted(names, key=source_order(course, assignment))
        for student in gradebook.students:
            row = table[student.id] = {}
            for assignment in ASSIGNMENTS:
                try:
                    submission = gradebook.find_submission(assignment, student.id)
                except MissingEntry:
                    row[assignment] = None
                    continue
                penalty = submission.late_submission_penalty or 0.0
                points = {g.name: g.score for nb in submission.notebooks for g in nb.grades}
                row[assignment] = Result(max(0.0, submission.score - penalty), penalty, points)
    return table, cells


def source_order(course: Path, assignment: str):
    """A sort key: graded cells in the order of the source notebook, unknown ones after."""
    import nbformat
    from nbgrader.utils import is_grade

    path = course / SOURCE / assignment / f"{assignment}.ipynb"
    cells = nbformat.read(path, as_version=4).cells if path.exists() else []
    order = [cell.metadata.nbgrader["grade_id"] for cell in cells if is_grade(cell)]
    return lambda name: (order.index(name), "") if name in order else (len(order), name)


def scores(course: Path = ROOT) -> dict[str, dict[str, float | None]]:
    """student id -> {assignment: score after any late penalty, None when not submitted}."""
    table, _ = results(course)
    return {
        student: {a: None if result is None else result.score for a, result in row.items()}
        for student, row in table.items()
    }


def _points(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def by_test_path(grades_csv: Path) -> Path:
    return grades_csv.with_name(f"{grades_csv.stem}_by_test{grades_csv.suffix}")


def export(course: Path = ROOT, out: Path | None = None, assignments: Sequence[str] = ()) -> Path:
    """Write out (grades.csv): student_id, one column per exercise of `assignments` (default:
    all; after any late penalty), total; and beside it grades_by_test.csv: one column per graded
    cell, then the exercise's late penalty. An empty cell means nothing was submitted; 0 means
    submitted and scored 0; "could not grade" / "grader failed" an upload the last make
    autograde could not grade (see the reason it printed). No cell can start a spreadsheet
    formula. UsageError for an unknown name, or when nothing has been graded."""
    chosen = check_assignments(assignments)
    table, cells = results(course)
    failed = ungraded(course, table)
    if not failed and not any(row[a] is not None for row in table.values() for a in chosen):
        raise UsageError(
            f"nothing to export: {course / GRADEBOOK} holds no graded submission of "
            f"{', '.join(chosen)}; grade first: make collect, then make autograde "
            "(or make autograde SUBMISSIONS=FOLDER-OR-ZIP)"
        )
    out = out or course / EXPORT
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as handle, by_test_path(out).open("w", newline="") as tests:
        grades, per_test = csv.writer(handle), csv.writer(tests)
        write_row(grades, ["student_id", *chosen, "total"])
        columns = [(a, name) for a in chosen for name in [*cells[a], "late_penalty"]]
        write_row(per_test, ["student_id", *(f"{a}:{name}" for a, name in columns)])
        for student, row in sorted(table.items()):
            points = [None if row[a] is None else row[a].score for a in chosen]
            done = [p for p in points if p is not None]
            total = _points(sum(done)) if done else ""
            pairs = zip(chosen, points, strict=True)
            write_row(
                grades,
                [student, *(failed.get((student, a)) or _points(p) for a, p in pairs), total],
            )
            by_test = [
                failed.get((student, a)) or _points(_cell(row[a], name)) for a, name in columns
            ]
            write_row(per_test, [student, *by_test])
    return out


def write_row(writer, cells: list[str]) -> None:
    writer.writerow([spreadsheet_cell(cell) for cell in cells])


UNGRADED = {"error": "could not grade", "grader-error": "grader failed"}


def ungraded(course: Path, table: dict) -> dict[tuple[str, str], str]:
    """(student, assignment) -> "could not grade" or "grader failed", for each upload that
    make autograde's last run could not grade (its result file says so) and that the gradebook
    holds no grade of; such students get a row in `table`."""
    found = {}
    for assignment in ASSIGNMENTS:
        folder = course / AUTOGRADED / ".safegrade" / assignment
        for path in sorted(folder.glob("*.json")):
            try:
                status = json.loads(path.read_text()).get("status")
            except (OSError, ValueError, AttributeError):
                continue
            row = table.setdefault(path.stem, dict.fromkeys(ASSIGNMENTS))
            if status in UNGRADED and row[assignment] is None:
                found[(path.stem, assignment)] = UNGRADED[status]
    return found


def _cell(result: Result | None, name: str) -> float | None:
    if result is None:
        return None
    return result.late_penalty if name == "late_penalty" else result.cells.get(name)


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
    for name in ("collect", "autograde"):
        command = commands.add_parser(name)
        command.add_argument("submissions", type=Path, nargs="?")
        command.add_argument("--lms", choices=LMS_PATTERNS, help="file-name pattern of a download")
        command.add_argument("--timezone", default="UTC", help="zone of times in file names")
    feedback_cmds = ("release-feedback", "feedback")
    for command in (commands.choices["collect"], *map(commands.add_parser, feedback_cmds)):
        command.add_argument(
            "--assignment",
            type=assignment_name,
            action="append",
            help="one exercise (default: all)",
        )
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
    elif args.command in ("collect", "autograde") and args.submissions:
        status = collect_status(args, course)
        if args.command == "collect" or status >= 2:
            return status
        return autograde(course) or status
    elif args.command == "collect":
        return collect_exchange(course, args.assignment or ASSIGNMENTS)
    elif args.command == "release-feedback":
        return release_feedback(course, args.assignment or ASSIGNMENTS)
    elif args.command == "autograde":
        return autograde(course)
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
