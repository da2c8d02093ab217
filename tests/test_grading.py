"""The graded exercises through the instructor's pipeline, for real, on temporary copies of
the course (the repository's grader/ folders are never touched).

One copy is released and graded as `make autograde` grades (grader/safegrade: the sandbox, the
probes and the checks): the reference answers, the untouched student versions, the realistic
answers of tests/submissions/ and the attacks of tests/hostile/attacks/ and
tests/submissions/forgeries/, each with the score its docstring predicts. Three more copies, one
per exercise, grade the realistic answers with plain nbgrader (each test cell's hidden part runs
the same probe and check in the kernel): both ways must give every cell the same score (marked
end_to_end: `make test-end-to-end` runs it, `make test` does not). Then export, feedback,
release_feedback and the formgrader's Autograde call.
"""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from released_course import copy_of
from submissions.build import (
    HERE,
    Snippet,
    reference_solutions,
    snippets,
    submission,
    write_submission,
)

from courseware.notebooks import problems
from grader import exercises, instructor
from grader.course import STUDENT_VERSIONS, Course
from grader.report_model import course_tryits

ASSIGNMENTS = Course.configured().exercises  # this repository's

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "grading"  # git-ignored: logs of grading runs that failed

pytestmark = pytest.mark.xdist_group("grading")
# The one-worker batch grades a course of its own: its tests may run beside the others (xdist
# puts a test with two group marks in a group named after both, "grading_grading-one-worker").
ONE_WORKER_GROUP = pytest.mark.xdist_group("grading-one-worker")
# Plain nbgrader grading the realistic answers again, to compare its scores with the sandbox's:
# `make test-end-to-end` runs it (CI too), `make test` leaves it out.
PLAIN_NBGRADER = pytest.mark.end_to_end
REALISTIC = snippets()
# Attacks and forgeries: plain nbgrader protects nothing, so they are graded sandboxed only.
ATTACKS = snippets(ROOT / "tests" / "hostile" / "attacks") + snippets(HERE / "forgeries")
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
# One realistic answer loops forever: each path waits this out once for it
# (--GradingLimits.cell_timeout).
CELL_TIMEOUT = 20
# Except in each exercise's first cell (grade id "setup"), where a plain kernel imports torch from
# cold (up to 45 s seen on two loaded cores; the sandbox has imported it before any cell runs).
SETUP_TIMEOUT = 150
PLAIN_TIMEOUTS = f"""

def _cell_timeout(cell):  # tests/test_grading.py: the setup cell imports torch from cold
    setup = cell.metadata.get("nbgrader", {{}}).get("grade_id") == "setup"
    return {SETUP_TIMEOUT} if setup else {CELL_TIMEOUT}


c.SandboxExecute.timeout_func = _cell_timeout
"""


def source_notebook(course: Path, assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(course / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)


@pytest.fixture(scope="module")
def released(released_course) -> Path:
    """The course released, its student versions in published/ (shared: never changed)."""
    return released_course


EVIL_PAGE = "<script>PWNED()</script><p>the learner's own page</p>"


def write_submissions(
    course: Path, folder: Path, answers: list[Snippet], assignments, untouched: bool = True
) -> None:
    """The reference answer, the untouched student version (unless not `untouched`) and
    `answers`, for each exercise."""
    for assignment in assignments:
        student = nbformat.read(
            Course.configured(course).release / assignment / f"{assignment}.ipynb", 4
        )
        reference = reference_solutions(source_notebook(course, assignment))
        write_submission(
            folder,
            "reference",
            assignment,
            submission(student, reference, Snippet("", assignment, 10, {})),
        )
        # a file of the learner's own beside the notebook (nbgrader copies it to the feedback)
        (folder / "reference" / assignment / "evil.html").write_text(EVIL_PAGE)
        if untouched:
            write_submission(folder, "untouched", assignment, student)
        for snippet in (s for s in answers if s.assignment == assignment):
            write_submission(
                folder, snippet.name, assignment, submission(student, reference, snippet)
            )


def grade(course: Path, how: str) -> subprocess.CompletedProcess:
    """how: "sandboxed" (what `make autograde` runs), or "plain:<assignment>" (with the
    course's configuration and PLAIN_TIMEOUTS)."""
    timeout = f"--GradingLimits.cell_timeout={CELL_TIMEOUT}"
    if how == "sandboxed":
        command = [sys.executable, "-m", "grader.safegrade", "autograde", timeout]
    else:
        with (course / "nbgrader_config.py").open("a") as config:
            config.write(PLAIN_TIMEOUTS)
        command = [sys.executable, "-m", "nbgrader", "autograde", how.split(":")[1], "--force"]
        command += [timeout, "--SandboxExecute.unsandboxed=True"]
    return subprocess.run(command, cwd=course, capture_output=True, text=True, timeout=1500)


def graded_copy(released: Path, tmp_path_factory, how: str, answers, assignments) -> Path:
    """A copy of the released course holding `answers` (with the reference answer and, unless
    graded plain, the untouched starter) of `assignments`, collected, not yet graded."""
    course = tmp_path_factory.mktemp(how.replace(":", "_"))
    copy_of(released, course)
    submitted = tmp_path_factory.mktemp("uploads")
    write_submissions(course, submitted, answers, assignments, not how.startswith("plain:"))
    instructor.collect(submitted, course)
    return course


def graded_ways(courses: dict[str, Path]) -> dict[str, Path]:
    """Grade each course its way (side by side), log each run, fail on any that failed."""
    with ThreadPoolExecutor(len(courses)) as pool:
        runs = dict(zip(courses, pool.map(grade, courses.values(), courses), strict=True))
    for how, run in runs.items():
        print(f"--- {how}\n{run.stdout[-4000:]}\n{run.stderr[-2000:]}")
        if run.returncode != 0:  # the whole log, a kernel's own stderr too (pytest's tmp goes)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / f"{how.replace(':', '_')}.log").write_text(run.stdout + run.stderr)
        assert run.returncode == 0, f"{how}: {tracebacks(run.stderr)}{run.stderr[-3000:]}"
    return courses


@pytest.fixture(scope="module")
def graded(released: Path, tmp_path_factory) -> dict[str, Path]:
    """{"sandboxed": a copy of the released course} that graded the realistic answers, the
    attacks, the references and the untouched starters as `make autograde` grades."""
    course = graded_copy(released, tmp_path_factory, "sandboxed", REALISTIC + ATTACKS, ASSIGNMENTS)
    return graded_ways({"sandboxed": course})


@pytest.fixture(scope="module")
def plain_graded(released: Path, tmp_path_factory) -> dict[str, Path]:
    """{"plain:<assignment>": a copy of the released course} where plain nbgrader graded that
    exercise's reference and realistic answers, one copy per exercise (its kernels run one at a
    time; side by side, the endless loop's timeout is waited out while the others grade)."""
    courses = {}
    for assignment in ASSIGNMENTS:
        how, answers = f"plain:{assignment}", [s for s in REALISTIC if s.assignment == assignment]
        courses[how] = graded_copy(released, tmp_path_factory, how, answers, [assignment])
    return graded_ways(courses)


def tracebacks(log: str) -> str:
    """nbgrader's log of each submission it failed on, with its traceback: logged where that
    submission was graded, often far above the end of a batch's log."""
    failed = r"^[^\n]*There was an error processing assignment: .*?(?=^\[\w+ \| INFO\]|\Z)"
    blocks = re.findall(failed, log, re.MULTILINE | re.DOTALL)
    return "".join(block[-6000:] for block in blocks) + "\n...\n" if blocks else ""


def cell_scores(course: Path) -> dict[tuple[str, str, str], float | None]:
    """(student, assignment, grade cell) -> the points nbgrader recorded."""
    with sqlite3.connect(Course.configured(course).gradebook) as db:
        rows = db.execute(
            "select s.student_id, a.name, c.name, g.auto_score from grade g "
            "join base_cell c on g.cell_id = c.id "
            "join submitted_notebook n on g.notebook_id = n.id "
            "join submitted_assignment s on n.assignment_id = s.id "
            "join assignment a on s.assignment_id = a.id"
        ).fetchall()
    return {row[:3]: row[3] for row in rows}


def reason(course: Path, student: str, assignment: str) -> str:
    path = Course.configured(course).results / assignment / f"{student}.json"
    return json.loads(path.read_text())["reason"]


@pytest.fixture(scope="module")
def sandboxed_scores(graded) -> dict[str, dict[str, float | None]]:
    """instructor.scores of the sandboxed course (what make export reads), read once for the
    tests that only read it: each read opens the gradebook (about a second of CPU, 7-10 s on
    a loaded machine, for each of some forty tests)."""
    return instructor.scores(graded["sandboxed"])


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_reference_scores_full_marks_and_the_starter_zero(graded, sandboxed_scores, assignment):
    course, got = graded["sandboxed"], sandboxed_scores
    assert got["reference"][assignment] == 10, reason(course, "reference", assignment)
    assert got["untouched"][assignment] == 0, reason(course, "untouched", assignment)
    assert "NotImplementedError" in reason(course, "untouched", assignment)


def reference_errors(course: Path, assignment: str) -> list[tuple[str, str]]:
    """(cell's start, error) for each error output of the reference's autograded notebook."""
    path = Course.configured(course).autograded / "reference" / assignment / f"{assignment}.ipynb"
    return [
        (cell.source[:60], output.get("evalue"))
        for cell in nbformat.read(path, as_version=4).cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]


def test_the_reference_runs_every_cell_cleanly(graded):
    """Every cell of the reference, the ones that import verify.py from beside the notebook
    included, runs without an error: in the sandbox (the submission's folder on sys.path) as in
    plain nbgrader's kernel (the next test)."""
    for assignment in ASSIGNMENTS:
        errors = reference_errors(graded["sandboxed"], assignment)
        assert not errors, ("sandboxed", assignment, errors)


@PLAIN_NBGRADER
def test_the_reference_runs_every_cell_cleanly_in_plain_nbgrader(plain_graded):
    for assignment in ASSIGNMENTS:
        errors = reference_errors(plain_graded[f"plain:{assignment}"], assignment)
        assert not errors, ("plain", assignment, errors)


def test_every_snippets_cells_import_what_they_use(tmp_path):
    """A snippet's imports above its first marker are for linting only; a name its cells use
    and neither they nor the exercise's notebook import would make the answer a NameError
    (an attack that fails that way scores its 0 without trying anything)."""
    for snippet in REALISTIC + ATTACKS:
        source = source_notebook(ROOT, snippet.assignment)
        answered = submission(source, reference_solutions(source), snippet)
        nbformat.write(answered, tmp_path / f"{snippet.name}.ipynb")
    command = [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache"]
    found = subprocess.run([*command, "--select", "F821", tmp_path], capture_output=True, text=True)
    assert found.returncode == 0, found.stdout[-3000:]


@pytest.mark.parametrize("snippet", REALISTIC + ATTACKS, ids=lambda s: s.name)
def test_every_answer_scores_what_its_docstring_predicts(graded, sandboxed_scores, snippet):
    course = graded["sandboxed"]
    score = sandboxed_scores[snippet.name][snippet.assignment]
    assert score == snippet.expected, reason(course, snippet.name, snippet.assignment)


def test_a_test_is_not_run_only_when_the_submission_never_reached_it(graded):
    """Each test's status comes from the grading process's record, never from its message: the
    kernel that dies in summary() leaves test_summary not run (its cell has no record); an error
    whose message copies the grader's own "not run: ..." is a failure, in the result file the
    export and the report read and in the report's messages."""
    from grader import report
    from grader.safegrade.result_files import FAILED, NOT_RUN, PASSED, recorded

    course, assignment = Course.configured(graded["sandboxed"]), "ex3_timing_interpreter"
    results = course.results
    forged = recorded(results, "ex3_forges_not_run", assignment)
    found = {test.name: (test.status, test.message) for test in forged.tests}
    assert found["test_summary"][0] == FAILED, found
    assert found["test_summary"][1].startswith("TimeoutError: not run: the submission used up")
    assert [status for status, _ in found.values()] == [PASSED, PASSED, PASSED, FAILED]
    died = recorded(results, "ex3_kernel_dies_in_summary", assignment).tests
    assert [(t.name, t.status) for t in died][-1] == ("test_summary", NOT_RUN)
    exercise = next(e for e in report.read_class(course) if e.name == assignment)
    row = next(s for s in exercise.submissions if s.student == "ex3_forges_not_run")
    assert row.messages == {"test_summary": found["test_summary"][1]}


@PLAIN_NBGRADER
def test_plain_nbgrader_gives_every_cell_the_same_score(graded, plain_graded):
    sandboxed, plain = cell_scores(graded["sandboxed"]), {}
    for assignment in ASSIGNMENTS:
        plain |= cell_scores(plain_graded[f"plain:{assignment}"])
    assert len(plain) >= 5 * len(REALISTIC), "plain nbgrader graded too little"
    differ = {
        key: (sandboxed.get(key), score)
        for key, score in plain.items()
        if sandboxed.get(key) != score
    }
    assert not differ, f"(sandboxed, plain) scores differ: {differ}"


def one_worker_batch(released: Path, folder: Path, uploads: list[tuple[str, Snippet]]) -> dict:
    """Grade (student, answer) uploads, in the order given, with ONE worker in one batch:
    student -> {assignment: score}, and the course."""
    course = folder / "course"
    copy_of(released, course)
    for student, snippet in uploads:
        assignment = snippet.assignment
        starter = nbformat.read(
            Course.configured(course).release / assignment / f"{assignment}.ipynb", 4
        )
        reference = reference_solutions(source_notebook(course, assignment))
        nb = submission(starter, reference, snippet)
        write_submission(folder / "uploads", student, assignment, nb)
    instructor.collect(folder / "uploads", course)
    command = [sys.executable, "-m", "grader.safegrade", "autograde", "--workers=1"]
    run = subprocess.run(command, cwd=course, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    print(run.stdout[-3000:])
    return {"scores": instructor.scores(course), "course": course}


def honest(assignment: str) -> Snippet:
    return Snippet("", assignment, 10, {})


@pytest.fixture(scope="module")
def one_worker(released, tmp_path_factory) -> dict:
    """ONE worker grades, in one batch in student order (a_ first): an exercise 1 answer that
    puts a module path into GraphModule's class, an exercise 2 answer that holds every lock and
    semaphore it can reach (tqdm's, which torch.fx's Interpreter takes, among them) and writes
    into every shared page it has, then honest classmates' exercise 1 (b_, c_honest) and
    exercise 3 (b_, c_, d_classmate), whose Interpreter takes that lock."""
    hostile = next(s for s in ATTACKS if s.name == "ex1_module_path_into_graphmodule")
    locker = next(s for s in ATTACKS if s.name == "ex2_holds_every_lock")
    uploads = [("a_hostile", hostile), ("a_locker", locker)]
    uploads += [(f"{name}_honest", honest("ex1_sigmoid_to_tanh")) for name in "bc"]
    uploads += [(f"{name}_classmate", honest("ex3_timing_interpreter")) for name in "bcd"]
    return one_worker_batch(released, tmp_path_factory.mktemp("one_worker"), uploads)


@ONE_WORKER_GROUP
def test_honest_classmates_after_a_hostile_description_keep_full_marks(one_worker):
    """The hostile graph is refused in its own check process and changes nothing for the next
    submissions."""
    assignment, scores = "ex1_sigmoid_to_tanh", one_worker["scores"]
    got = {name: row.get(assignment) for name, row in scores.items()}
    got = {name: score for name, score in got.items() if score is not None}
    assert got == {"a_hostile": 0, "b_honest": 10, "c_honest": 10}
    assert "DataError" in reason(one_worker["course"], "a_hostile", assignment)


@ONE_WORKER_GROUP
def test_classmates_after_one_holding_every_lock_keep_full_marks(one_worker):
    """Nothing of the locker's process reaches the next ones: everyone keeps full marks."""
    names = ["a_locker", "b_classmate", "c_classmate", "d_classmate"]
    rows = {name: one_worker["scores"].get(name, {}) for name in names}
    got = {name: [v for v in row.values() if v is not None] for name, row in rows.items()}
    assert got == dict.fromkeys(names, [10])


def test_attacks_never_see_the_hidden_checks(graded):
    course, student = graded["sandboxed"], "ex1_reads_the_hidden_checks"
    folder = Course.configured(course).autograded / student / "ex1_sigmoid_to_tanh"
    nb = nbformat.read(folder / "ex1_sigmoid_to_tanh.ipynb", as_version=4)
    printed = " ".join(str(output) for cell in nb.cells for output in cell.get("outputs", []))
    assert "FOUND" not in printed, printed[:2000]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_export_has_one_column_per_exercise(graded, assignment, tmp_path):
    course = graded["sandboxed"]
    with instructor.export(course, tmp_path / "grades.csv").open() as handle:
        rows = list(csv.reader(handle))
    columns = [*ASSIGNMENTS, "total"]
    assert rows[0] == ["student_id", *columns]
    by_student = {}
    for student, *values in rows[1:]:  # an empty cell: nothing submitted
        points = [float(value) if value else None for value in values]
        by_student[student] = dict(zip(columns, points, strict=True))
    assert list(by_student) == sorted(by_student), "rows sorted by student id"
    assert by_student["reference"] == {a: 10.0 for a in ASSIGNMENTS} | {"total": 30.0}
    for snippet in (s for s in REALISTIC if s.assignment == assignment):
        row = by_student[snippet.name]
        assert row[assignment] == snippet.expected, (snippet.name, row)
        others = [row[a] for a in ASSIGNMENTS if a != snippet.assignment]
        assert others == [None, None], f"{snippet.name} submitted nothing else: {row}"


def feedback_text(course: Path, student: str, assignment: str) -> str:
    page = Course.configured(course).feedback / student / assignment / f"{assignment}.html"
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))  # what a reader sees


# The learners whose feedback pages the tests below and the report read.
FEEDBACK_FOR = ("ex1_only_torch_sigmoid", "ex1_quotes_hidden_markers", "reference", "untouched")


@pytest.fixture(scope="module")
def with_feedback(graded) -> Path:
    """The sandboxed course after `make feedback` for FEEDBACK_FOR, run once for every test
    that reads those pages (each process starts nbgrader and exports every page anew)."""
    course = graded["sandboxed"]
    assert instructor.feedback(course, FEEDBACK_FOR) == 0
    return course


def test_feedback_shows_messages_but_no_hidden_test_or_check(with_feedback):
    course = with_feedback
    text = feedback_text(course, "ex1_only_torch_sigmoid", "ex1_sigmoid_to_tanh")
    assert "x.sigmoid(): the rewritten graph still computes a sigmoid" in text
    assert "torch.special.expit: the rewritten graph still computes a sigmoid" in text
    for assignment in ASSIGNMENTS:
        visible = "\n".join(cell.source for cell in source_notebook(course, assignment).cells)
        checks = (course / "solutions" / assignment / "checks.py").read_text().split("\n")
        secret = {line.strip() for line in checks if len(line.strip()) > 30}
        secret = {line for line in secret if line not in visible and not line.startswith("#")}
        for student in ("reference", "untouched"):
            shown = {
                line.strip() for line in feedback_text(course, student, assignment).split("\n")
            }
            page = " ".join(shown)
            assert not secret & shown and "grader.safegrade" not in page, (student, assignment)
            assert not any(marker in page for marker in MARKERS)


def test_feedback_keeps_a_learners_quoted_marker(with_feedback):
    assert "the grader keeps a" in feedback_text(
        with_feedback, "ex1_quotes_hidden_markers", "ex1_sigmoid_to_tanh"
    )


def test_feedback_holds_only_the_pages_made_from_notebooks(with_feedback):
    """The reference submissions came with an evil.html of their own, which nbgrader copies into
    the feedback folder: after make feedback none is left there to hand out uncleaned."""
    course = with_feedback
    autograded = Course.configured(course).autograded / "reference"
    assert (autograded / ASSIGNMENTS[0] / "evil.html").read_text() == EVIL_PAGE
    for assignment in ASSIGNMENTS:
        folder = Course.configured(course).feedback / "reference" / assignment
        names = {path.name for path in folder.iterdir()}
        assert f"{assignment}.html" in names, names
        assert names <= {f"{assignment}.html", "timestamp.txt", "submission_secret.txt"}, names
        assert "PWNED" not in (folder / f"{assignment}.html").read_text()


@pytest.mark.end_to_end
def test_instructor_commands_run_again_print_no_warning(graded, tmp_path, capfd):
    """Release and feedback run again, as after a fix to an exercise, in a course whose solutions/
    holds a chapter notebook too (as the repository's does): nbgrader warned once per chapter that
    it is no assignment folder, and once per folder its --force replaced."""
    course = shutil.copytree(graded["sandboxed"], tmp_path / "course")
    shutil.copy(ROOT / "solutions" / "01_symbolic_tracing.ipynb", course / "solutions")
    capfd.readouterr()
    instructor.release(course)
    assert instructor.feedback(course, ["reference"]) == 0
    assert instructor.feedback(course, ["reference"]) == 0
    printed = capfd.readouterr()
    warnings = [
        line
        for line in (printed.out + printed.err).splitlines()
        if re.search(r"warn|error", line, re.IGNORECASE)
    ]
    assert not warnings, "\n".join(warnings)
    shutil.rmtree(Course.configured(course).feedback)  # make feedback ASSIGNMENT=<one exercise>
    assert instructor.feedback(course, ["reference"], [ASSIGNMENTS[1]]) == 0
    made = [path.name for path in (Course.configured(course).feedback / "reference").iterdir()]
    assert made == [ASSIGNMENTS[1]]


def test_release_feedback_through_the_exchange(with_feedback):
    course = with_feedback
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbgrader",
            "release_feedback",
            "ex1_sigmoid_to_tanh",
            "--student=reference",
        ],
        cwd=course,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert list(Course.configured(course).exchange.rglob("*.html"))


def test_the_formgraders_autograde_button_grades_in_the_sandbox(graded):
    """The button's call (NbGraderAPI.autograde) on an attack that plain nbgrader would reward."""
    course, student = graded["sandboxed"], "ex1_patches_torch"
    button = (
        "from nbgrader.apps.api import NbGraderAPI\nfrom nbgrader.apps.baseapp import NbGrader\n"
        "app = NbGrader()\napp.initialize([])\napp.load_config_file()\n"
        "api = NbGraderAPI(app.coursedir, parent=app)\n"
        f"print(api.autograde('ex1_sigmoid_to_tanh', {student!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", button], cwd=course, capture_output=True, text=True
    )
    assert "'success': True" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    assert instructor.scores(course)[student]["ex1_sigmoid_to_tanh"] == 0


def test_probes_and_checks_are_never_released(released):
    """Only the notebook and, where the exercise has one, verify.py (the tests' checks, which
    learners read and the test cells import) reach the learners."""
    for assignment in ASSIGNMENTS:
        files = {p.name for p in (Course.configured(released).release / assignment).iterdir()}
        beside = {"verify.py"} & {p.name for p in (ROOT / "solutions" / assignment).iterdir()}
        assert files == {f"{assignment}.ipynb"} | beside, files


def test_student_versions_are_current(released: Path):
    """chapters/exercises holds what `make release` generates now from solutions/: a folder per
    exercise, its notebook and the files beside it."""
    for assignment in ASSIGNMENTS:
        fresh_folder = released / "published" / assignment
        committed = ROOT / STUDENT_VERSIONS / assignment
        names = sorted(p.name for p in fresh_folder.iterdir())
        kept = [p.name for p in committed.iterdir() if p.name != "__pycache__"]  # verify's, run
        assert sorted(kept) == names, f"{committed}: run `make release`"
        for name in names:
            fresh, path = (fresh_folder / name).read_text(), committed / name
            same = (
                json.loads(path.read_text()) == json.loads(fresh)
                if name.endswith(".ipynb")
                else path.read_text() == fresh
            )
            assert same, f"{path} is stale: run `make release`"


def solution_blocks(nb: nbformat.NotebookNode) -> list[str]:
    pattern = re.compile(r"### BEGIN SOLUTION\n(.*?)\n\s*### END SOLUTION", re.DOTALL)
    return [block for cell in nb.cells for block in pattern.findall(cell.source)]


def test_no_solution_hidden_test_or_check_in_the_chapters():
    chapter_files = [p for p in (ROOT / "chapters").rglob("*") if p.is_file()]
    texts = {path: path.read_text(errors="replace") for path in chapter_files}
    for path, text in texts.items():
        assert not any(marker in text for marker in MARKERS + ("grader.safegrade",)), path
    for assignment in ASSIGNMENTS:
        source = source_notebook(ROOT, assignment)
        checks = (ROOT / "solutions" / assignment / "checks.py").read_text()
        visible = "\n".join(cell.source for cell in source.cells)  # checks repeat its asserts
        for verify in (ROOT / "solutions" / assignment).glob("verify.py"):  # learners read it
            visible += "\n" + verify.read_text()
        lines = [line.strip() for line in checks.split("\n") if len(line.strip()) > 40]
        secret = [line for line in lines if line not in visible]
        secret += [block for block in solution_blocks(source) if len(block) > 40]
        assert len(secret) > 10, "too little to compare"
        for path, text in texts.items():
            assert not any(block in text for block in secret), f"{path} shows a solution or check"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exercise_is_ten_points_over_three_or_more_cells(assignment: str):
    source = source_notebook(ROOT, assignment)
    points = [
        cell.metadata["nbgrader"]["points"]
        for cell in source.cells
        if cell.metadata.get("nbgrader", {}).get("grade")
    ]
    assert sum(points) == 10 and len(points) >= 3, points
    student_path = ROOT / STUDENT_VERSIONS / assignment / f"{assignment}.ipynb"
    for nb_path in (student_path, ROOT / "solutions" / assignment / f"{assignment}.ipynb"):
        assert not problems(nbformat.read(nb_path, as_version=4)), f"{nb_path} is not clean"


# ----------------------------------------------------------------------------- make report

PROGRESS = {  # what the class hub's progress page gathers, for two of the learners
    "reference": {"tryits": {"01_symbolic_tracing": {"1.1": True, "1.2": True}}},
    "untouched": {"tryits": {"01_symbolic_tracing": {"1.1": True, "1.2": False}}},
}


@pytest.fixture(scope="module")
def report(with_feedback, tmp_path_factory) -> Path:
    """`make report` of the graded class (with feedback pages for FEEDBACK_FOR), in a folder of
    its own; the course's classdata/ is beside it as classdata/reports is in a course."""
    course = with_feedback
    progress = tmp_path_factory.mktemp("progress") / "progress.json"
    progress.write_text(json.dumps(PROGRESS))
    out = Course.configured(course).reports
    command = [sys.executable, "-m", "grader.report", "--course", str(course)]
    done = subprocess.run([*command, "--progress", str(progress)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_report_counts_scores_and_groups_the_messages_learners_read(graded, report):
    course = graded["sandboxed"]
    exported = instructor.scores(course)
    for assignment in ASSIGNMENTS:
        rows = {row["student_id"]: row for row in read_rows(report / f"{assignment}.csv")}
        for student, row in rows.items():  # the same scores as make export
            score = exported.get(student, {}).get(assignment)
            assert row["score"] == ("" if score is None else f"{score:g}"), (student, row)
            result = course / "classdata/autograded/.safegrade" / assignment / f"{student}.json"
            state = json.loads(result.read_text())["status"] if result.exists() else "absent"
            shown = {"graded": "graded", "error": "could not be graded"}
            shown |= {"grader-error": "grader failed", "absent": "not submitted"}
            assert row["state"] == shown[state], (student, assignment, row["state"], state)
        every = len(course_tryits())  # out of the course's try-its, not the chapters saved
        assert rows["reference"]["tryits_passed"] == f"2/{every}"
        assert rows["untouched"]["tryits_passed"] == f"1/{every}"
    tests = read_rows(report / "ex1_sigmoid_to_tanh_tests.csv")
    messages = {row["message"] for row in tests}
    assert any("x.sigmoid(): the rewritten graph still computes a sigmoid" in m for m in messages)
    for row in tests:  # counts add up: each message's count <= learners who failed that test
        if row["message"]:
            assert 0 < int(row["count"]) <= int(row["graded"]) - int(row["passed"]), row


def test_report_shows_no_hidden_test_or_check(graded, report):
    course = graded["sandboxed"]
    page = html.unescape(re.sub(r"<[^>]+>", "\n", (report / "report.html").read_text()))
    shown = {line.strip() for line in page.split("\n")}
    for assignment in ASSIGNMENTS:
        source = source_notebook(course, assignment)
        visible = "\n".join(cell.source for cell in source.cells)
        checks = (course / "solutions" / assignment / "checks.py").read_text().split("\n")
        source = exercises.with_hidden_tests(source, assignment)  # as make release writes them
        hidden = [
            line.strip()
            for cell in source.cells
            for line in cell.source.split("\n")
            if "HIDDEN" in cell.source and len(line.strip()) > 30
        ]
        secret = {line.strip() for line in checks if len(line.strip()) > 30} | set(hidden)
        secret = {line for line in secret if line not in visible or line in hidden}
        assert not {line for line in secret if line in shown and "BEGIN" not in line}, assignment
    assert not any(marker in page for marker in MARKERS)


def test_report_in_a_browser_sorts_links_feedback_and_passes_axe(graded, report):
    from axe_check import serious_violations
    from browser_lab import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    artifacts = ROOT / "test-artifacts" / "report"
    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.goto((report / "report.html").as_uri())
        table = tab.locator("#h-ex1_sigmoid_to_tanh ~ table.sortable").first
        table.locator("thead button", has_text="score").click()
        table.locator("thead button", has_text="score").click()  # descending: best first
        first = table.locator("tbody tr").first
        assert first.locator("td").nth(1).inner_text() == "10", first.inner_text()
        tab.screenshot(path=artifacts / "report.png", full_page=True)
        assert serious_violations(tab) == []
        link = table.locator("a", has_text="feedback").first
        link.click()
        tab.wait_for_load_state()
        page_path = r"/feedback/[^/]+/ex1_sigmoid_to_tanh/ex1_sigmoid_to_tanh\.html$"
        assert re.search(page_path, tab.url), tab.url
        assert "ex1_sigmoid_to_tanh" in tab.title(), tab.title()
        tab.screenshot(path=artifacts / "feedback.png", full_page=False)
        assert serious_violations(tab) == [], "the feedback page"
        browser.close()
