"""The instructor's steps on a course (grader/course_grader.py is their command line): release the
student versions, collect submissions, feedback, and export grades. Each takes the `Course`
(grader/course.py) it works on; a folder stands for the course configured there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from grader import exercises, grades_export, intake
from grader.course import SETTINGS, Course
from grader.exercises import SOURCE
from grader.intake import class_exchange
from grader.safegrade.assignments import catalogs_of
from grader.safegrade.data import inert_text
from grader.safegrade.grading_limits import LIMITS
from grader.safegrade.result_files import not_graded

# nbgrader runs `alembic` by name when it creates a gradebook: the venv's bin must be on PATH even
# when this runs from a login shell that never activated the venv (a hub terminal).
_BIN = str(Path(sys.executable).parent)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join(filter(None, [_BIN, os.environ.get("PATH")]))


class UsageError(Exception):
    """A wrong name or an empty input: the message says what would be right."""


def copy_course(
    target: Path, assignments: Sequence[str] | None = None, origin: Course | None = None
) -> Path:
    """A course folder at `target` with the grading configuration of `origin` (default: the
    configured course of this code) and the sources of `assignments` (not its working folders):
    for tests, benchmarks and a class hub. Copying again over an earlier copy brings it up to
    date and keeps its working folders."""
    root = (origin or Course.configured()).root
    assignments = exercises.names(root) if assignments is None else assignments
    skip = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    for assignment in assignments:
        source, copy = root / SOURCE / assignment, target / SOURCE / assignment
        shutil.copytree(source, copy, ignore=skip, dirs_exist_ok=True)
    for package in ("safegrade", "intake"):  # the grader's layers below its own modules
        folder = Path("grader") / package
        shutil.copytree(root / folder, target / folder, ignore=skip, dirs_exist_ok=True)
    for path in (root / "grader").glob("*.py"):
        shutil.copy(path, target / "grader")
    for name in ("nbgrader_config.py", SETTINGS):
        shutil.copy(root / name, target)
    return target


def nbgrader(course: Course | Path, *args: str) -> int:
    """Run one nbgrader command in the course folder; returns its exit status."""
    command = [sys.executable, "-m", "nbgrader", *args]
    print("$ nbgrader", " ".join(args), flush=True)
    return subprocess.run(command, cwd=Course.of(course).root, check=False).returncode


def release(course: Course | Path, publish_to: Path | None = None) -> list[Path]:
    """generate_assignment for every exercise and its translations (gradebook entries,
    classdata/release/; exercises.py), then copy each exercise's released folder to
    publish_to/<assignment>/: the student version, stripped, and the files beside it (verify.py,
    the tests' checks). Returns the notebooks' copies. Translations go out by the exchange only."""
    course = Course.of(course)
    assignments, every = course.exercises, exercises.write_translations(course.root)
    _clear(course.release / a for a in every)
    # One process for all (each start costs seconds), naming the exercises ("*" would also try
    # each chapter of solutions/ and warn about every one). Before grading (no publish_to) its
    # log of every file it copies says nothing new.
    quiet = ["--log-level=30"] if publish_to is None else []  # 30: warnings and errors only
    print("$ nbgrader generate_assignment --force", *quiet, *every, flush=True)
    command = [sys.executable, "-m", "grader.exercises", "generate", *quiet, *every]
    if subprocess.run(command, cwd=course.root, check=False).returncode != 0:
        raise SystemExit("nbgrader generate_assignment failed")
    if publish_to is None:
        return []
    import nbformat

    from courseware.notebooks import clean
    from fxcourse.stamps import stamp_notebook, stamp_python

    _clear(publish_to / a for a in assignments)
    published = []
    for assignment in assignments:
        released, target = course.release / assignment, publish_to / assignment
        shutil.copytree(released, target, ignore=shutil.ignore_patterns("*.ipynb"))
        for module in target.glob("*.py"):  # each says where it comes from (fxcourse.stamps)
            origin = [f"{SOURCE.as_posix()}/{assignment}/{module.name}"]
            module.write_text(stamp_python(module.read_text(), origin, "make release"))
        notebook = clean(nbformat.read(released / f"{assignment}.ipynb", as_version=4), course.root)
        origin = [f"solutions/{assignment}/{assignment}.ipynb"]
        notebook = stamp_notebook(exercises.one_folder_deeper(notebook), origin, "make release")
        nbformat.write(notebook, target / f"{assignment}.ipynb")
        published.append(target / f"{assignment}.ipynb")
    return published


def collect(
    submissions: Path, course: Course | Path, lms: str | None = None, zone: str = "UTC"
) -> intake.Report:
    """Copy the submissions in a folder or .zip (nbgrader's <student>/<assignment>/ layout, or
    files an LMS named: see grader/intake/) into the course's submitted folder, each replacing
    an earlier copy. Prints what was collected and every file that was not, with the reason."""
    course = Course.of(course)
    names, presets = course.assignments, exercises.possible_assignments(course.root)
    pattern = intake.file_name_pattern(course.root, lms, intake.lms_patterns(presets))
    report = intake.collect(Path(submissions), course.submitted, names, pattern, zone)
    print("\n".join(report.lines(str(submissions))), flush=True)
    return report


def collect_exchange(course: Course | Path, assignments: Sequence[str]) -> int:
    """Collect from nbgrader's exchange; prints the report. Exit status: 0 all collected, 1 some
    files or folders refused, 2 nothing to collect."""
    course = Course.of(course)
    root, course_id = course.exchange, course.course_id  # as grader/nbgrader_config.py sets
    return class_exchange.collect_command(root, course_id, course.submitted, assignments)


def release_feedback(course: Course | Path, assignments: Sequence[str]) -> int:
    """Release the feedback of `assignments` through the exchange to every student who can get it,
    naming each folder that cannot be released. Exit status: 0 all released, 1 some not, 2 none
    to release."""
    course = Course.of(course)
    root, course_id = course.exchange, course.course_id  # as grader/nbgrader_config.py sets
    pages, results = course.feedback, course.results  # results: names the ungraded
    return class_exchange.release_feedback_command(root / course_id, pages, assignments, results)


def check_assignments(names: Iterable[str], course: Course | Path) -> list[str]:
    """`names` (all assignments when empty), refusing one that is not an assignment of course."""
    names, known = list(names), Course.of(course).assignments
    if unknown := [name for name in names if name not in known]:
        hints = "".join(exercises.near_name(name, Course.of(course).root) for name in unknown)
        raise UsageError(
            f"unknown assignment {', '.join(map(repr, unknown))}{hints}: "
            f"the assignments are {', '.join(known)}"
        )
    return names or list(known)


def submitted(course: Course | Path, assignments: Sequence[str] = ()) -> list[Path]:
    """The submitted notebooks of `assignments` (all when empty); UsageError when there are none."""
    course = Course.of(course)
    chosen = check_assignments(assignments, course)
    found = (sorted(course.submitted.glob(f"*/{a}/*.ipynb")) for a in chosen)
    found = sorted(path for paths in found for path in paths)
    if not found:
        raise UsageError(
            f"nothing to grade: {course.submitted} holds no submission of "
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
    course: Course | Path, students: Iterable[str] = (), assignments: Sequence[str] = ()
) -> int:
    """HTML feedback for every autograded submission (or only `students`' and `assignments`')
    in classdata/feedback; names those the last make autograde could not grade (none for them)."""
    course = Course.of(course)
    selections = [[f"--student={student}"] for student in students] or [[]]  # one id per run
    chosen = set(students)
    chosen_assignments = assignments or course.assignments
    for result in not_graded(course.results, chosen_assignments):
        if not chosen or result.student in chosen:
            note = f"feedback: none for {result.student}/{result.assignment}: {result.reason}"
            print(inert_text(note, LIMITS.reason_chars), file=sys.stderr)
    graded = [
        folder
        for folder in course.autograded.glob("[!.]*/*")
        if folder.is_dir()
        and (not chosen or folder.parent.name in chosen)
        and (not assignments or folder.name in assignments)
    ]
    if not graded:
        print(
            f"feedback: nothing{' of ' + ', '.join(assignments) if assignments else ''} "
            f"autograded yet in {course.autograded}: run make autograde first",
            file=sys.stderr,
        )
        return 1
    _clear(course.feedback / folder.relative_to(course.autograded) for folder in graded)
    return max(
        nbgrader(course, "generate_feedback", assignment, "--force", *selection)
        for assignment in assignments or ["*"]
        for selection in selections
    )


def export_sources(course: Course | Path) -> grades_export.Where:
    """Where the export of the course reads."""
    course = Course.of(course)
    course.gradebook.parent.mkdir(parents=True, exist_ok=True)  # a course not used yet
    return grades_export.Where(
        gradebook_url=course.gradebook_url,
        course_id=course.course_id,
        assignments=course.exercises,
        results=course.results,
        sources=course.source,
        catalogs=catalogs_of(course.root),
    )


def scores(course: Course | Path) -> dict[str, dict[str, float | None]]:
    """student id -> {assignment: score after any late penalty, None when not submitted}."""
    return grades_export.scores(export_sources(course))


def export(course: Course | Path, out: Path | None = None, assignments: Sequence[str] = ()) -> Path:
    """grades.csv and grades_by_test.csv of `assignments` (default: all; grades_export.write
    says what each cell means). UsageError for an unknown name, or when nothing has been
    graded."""
    course = Course.of(course)
    catalogs = catalogs_of(course.root)
    checked = check_assignments(assignments, course)
    chosen = list(dict.fromkeys(exercises.exercise_of(name, catalogs) for name in checked))
    where = export_sources(course)
    if not grades_export.anything_to_export(where, chosen):
        raise UsageError(
            f"nothing to export: {course.gradebook} holds no graded submission of "
            f"{', '.join(chosen)}; grade first: make collect, then make autograde "
            "(or make autograde SUBMISSIONS=FOLDER-OR-ZIP)"
        )
    return grades_export.write(where, out or course.exports / "grades.csv", chosen)
