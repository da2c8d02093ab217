"""The course in a real browser: what a learner sees when clicking through JupyterLab.

Starts the course's JupyterLab with `make lab` (the venv's `jupyter lab`, repository root), on
loopback with a token, and drives Debian's headless Chromium with Playwright:

1. chapter 1, opened by double-clicking through the file browser, runs top to bottom in the
   fx-course kernel without an error output and shows its graph picture as an SVG;
2. an exercise's student version (opened in chapters/exercises and never saved) passes its visible
   tests once the instructor's solution is typed into its solution cells, and shows a visible
   test's helpful message once a typical wrong solution is typed in instead;
3. the nbgrader extension is loaded (its menu) and the formgrader's "Manage Assignments" page lists
   the course's assignments.

Screenshots of every step go to test-artifacts/browser/ (git-ignored), with the server's log; the
path is printed in pytest's summary. The server, its kernels and the browser are shut down also
when a step fails, and the test checks that the lab saved nothing and left nothing in the repo.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from browser_lab import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LabPage,
    error_outputs,
    running_lab,
    svg_from_data_url,
    unexecuted_code_cells,
)

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
KERNEL = "fx-course"
CHAPTER_1 = "chapters/01_symbolic_tracing.ipynb"
ASSIGNMENTS = ["ex1_sigmoid_to_tanh", "ex2_node_dump", "ex3_timing_interpreter"]
CHAPTER_RUN_TIMEOUT_S = 150
EXERCISE_RUN_TIMEOUT_S = 90
SOLUTION_MARKERS = {"### BEGIN SOLUTION", "### END SOLUTION"}  # nbgrader's defaults

# The exercise the test works through, a mistake learners make in it (a function target written
# with str(), Nodes left in args), and what the visible test then says about it.
EXERCISE = "ex2_node_dump"
WRONG_SOLUTION = """\
def dump_nodes(gm: torch.fx.GraphModule) -> list[dict]:
    return [
        {
            "name": node.name,
            "op": node.op,
            "target": str(node.target),
            "args": node.args,
            "kwargs": node.kwargs,
            "users": [user.name for user in node.users],
        }
        for node in gm.graph.nodes
    ]"""
WRONG_SOLUTION_CELL = "dump_nodes"  # grade_id of the solution cell it replaces
EXPECTED_HINT = re.compile(r"want the target 'operator\.add', got '<built-in function add>'")

# Names a stray save, checkpoint or gradebook would leave in the repository.
LEFTOVER_PATTERN = re.compile(r"(^\.ipynb_checkpoints$|\.db$|^Untitled|^\.virtual_documents$)")
SKIPPED_FOLDERS = {
    ".git", ".venv", ".venv-hub", "test-artifacts", "__pycache__", ".pytest_cache", ".ruff_cache",
}  # fmt: skip


# ----------------------------------------------------------------------------- fixtures


class _ScreenshotSummary:
    """Adds a 'browser test screenshots' section to pytest's summary."""

    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.section("browser test screenshots")
        terminalreporter.write_line(f"{ARTIFACTS}/")
        for shot in sorted(ARTIFACTS.glob("*.png")):
            terminalreporter.write_line(f"  {shot.name}")


@pytest.fixture(scope="module")
def artifacts(request) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    if "PYTEST_XDIST_WORKER" not in os.environ:  # parallel workers would delete each other's
        for stale in [*ARTIFACTS.glob("*.png"), *ARTIFACTS.glob("*-console.txt")]:
            stale.unlink()
    plugins = request.config.pluginmanager
    if not plugins.has_plugin("fxcourse-browser-screenshots"):
        plugins.register(_ScreenshotSummary(), "fxcourse-browser-screenshots")
    print(f"browser test screenshots: {ARTIFACTS}/")
    return ARTIFACTS


def _leftover_candidates() -> set[str]:
    found = set()
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [s for s in subfolders if s not in SKIPPED_FOLDERS]
        for name in subfolders + files:
            if LEFTOVER_PATTERN.search(name):
                found.add(os.path.relpath(os.path.join(folder, name), ROOT))
    return found


class RepoGuard:
    """Remembers what lies around in the repository, to check once the server has gone that the
    test added nothing: no checkpoints, no new notebooks, no gradebook."""

    def __init__(self) -> None:
        self.leftovers_before = _leftover_candidates()

    def problems(self) -> list[str]:
        return [f"left behind: {p}" for p in sorted(_leftover_candidates() - self.leftovers_before)]


@pytest.fixture(scope="module")
def repo_guard() -> Iterator[RepoGuard]:
    guard = RepoGuard()
    yield guard
    problems = guard.problems()
    assert not problems, "the browser test wrote into the repository:\n" + "\n".join(problems)


@pytest.fixture(scope="module")
def lab_server(repo_guard, artifacts):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    log_path = artifacts / f"jupyterlab{'-' + worker if worker else ''}.log"
    with tempfile.TemporaryDirectory(prefix="fxcourse-lab-") as scratch:
        with running_lab(ROOT, Path(scratch), log_path) as server:
            yield server


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser test needs Debian's chromium "
            "(`env/setup.sh test` installs it; or set FXCOURSE_CHROMIUM to another Chromium)."
        )
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="fxcourse-chromium-") as home:
        # Chromium keeps caches and settings under $HOME even with a temporary profile.
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": home, "XDG_CACHE_HOME": home}
        playwright = sync_playwright().start()
        try:
            chromium = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, env=env
            )
            try:
                yield chromium
            finally:
                chromium.close()
        finally:
            playwright.stop()


@pytest.fixture
def lab(browser, lab_server, artifacts) -> Iterator[LabPage]:
    """A fresh browser tab on the lab (a fresh workspace, so no tabs from an earlier test)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = LabPage(context.new_page(), lab_server, artifacts)
        with page.step("00-lab-start"):
            page.open_lab()
        yield page
        # Edits stay in the browser: the lab must not have saved, renamed or created a file.
        assert not page.content_writes, f"the lab wrote files: {page.content_writes}"
    finally:
        context.close()


# ----------------------------------------------------------------------------- helpers


def open_notebook(lab: LabPage, relative: str, shot: str) -> None:
    with lab.step(shot):
        lab.double_click_path(relative)
        lab.wait_for_notebook(relative, KERNEL)
        lab.shot(shot)


def student_version(assignment: str) -> Path:
    """The learner's copy of `assignment` that the project generates into chapters/exercises."""
    found = [
        path
        for path in sorted((ROOT / "chapters" / "exercises").rglob(f"{assignment}.ipynb"))
        if ".ipynb_checkpoints" not in path.parts
    ]
    assert found, f"no student version of {assignment} under chapters/exercises/"
    return found[0]


def instructor_solutions(assignment: str) -> dict[str, str]:
    """grade_id -> the instructor's code of each solution cell, without the solution markers."""
    source = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    solutions = {}
    for cell in nbformat.read(source, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution"):
            lines = cell.source.splitlines()
            solutions[meta["grade_id"]] = "\n".join(
                line for line in lines if line.strip() not in SOLUTION_MARKERS
            )
    return solutions


def _nbgrader(cell: dict, flag: str) -> bool:
    return cell["type"] == "code" and bool((cell.get("nbgrader") or {}).get(flag))


def _grade_id(cell: dict) -> str | None:
    return (cell.get("nbgrader") or {}).get("grade_id")


def assert_ran_cleanly(cells: list[dict], what: str) -> None:
    errors = error_outputs(cells)
    assert not errors, f"{what} shows errors:\n" + "\n".join(errors)
    skipped = unexecuted_code_cells(cells)
    assert not skipped, f"{what}: code cells that did not run: {skipped}"


# ----------------------------------------------------------------------------- the steps


def test_chapter_1_runs_and_shows_its_graph(lab: LabPage):
    open_notebook(lab, CHAPTER_1, "01-chapter1-opened")

    with lab.step("02-chapter1-ran"):
        lab.run_all_cells(CHAPTER_RUN_TIMEOUT_S)
        assert_ran_cleanly(lab.cells(), "chapter 1")

        pictures = lab.page.locator(".jp-OutputArea .jp-RenderedSVG img")
        assert pictures.count() >= 1, "no SVG picture among chapter 1's outputs"
        picture = pictures.first
        picture.scroll_into_view_if_needed()
        loaded = picture.evaluate("img => img.complete && img.naturalWidth > 0")
        assert loaded, "the graph picture did not load in the browser"
        svg = svg_from_data_url(picture.get_attribute("src"))
        assert "<svg" in svg and 'class="node"' in svg, "the picture is not a Graphviz graph"
        lab.shot("02-chapter1-ran-graph-svg")


def test_exercise_passes_with_solution_and_explains_a_wrong_one(lab: LabPage):
    relative = student_version(EXERCISE).relative_to(ROOT).as_posix()
    solutions = instructor_solutions(EXERCISE)
    open_notebook(lab, relative, "03-exercise-opened")

    with lab.step("04-exercise-typing"):
        cells = lab.cells()
        answer_cells = [c for c in cells if _nbgrader(c, "solution")]
        test_cells = [c for c in cells if _nbgrader(c, "grade") and not _nbgrader(c, "solution")]
        assert answer_cells and test_cells, f"{relative}: no solution cell or no test cell"
        for cell in answer_cells:
            assert "raise NotImplementedError()" in cell["source"], f"{relative}: answered already"
            lab.replace_cell_source(cell["index"], solutions[_grade_id(cell)])
        lab.cell(answer_cells[0]["index"]).scroll_into_view_if_needed()
        lab.shot("04-exercise-solution-typed")

    with lab.step("05-exercise-correct"):
        lab.run_all_cells(EXERCISE_RUN_TIMEOUT_S)
        assert_ran_cleanly(lab.cells(), "the exercise with the instructor's solution")
        lab.cell(test_cells[-1]["index"]).scroll_into_view_if_needed()
        lab.shot("05-exercise-correct-passes")

    with lab.step("06-exercise-wrong"):
        target = next(c for c in answer_cells if _grade_id(c) == WRONG_SOLUTION_CELL)
        lab.replace_cell_source(target["index"], WRONG_SOLUTION)
        lab.run_all_cells(EXERCISE_RUN_TIMEOUT_S)
        failures = [
            (cell, output)
            for cell in lab.cells()
            for output in cell.get("outputs") or []
            if output["output_type"] == "error"
        ]
        assert failures, "the wrong solution passed the visible tests"
        failing_cell, error = failures[0]
        assert _nbgrader(failing_cell, "grade"), (
            f"the first error is in cell {failing_cell['index']}, not in a test cell: "
            f"{error['ename']}: {error['evalue']}"
        )
        message = f"{error['ename']}: {error['evalue']}"
        assert error["ename"] == "AssertionError", message
        assert EXPECTED_HINT.search(error["evalue"]), f"not the expected hint: {message}"
        shown = lab.cell(failing_cell["index"]).locator(".jp-OutputArea-output").last
        shown.scroll_into_view_if_needed()
        assert error["evalue"] in shown.inner_text(), "the message is not shown on the page"
        lab.shot("06-exercise-wrong-shows-hint")


def test_nbgrader_extension_and_formgrader(lab: LabPage):
    with lab.step("07-nbgrader-menu"):
        lab.page.locator(".lm-MenuBar-item").filter(has_text="Nbgrader").click()
        formgrader = lab.page.locator('.lm-Menu-item[data-command="nbgrader:open-formgrader"]')
        formgrader.wait_for()
        lab.shot("07-nbgrader-menu")

    with lab.step("08-formgrader"):
        with lab.page.expect_response(
            lambda r: r.url.split("?")[0].endswith("/formgrader/api/assignments")
        ) as answer:
            formgrader.click()
        response = answer.value
        assert response.ok, (
            f"the formgrader's assignment list failed (HTTP {response.status}); server log:\n"
            + lab_server_log_errors(lab)
        )
        listed = sorted(assignment["name"] for assignment in response.json())
        assert set(ASSIGNMENTS) <= set(listed), f"the formgrader lists {listed}"
        frame = lab.page.frame_locator("iframe").first
        frame.get_by_text("Manage Assignments").first.wait_for()
        for assignment in ASSIGNMENTS:
            frame.get_by_text(assignment, exact=True).first.wait_for()
        lab.shot("08-formgrader-manage-assignments")


def lab_server_log_errors(lab: LabPage) -> str:
    """The server log's last traceback, which says why a request failed."""
    log = lab.server.log_tail(20_000)
    start = log.rfind("Traceback")
    return log[start : start + 3000] if start >= 0 else log[-3000:]
