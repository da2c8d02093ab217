"""A whole class cycle on the class hub (`make hub`), in a real browser (`make test-hub`).

The hub runs as it would for a class, with throwaway system accounts (an instructor and two
learners), ports and folders of its own. In headless Chromium:

1. the instructor generates and releases exercise 1 from the formgrader;
2. two learners log in, fetch it from the Assignments tab into their home, type an answer (one the
   reference solution, one a known mistake), save and submit;
3. the instructor collects, autogrades both submissions and generates and releases feedback in
   the formgrader;
4. each learner fetches their feedback and sees their own score and failure messages, and no
   hidden test; the gradebook export has a row for each.

Along the way it checks the boundaries: learners have no formgrader, cannot read each other's
work or the instructor's course folder, and fetched notebooks hold no solution or hidden test.
Screenshots of every step are in test-artifacts/hub/. Afterwards (also after a failure) the hub
and every process of the accounts must be gone, and the accounts, their files and nothing else.
Needs root (the hub runs each account's server as that account). A checkout in a private folder
is made enterable by every account while the hub runs, then put back.
"""

from __future__ import annotations

import csv
import os
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from browser_lab import CHROMIUM, CHROMIUM_ARGS
from hub_class import ClassHub, reachable_by_every_account, run_as, running_class_hub
from hub_pages import GRADING_TIMEOUT_MS, Formgrader, HubUser
from submissions.build import read_snippet, reference_solutions

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "hub"
HUB_PYTHON = ROOT / os.environ.get("HUB_VENV", ".venv-hub") / "bin" / "python"
ASSIGNMENT = "ex1_sigmoid_to_tanh"
SOURCE = ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
MISTAKE = read_snippet(ROOT / "tests" / "submissions" / "ex1_only_torch_sigmoid.py")
# What the feedback tells the learner who only rewrote torch.sigmoid (a check's message).
MISTAKE_MESSAGE = "x.sigmoid(): the rewritten graph still computes a sigmoid"
KERNEL = "fx-course"

pytestmark = [
    pytest.mark.xdist_group("class-hub"),
    pytest.mark.skipif(
        os.environ.get("FXCOURSE_HUB_TEST") != "1",
        reason="the class hub's browser test runs in `make test-hub` (root; about 4 minutes)",
    ),
]


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for stale in [*ARTIFACTS.glob("*.png"), *ARTIFACTS.glob("*.txt")]:
        stale.unlink()
    print(f"class hub screenshots: {ARTIFACTS}/")
    return ARTIFACTS


@pytest.fixture(scope="module")
def class_hub(artifacts) -> Iterator[ClassHub]:
    if os.geteuid() != 0:
        pytest.fail("the class hub runs every account's server as that account: run as root")
    with tempfile.TemporaryDirectory(prefix="fxhub-test-", dir="/tmp") as scratch:
        os.chmod(scratch, 0o755)  # the accounts' homes are inside
        with reachable_by_every_account(ROOT):
            with running_class_hub(ROOT, Path(scratch), artifacts / "hub.log") as hub:
                yield hub


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `env/setup.sh test` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="fxhub-chromium-") as home:
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": home, "XDG_CACHE_HOME": home}
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, env=env
            )
            yield chromium
            chromium.close()


# ----------------------------------------------------------------------------- helpers


def hidden_test_lines() -> list[str]:
    """The distinctive lines of exercise 1's hidden tests (none may reach a learner): those not
    also written somewhere outside the hidden tests."""
    hidden, visible, inside = set(), set(), False
    for cell in nbformat.read(SOURCE, as_version=4).cells:
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line or "END HIDDEN TESTS" in line:
                inside = "BEGIN" in line
            else:
                (hidden if inside else visible).add(line.strip())
    distinctive = sorted(line for line in hidden - visible if len(line) >= 25)
    assert distinctive, f"{SOURCE} has no hidden tests to look for"
    return distinctive


def leaked(text: str) -> list[str]:
    markers = ["BEGIN HIDDEN TESTS", "BEGIN SOLUTION"]
    return [line for line in [*markers, *hidden_test_lines()] if line in text]


def notebook_text(notebook: Path) -> str:
    return "\n".join(cell.source for cell in nbformat.read(notebook, as_version=4).cells)


def answer_cell(notebook: Path) -> str:
    """The source of the (single) answer cell of exercise 1 in a learner's notebook on disk."""
    cells = nbformat.read(notebook, as_version=4).cells
    answers = [c.source for c in cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert len(answers) == 1, f"{notebook}: {len(answers)} answer cells"
    return answers[0]


def wait_for_file_content(path: Path, expected: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and answer_cell(path) == expected:
            return
        time.sleep(0.5)
    raise AssertionError(f"{path} was not saved with the typed answer in {timeout_s} s")


def memory_mib(hub: ClassHub, account: str) -> float:
    """Resident memory of all of an account's processes (its server and kernels), in MiB."""
    total_kib = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        uid = re.search(r"^Uid:\s+(\d+)", text, re.MULTILINE)
        rss = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
        if uid and rss and int(uid.group(1)) == hub.uids[account]:
            total_kib += int(rss.group(1))
    return total_kib / 1024


def note(artifacts: Path, line: str) -> None:
    """Measurements for the README's sizing estimate: printed, and kept beside the screenshots."""
    print(line)
    with (artifacts / "hub-measurements.txt").open("a") as handle:
        handle.write(line + "\n")


# ----------------------------------------------------------------------------- the steps


def release_exercise(instructor: HubUser) -> None:
    with instructor.step("01-instructor-lab"):
        instructor.wait_for_lab()
        items = instructor.menu_items("Nbgrader")
        assert "Formgrader" in items, f"the instructor's Nbgrader menu: {items}"
        instructor.shot("01-instructor-lab")
    formgrader = Formgrader(instructor)
    with instructor.step("02-formgrader-release"):
        formgrader.open_assignments()
        assert not instructor.warnings_shown(), instructor.warnings_shown()
        instructor.shot("02-formgrader-assignments")
        row = formgrader.row(ASSIGNMENT)
        formgrader.click_and_confirm(row, "assign", "Successfully created the student version")
        formgrader.close_dialog()
        formgrader.click_and_confirm(row, "release", "Successfully released")
        instructor.shot("02-formgrader-released")
        formgrader.close_dialog()
        row.locator("td.status", has_text="released").wait_for()


def fetch_answer_submit(hub: ClassHub, learner: HubUser, answer: str, prefix: str) -> None:
    with learner.step(f"{prefix}-lab"):
        learner.wait_for_lab()
        items = learner.menu_items("Nbgrader")
        assert items == ["Assignment List"], f"a learner's Nbgrader menu: {items}"
        learner.open_assignments()
        assert learner.course_shown() == "fx-course", learner.course_shown()
        learner.assignment_item("released", ASSIGNMENT).wait_for()
        assert not learner.warnings_shown(), learner.warnings_shown()
        learner.shot(f"{prefix}-assignments")
    notebook = hub.home(learner.account) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    with learner.step(f"{prefix}-fetch"):
        learner.click_assignment_button("released", ASSIGNMENT, "Fetch", then="fetched")
        assert notebook.stat().st_uid == hub.uids[learner.account], "not in the learner's own files"
        assert not leaked(notebook.read_text()), (
            f"the fetched notebook holds {leaked(notebook.read_text())}"
        )
        learner.shot(f"{prefix}-fetched")
    with learner.step(f"{prefix}-answer"):
        learner.open_path(f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
        cell = learner.cell_holding("raise NotImplementedError()")
        learner.replace_cell(cell, answer)
        learner.save_notebook()
        wait_for_file_content(notebook, answer)
        learner.shot(f"{prefix}-answered")
    with learner.step(f"{prefix}-submit"):
        learner.page.locator(".lm-TabBar-tab", has_text="Assignments").click()
        learner.click_assignment_button("fetched", ASSIGNMENT, "Submit", then="submitted")
        assert not learner.warnings_shown(), learner.warnings_shown()
        learner.shot(f"{prefix}-submitted")


def grade_and_release_feedback(hub: ClassHub, instructor: HubUser, artifacts: Path) -> None:
    formgrader = Formgrader(instructor)
    with instructor.step("20-collect"):
        formgrader.open_assignments()
        row = formgrader.row(ASSIGNMENT)
        formgrader.click_and_confirm(row, "collect", "Successfully collected")
        formgrader.close_dialog()
        row.locator("td.num-submissions a", has_text="2").click()
    with instructor.step("21-autograde"):
        for learner in hub.learners:
            student = instructor.page.locator("#main-table tr").filter(
                has=instructor.page.locator("td.student-id", has_text=learner)
            )
            started = time.monotonic()
            formgrader.click_and_confirm(student, "autograde", "Successfully autograded")
            note(
                artifacts,
                f"autograde of {learner}'s submission: {time.monotonic() - started:.1f} s",
            )
            formgrader.close_dialog()
            student.locator("td.score", has_text=re.compile(r"/ 10$")).wait_for()
        instructor.shot("21-autograded")
    with instructor.step("22-feedback"):
        formgrader.open_assignments()
        row = formgrader.row(ASSIGNMENT)
        formgrader.click_and_confirm(row, "generate-feedback", "Successfully generated feedback")
        formgrader.close_dialog()
        formgrader.click_and_confirm(row, "release-feedback", "Successfully released feedback")
        instructor.shot("22-feedback-released")
        formgrader.close_dialog()


def read_feedback(learner: HubUser, prefix: str, message: str | None = None) -> str:
    """Fetch the feedback from the Assignments tab and open it; returns the text shown. With
    `message`, also a screenshot of where the feedback shows it."""
    with learner.step(f"{prefix}-feedback"):
        learner.page.locator(".lm-TabBar-tab", has_text="Assignments").click()
        learner.refresh_assignments()
        submitted = learner.assignment_item("submitted", ASSIGNMENT)
        submitted.locator("button", has_text="Fetch Feedback").click()
        submitted = learner.assignment_item("submitted", ASSIGNMENT)
        submitted.locator("a", has_text="view feedback").click(timeout=GRADING_TIMEOUT_MS)
        learner.page.locator(".jp-DirListing-itemText", has_text=f"{ASSIGNMENT}.html").dblclick()
        shown = learner.page.frame_locator(".jp-HTMLViewer iframe").locator("body")
        shown.locator("text=Score").first.wait_for()
        learner.shot(f"{prefix}-feedback")
        if message:
            shown.get_by_text(message).first.scroll_into_view_if_needed()
            learner.shot(f"{prefix}-feedback-message")
        return shown.inner_text()


def check_feedback(text: str, expected_score: float, account: str) -> None:
    score = re.search(rf"{ASSIGNMENT} \(Score: ([0-9.]+) / 10\.0\)", text)
    assert score, f"{account}'s feedback shows no score:\n{text[:2000]}"
    assert float(score.group(1)) == expected_score, f"{account}: {score.group(0)}"
    assert not leaked(text), f"{account}'s feedback shows hidden tests: {leaked(text)}"


def check_boundaries(hub: ClassHub, learner: HubUser, other: str) -> None:
    """A learner's server has no grading tools and one kernel; files stay with their owners; the
    learner has their own copy of the chapters."""
    chapter = hub.home(learner.account) / "chapters" / "01_symbolic_tracing.ipynb"
    assert chapter.is_file(), f"{learner.account} has no chapters: {chapter}"
    assert chapter.stat().st_uid == hub.uids[learner.account], "the chapters are not the learner's"
    response = learner.page.request.get(learner.server_url + "formgrader/manage_assignments")
    assert response.status == 404, f"a learner's server answers the formgrader: {response.status}"
    kernels = learner.page.request.get(learner.server_url + "api/kernelspecs").json()
    assert set(kernels["kernelspecs"]) == {KERNEL}, kernels["kernelspecs"]
    others_work = hub.home(other) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert run_as(learner.account, "cat", str(others_work)).returncode != 0, "work is readable"
    course = run_as(learner.account, "ls", str(hub.course))
    assert course.returncode != 0, (
        f"a learner lists the instructor's course folder: {course.stdout}"
    )


def exported_scores(hub: ClassHub) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The course's CSV exports, run by the instructor in their course folder: each student's
    exercise 1 score, and each student's points per test cell."""
    export = run_as(
        hub.instructor, str(HUB_PYTHON), "grader/course_grader.py", "export", cwd=hub.course
    )
    assert export.returncode == 0, export.stdout + export.stderr
    exports = hub.course / "grader" / "exports"
    with (exports / "grades.csv").open() as handle:
        scores = {row["student_id"]: row[ASSIGNMENT] for row in csv.DictReader(handle)}
    with (exports / "grades_by_test.csv").open() as handle:
        by_test = {row.pop("student_id"): row for row in csv.DictReader(handle)}
    return scores, by_test


AUTOGRADE_STEPS = """
from nbgrader.apps.baseapp import NbGrader
from nbgrader.converters import Autograde
app = NbGrader()
app.initialize([])
app.load_config_file()
steps = Autograde(config=app.config).autograde_preprocessors
unsandboxed = app.config.SandboxExecute.get("unsandboxed", False)
print(*[step.__name__ for step in steps], f"unsandboxed={unsandboxed}")
"""


def autograde_steps(hub: ClassHub) -> list[str]:
    """The steps of Autograde (the formgrader's button) in the instructor's course folder, with
    its configuration loaded as the instructor's server loads it."""
    done = run_as(hub.instructor, str(HUB_PYTHON), "-c", AUTOGRADE_STEPS, cwd=hub.course)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.split()


# ----------------------------------------------------------------------------- the test


def test_a_class_cycle_on_the_hub(class_hub: ClassHub, browser, artifacts: Path):
    hub = class_hub
    ada_name, bob_name = hub.learners
    people = {
        name: HubUser(browser, hub.url, name, hub.passwords[name], artifacts)
        for name in (hub.instructor, ada_name, bob_name)
    }
    instructor, ada, bob = people[hub.instructor], people[ada_name], people[bob_name]
    reference = reference_solutions(nbformat.read(SOURCE, as_version=4))
    try:
        started = time.monotonic()
        for person in (instructor, ada, bob):  # three servers start at once, as in a class
            person.start_login()
        release_exercise(instructor)
        note(artifacts, f"instructor logged in and released: {time.monotonic() - started:.1f} s")
        fetch_answer_submit(hub, ada, reference["replace_sigmoid_with_tanh"], "10-ada")
        fetch_answer_submit(hub, bob, MISTAKE.cells["replace_sigmoid_with_tanh"], "11-bob")
        for name in (hub.instructor, ada_name, bob_name):
            note(artifacts, f"memory of {name}'s processes: {memory_mib(hub, name):.0f} MiB")
        check_boundaries(hub, ada, bob_name)
        check_boundaries(hub, bob, ada_name)

        grade_and_release_feedback(hub, instructor, artifacts)

        check_feedback(read_feedback(ada, "30-ada"), 10.0, ada_name)
        bob_feedback = read_feedback(bob, "31-bob", MISTAKE_MESSAGE)
        check_feedback(bob_feedback, MISTAKE.expected, bob_name)
        assert MISTAKE_MESSAGE in bob_feedback, f"bob's feedback lacks {MISTAKE_MESSAGE!r}"

        scores, by_test = exported_scores(hub)
        assert scores == {ada_name: "10", bob_name: f"{MISTAKE.expected:g}"}, scores
        assert set(by_test) == {ada_name, bob_name}, by_test
        assert by_test[bob_name][f"{ASSIGNMENT}:test_method_and_module"] == "0", by_test
        note(artifacts, f"the whole cycle in the browser: {time.monotonic() - started:.1f} s")

        steps = autograde_steps(hub)
        assert "SandboxExecute" in steps and "Execute" not in steps, steps
        assert "unsandboxed=False" in steps, steps
    finally:
        for person in people.values():
            person.close()
