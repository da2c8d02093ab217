"""The course in a real browser, in every language of the registry (fxcourse.languages): what a
learner and an instructor see in JupyterLab.

Per language, starts the learner's lab as `make lab` (`make lab LANG=<code>` for a translation:
its chapters, JupyterLab in its language pack) does, in a scratch workspace, and for the source
language also the instructor's with `make formgrader`, on loopback with a token, and drives
Debian's headless Chromium with Playwright. What differs by language is read from the registry
and the catalogs: the lab's menu labels from its language pack, the checkpoint boxes' words from
fxcourse's catalog, a visible test's message from the exercise's verify catalog, the revealed
answer from that language's answers. A language added to the registry runs these tests as is.

In every language:
1. chapter 1, opened from the workspace, runs top to bottom: every try-it shows "Not yet", the
   graph pictures fit the output area; an answer typed into one try-it passes its checkpoint; a
   reference answer is revealed by one click, and the learner's own cell stays as it was;
2. an exercise's starter (workspace/exercises) passes its visible tests once the instructor's
   solution is typed into its solution cells, and shows a visible test's helpful message once a
   typical wrong solution is typed in instead;
3. in exercise 1 the learner types a wrong answer, runs the notebook and presses nbgrader's
   Validate button (it names the failing cell), then types the right answer and presses Validate
   again ("Success!");
4. the learner's lab offers nbgrader's Assignments list and no instructor tools;
5. a course update made while chapters are open, one with an attempt typed and not saved, goes
   into the open tabs with the attempt kept, and no dialog comes up (tests/browser_updates.py).
A translation's run of 2 to 5 is in `make test-end-to-end`, the source language's in `make test`
(the mechanism is one; the translation adds its words, and its 1 runs in `make test`).
In a translation, everything its learner reads in 1 and 3 (the chapters' Markdown, every output,
the Validate dialogs' text) holds no English sentence (tests/english_prose.py; the read text is
written beside the screenshots as *-read.txt). That detector is built for a script other than
Latin: a translation written in Latin letters needs its own.

In the source language (what the steps do is the same in every language):
6. nbgrader's exchange on one machine, with no extra flags: the instructor releases exercise 1,
   the learner fetches it from the Assignments tab into the workspace and submits it, and the
   instructor's `nbgrader collect` picks it up (tests/test_exchange_languages.py takes a
   translation's assignment through the exchange);
7. the instructor's formgrader lists the course's assignments;
8. with JupyterLab's autosave on: a course update reaches chapters the learner opened or edited
   (the lab closed); an exercise fixed and Validated shows as passed in progress at once (a
   checkpoint's pass too, in 1, before any save).

Every step fails on a visible error or warning banner (notifications, dialogs, error or stderr
outputs, the formgrader's alerts). Screenshots go to test-artifacts/browser/ (the source
language) and test-artifacts/browser-<code>/ (git-ignored; `-end-to-end` added for make
test-end-to-end's), with the servers' logs; the paths are printed in pytest's summary. The
servers, their kernels and the browser are shut down also when a step fails, and the test checks
that the labs saved nothing and left nothing in the repository.
Each language's tests run in one xdist worker of their own (group browser-<code>).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import browser_updates
import nbformat
import pytest
from browser_lab import (
    CHROMIUM,
    CHROMIUM_ARGS,
    JS_PICTURES_WIDER_THAN_OUTPUT,
    LabPage,
    error_outputs,
    exact,
    svg_from_data_url,
    unexecuted_code_cells,
    visible_banners,
    warning_outputs,
)
from browser_updates import said_in, words_of
from english_prose import english_found, learner_reads, traceback_prose
from lab_runner import AUTOSAVE_SETTINGS, LAB_SETTINGS, running_lab

from courseware.i18n.catalogs import lookup_of
from fxcourse import languages, messages, progress, tryit, workspace
from fxcourse.languages import SOURCE, Language
from grader import instructor as instructor_steps
from grader.course import Course

ROOT = Path(__file__).resolve().parents[1]
KERNEL = workspace.course_kernel()["name"]
CHAPTER_1 = "01_symbolic_tracing.ipynb"  # in the workspace
# The try-it the learner answers, with the answer typed; the one whose answer is revealed.
TRYIT_ANSWERED = "1.2"
TRYIT_TYPED = (
    'plain_gelu = fx.symbolic_trace(scaled_act, concrete_args={"act": "gelu", "scale": None})'
)
TRYIT_REVEALED = "1.1"
ASSIGNMENTS = ["ex1_sigmoid_to_tanh", "ex2_node_dump", "ex3_timing_interpreter"]
CHAPTER_RUN_TIMEOUT_S = 150
EXERCISE_RUN_TIMEOUT_S = 90
SOLUTION_MARKERS = {"### BEGIN SOLUTION", "### END SOLUTION"}  # nbgrader's defaults
VIEWPORT = {"width": 1400, "height": 900}

# The exercise the learner works through, a mistake learners make in it (a function target
# written with str(), Nodes left in args), and the visible test's message about it (verify.py's
# literal, translated in the exercise's verify catalog), for a node of any name.
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
            "refers_to": None,
        }
        for node in gm.graph.nodes
    ]"""
WRONG_SOLUTION_CELL = "dump_nodes"  # grade_id of the solution cell it replaces
HINT_LITERAL = 'f"{name}: want the {key} {value!r}, got {got!r}{nodes}"'  # verify.py's
HINT_VALUES = {"key": "target", "value": "operator.add", "got": "<built-in function add>"}
HINT_VALUES |= {"nodes": ""}  # the note when Nodes stand where names belong: not for this answer

# The exercise validated in nbgrader's dialog, and a learner's first try at it: only the
# torch.sigmoid spelling, so the method and module spellings fail.
VALIDATED = "ex1_sigmoid_to_tanh"
VALIDATED_PATH = f"exercises/{VALIDATED}/{VALIDATED}.ipynb"
VALIDATE_WRONG_ANSWER = """\
def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.sigmoid:
            node.target = torch.tanh
    gm.recompile()
    return gm"""
# nbgrader's own words, in every language (it has no translations: english_prose's
# UNTRANSLATED_LABELS, named in each translation's README).
NBGRADER_MENU = "Nbgrader"
VALIDATE_FAILED = "The following cell failed:"
VALIDATE_PASSED = "Success! Your notebook passes all the tests."

# Names a stray save, checkpoint or gradebook would leave in the repository.
LEFTOVER_PATTERN = re.compile(r"(^\.ipynb_checkpoints$|\.db$|^Untitled|^\.virtual_documents$)")
SKIPPED_FOLDERS = {
    ".git", ".venv", ".venv-hub", "test-artifacts", "__pycache__", ".pytest_cache", ".ruff_cache",
}  # fmt: skip


def _in(*chosen: Language, translations_end_to_end: bool = False):
    """Parametrize a test over `chosen` languages; each language's tests share its labs and run
    in one xdist worker of their own. `translations_end_to_end`: a translation's run is left to
    make test-end-to-end (what it adds to the source language's is its words)."""

    def marks(language: Language) -> list:
        group = [pytest.mark.xdist_group(f"browser-{language.code}")]
        later = translations_end_to_end and language is not SOURCE
        return group + [pytest.mark.end_to_end] * later

    params = [pytest.param(x, id=x.code, marks=marks(x)) for x in chosen]
    return pytest.mark.parametrize("language", params, indirect=True)


EVERY_LANGUAGE = _in(*languages.all_languages())
SOURCE_LANGUAGE = _in(SOURCE)
EVERY_LANGUAGE_TRANSLATIONS_END_TO_END = _in(
    *languages.all_languages(), translations_end_to_end=True
)


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def language(request) -> Language:
    return request.param


def artifacts_folder(language: Language, config) -> Path:
    """test-artifacts/browser[-<code>], with -end-to-end for a session of make test-end-to-end
    (whose tests write other screenshots: a folder of one would empty the other's)."""
    name = "browser" if language is SOURCE else f"browser-{language.code}"
    if (config.getoption("markexpr", "") or "").strip() == "end_to_end":
        name += "-end-to-end"
    return ROOT / "test-artifacts" / name


class _ScreenshotSummary:
    """Adds a 'browser test screenshots' section to pytest's summary."""

    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.section("browser test screenshots")
        for language in languages.all_languages():
            folder = artifacts_folder(language, terminalreporter.config)
            if folder.is_dir():
                terminalreporter.write_line(f"{folder}/")
                for shot in sorted(folder.glob("*.png")):
                    terminalreporter.write_line(f"  {shot.name}")


@pytest.fixture(scope="module")
def artifacts(request, language) -> Path:
    folder = artifacts_folder(language, request.config)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in [*folder.glob("*.png"), *folder.glob("*.txt")]:
        stale.unlink()  # a language's tests run in one worker (xdist_group): these are theirs
    plugins = request.config.pluginmanager
    if not plugins.has_plugin("fxcourse-browser-screenshots"):
        plugins.register(_ScreenshotSummary(), "fxcourse-browser-screenshots")
    print(f"{language.label} browser test screenshots: {folder}/")
    return folder


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
def repo_guard(language) -> Iterator[RepoGuard]:
    guard = RepoGuard()
    yield guard
    problems = guard.problems()
    assert not problems, (
        f"the {language.code} browser tests wrote into the repository:\n" + "\n".join(problems)
    )


def _server(target: str, artifacts: Path, language: Language, name: str, settings=LAB_SETTINGS):
    prefix = f"fxcourse-{name}-{language.code}-"
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        log_path, code = artifacts / f"{name}.log", language.code
        with running_lab(ROOT, Path(scratch), log_path, target, settings, code) as server:
            yield server


@pytest.fixture(scope="module")
def lab_server(repo_guard, artifacts, language):
    yield from _server("lab", artifacts, language, "lab")


@pytest.fixture(scope="module")
def formgrader_server(repo_guard, artifacts, language):
    yield from _server("formgrader", artifacts, language, "formgrader")


@pytest.fixture(scope="module")
def autosave_lab_server(repo_guard, artifacts, language):
    yield from _server("lab", artifacts, language, "lab-autosave", AUTOSAVE_SETTINGS)


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


def new_context(browser, language: Language):
    """A browser context as the language's learner has it (the browser's locale is theirs)."""
    if language.lab_locale:
        return browser.new_context(viewport=VIEWPORT, locale=language.lab_locale.replace("_", "-"))
    return browser.new_context(viewport=VIEWPORT)


def _tab(browser, server, artifacts, language, may_write=frozenset()) -> Iterator[LabPage]:
    """A fresh browser tab on a lab (a fresh JupyterLab workspace: no tabs from an earlier test)
    that writes no file but those of `may_write` ("METHOD /api/contents/PATH")."""
    context = new_context(browser, language)
    try:
        page = LabPage(context.new_page(), server, artifacts)
        with page.step("00-lab-start"):
            page.open_lab()
        yield page
        # Edits stay in the browser: the lab must not have saved, renamed or created a file.
        written = [write for write in page.content_writes if write not in may_write]
        assert not written, f"the lab wrote files: {written}"
    finally:
        context.close()


@pytest.fixture
def lab(browser, lab_server, artifacts, language) -> Iterator[LabPage]:
    yield from _tab(browser, lab_server, artifacts, language)


@pytest.fixture
def validating_lab(browser, lab_server, artifacts, language) -> Iterator[LabPage]:
    """A tab on the learner's lab whose Validate button saved the notebook it validates (nbgrader
    saves before it validates), and nothing else."""
    saved = frozenset({f"PUT /api/contents/{VALIDATED_PATH}"})
    yield from _tab(browser, lab_server, artifacts, language, saved)


@pytest.fixture
def instructor(browser, formgrader_server, artifacts, language) -> Iterator[LabPage]:
    yield from _tab(browser, formgrader_server, artifacts, language)


# ----------------------------------------------------------------------------- what a language says


def lab_menu(language: Language, label: str) -> str:
    """A top menu's label ("Run", "File") as the lab's language pack for `language` shows it."""
    if not language.lab_locale:
        return label
    pack = importlib.import_module(f"jupyterlab_language_pack_{language.lab_locale}")
    folder = Path(pack.__file__).parent / "locale" / language.lab_locale / "LC_MESSAGES"
    words = json.loads((folder / "jupyterlab.json").read_text(encoding="utf-8"))
    return (words.get(f"menu\x04{label}") or words[label])[0]


def not_yet_start(language: Language) -> str:
    """How every "Not yet" box starts in `language` (the box's text, up to its try-it's id)."""
    box = said_in(language.code, "<b>Not yet</b> (try it {id}): {problem}<br><b>Goal:</b> {goal}")
    return re.sub(r"<[^>]+>", "", box.partition("{id}")[0])


def checkpoint_passed(language: Language, tryit_id: str) -> str:
    return said_in(language.code, "Checkpoint {id} passed.").format(id=tryit_id)


def expected_hint(language: Language) -> re.Pattern:
    """The visible test's message about WRONG_SOLUTION in `language`: verify.py's literal as the
    exercise's verify catalog translates it, the node's name left open."""
    literal = lookup_of(f"{EXERCISE}.verify", language.code).get(HINT_LITERAL, HINT_LITERAL)
    assert literal.startswith('f"') and literal.endswith('"'), literal
    text = literal[2:-1].format(name="\0", **HINT_VALUES)
    return re.compile(r"\S+".join(re.escape(part) for part in text.split("\0")))


def revealed_answer(language: Language, tryit_id: str) -> str:
    """The reference answer a learner in `language` reveals (translated comments and all)."""
    with messages.speaking(language.code):
        return tryit.load_answers()[tryit_id]["code"]


# ----------------------------------------------------------------------------- helpers


def open_notebook(lab: LabPage, relative: str, shot: str) -> None:
    with lab.step(shot):
        lab.double_click_path(relative)
        lab.wait_for_notebook(relative, KERNEL)
        lab.shot(shot)


def assert_no_banners(lab: LabPage, where: str, cells: list[dict] | None = None) -> None:
    banners = visible_banners(lab.page) + warning_outputs(cells or [])
    assert not banners, f"{where}: error or warning banners on the page:\n" + "\n".join(banners)


def assert_no_english(
    language: Language, read: list[tuple[str, str]], where: str, artifacts: Path
) -> None:
    """A translation's learner reads no English sentence in `read` (the source's: nothing to do)."""
    if language is SOURCE:
        return
    (artifacts / f"{where}-read.txt").write_text(
        "\n\n".join(f"## {place}\n{text}" for place, text in read) + "\n"
    )
    english = english_found(read)
    assert not english, f"{where}: English sentences a translation's learner reads:\n" + "\n".join(
        english
    )


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


# ----------------------------------------------------------------------------- chapter 1


def _tryit_cell(cells: list[dict], tryit_id: str, role: str) -> dict:
    found = [c for c in cells if (c.get("tryit") or {}) == {"id": tryit_id, "role": role}]
    assert len(found) == 1, f"want one {role} cell for try it {tryit_id}, found {len(found)}"
    return found[0]


def _checkpoint_box(lab: LabPage, cell: dict):
    return lab.cell(cell["index"]).locator(".fxcourse-checkpoint")


@EVERY_LANGUAGE
def test_learner_chapter_says_not_yet_then_passes_and_reveals_an_answer(
    lab: LabPage, language: Language, artifacts: Path
):
    open_notebook(lab, CHAPTER_1, "01-chapter1-opened")

    with lab.step("02-chapter1-ran"):
        lab.run_all_cells(CHAPTER_RUN_TIMEOUT_S, lab_menu(language, "Run"))
        cells = lab.cells()
        assert_ran_cleanly(cells, "chapter 1")
        boxes = lab.page.locator(".fxcourse-checkpoint")
        checks = [c for c in cells if (c.get("tryit") or {}).get("role") == "check"]
        assert len(checks) >= 3 and boxes.count() == len(checks)
        texts = [boxes.nth(i).text_content() for i in range(boxes.count())]
        assert all(t.startswith(not_yet_start(language)) for t in texts), texts
        boxes.first.scroll_into_view_if_needed()
        lab.page.wait_for_timeout(500)  # pictures above it finish laying out, then look again
        boxes.first.scroll_into_view_if_needed()
        lab.shot("02-chapter1-ran-not-yet")
        assert_no_banners(lab, "chapter 1 after Run All", cells)
        assert_no_english(language, learner_reads(cells), "chapter1", artifacts)

    with lab.step("03-chapter1-pictures"):
        pictures = lab.page.locator(".jp-OutputArea img.fxcourse-graph")
        assert pictures.count() >= 2, "chapter 1 should show its graph pictures"
        for index in range(pictures.count()):
            picture = pictures.nth(index)
            picture.scroll_into_view_if_needed()
            assert picture.evaluate("img => img.complete && img.naturalWidth > 0")
            svg = svg_from_data_url(picture.get_attribute("src"))
            assert 'class="node"' in svg, "the picture is not a Graphviz graph"
        too_wide = lab.page.evaluate(JS_PICTURES_WIDER_THAN_OUTPUT)
        assert not too_wide, f"pictures wider than their output area: {too_wide}"
        lab.shot("03-chapter1-graph-fits")

    with lab.step("04-tryit-answered"):
        scaffold = _tryit_cell(cells, TRYIT_ANSWERED, "scaffold")
        check = _tryit_cell(cells, TRYIT_ANSWERED, "check")
        assert check["index"] == scaffold["index"] + 1
        lab.replace_cell_source(scaffold["index"], TRYIT_TYPED)
        lab.page.keyboard.press("Shift+Enter")  # runs the answer, moves to the checkpoint
        lab.page.keyboard.press("Shift+Enter")  # runs the checkpoint
        box = _checkpoint_box(lab, check)
        box.filter(has_text=checkpoint_passed(language, TRYIT_ANSWERED)).wait_for()
        box.scroll_into_view_if_needed()
        lab.shot("04-tryit-answered-passes")
        assert_no_banners(lab, "after answering a try-it", lab.cells())
        # Nothing is saved (autosave is off here), yet progress already agrees with the box.
        marks = progress.progress(lab.server.workspace)["tryits"][CHAPTER_1]
        assert marks[TRYIT_ANSWERED] is True and marks[TRYIT_REVEALED] is False, marks

    with lab.step("05-answer-revealed"):
        check = _tryit_cell(cells, TRYIT_REVEALED, "check")
        scaffold = _tryit_cell(cells, TRYIT_REVEALED, "scaffold")
        reveal = _checkpoint_box(lab, check).locator("details.fxcourse-answer")
        answer = reveal.locator("pre")
        assert not answer.is_visible(), "the reference answer shows before it is asked for"
        reveal.locator("summary").click()
        answer.wait_for(state="visible")
        first_line = revealed_answer(language, TRYIT_REVEALED).splitlines()[0]
        assert first_line in answer.text_content()
        answer.scroll_into_view_if_needed()
        lab.shot("05-answer-revealed")
        unchanged = _tryit_cell(lab.cells(), TRYIT_REVEALED, "scaffold")["source"]
        assert unchanged == scaffold["source"], "revealing the answer changed the learner's cell"


# ----------------------------------------------------------------------------- exercises


@EVERY_LANGUAGE_TRANSLATIONS_END_TO_END
def test_exercise_passes_with_solution_and_explains_a_wrong_one(lab: LabPage, language: Language):
    relative = f"exercises/{EXERCISE}/{EXERCISE}.ipynb"  # the learner's copy, in the workspace
    solutions, run_menu = instructor_solutions(EXERCISE), lab_menu(language, "Run")
    open_notebook(lab, relative, "06-exercise-opened")

    with lab.step("07-exercise-typing"):
        cells = lab.cells()
        answer_cells = [c for c in cells if _nbgrader(c, "solution")]
        test_cells = [c for c in cells if _nbgrader(c, "grade") and not _nbgrader(c, "solution")]
        assert answer_cells and test_cells, f"{relative}: no solution cell or no test cell"
        for cell in answer_cells:
            assert "raise NotImplementedError()" in cell["source"], f"{relative}: answered already"
            lab.replace_cell_source(cell["index"], solutions[_grade_id(cell)])
        lab.cell(answer_cells[0]["index"]).scroll_into_view_if_needed()
        lab.shot("07-exercise-solution-typed")

    with lab.step("08-exercise-correct"):
        lab.run_all_cells(EXERCISE_RUN_TIMEOUT_S, run_menu)
        assert_ran_cleanly(lab.cells(), "the exercise with the instructor's solution")
        lab.cell(test_cells[-1]["index"]).scroll_into_view_if_needed()
        lab.shot("08-exercise-correct-passes")

    with lab.step("09-exercise-wrong"):
        target = next(c for c in answer_cells if _grade_id(c) == WRONG_SOLUTION_CELL)
        lab.replace_cell_source(target["index"], WRONG_SOLUTION)
        lab.run_all_cells(EXERCISE_RUN_TIMEOUT_S, run_menu)
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
        hint = expected_hint(language)
        assert hint.search(error["evalue"]), f"not the expected hint {hint.pattern}: {message}"
        shown = lab.cell(failing_cell["index"]).locator(".jp-OutputArea-output").last
        shown.scroll_into_view_if_needed()
        assert error["evalue"] in shown.inner_text(), "the message is not shown on the page"
        lab.shot("09-exercise-wrong-shows-hint")


def _validate(lab: LabPage, shot: str, expect: str) -> str:
    """Press nbgrader's Validate button; the dialog's text once it says `expect`."""
    lab.page.locator(".validate-button").click()
    dialog = lab.page.locator(".jp-Dialog")
    dialog.get_by_text(expect).first.wait_for(timeout=EXERCISE_RUN_TIMEOUT_S * 2000)
    lab.shot(shot)
    text = dialog.inner_text()
    dialog.locator(".jp-mod-accept").click()
    dialog.wait_for(state="hidden")
    return text


def right_answer(stub: dict) -> str:
    """The instructor's solution under the stub's own first lines (def and docstring: translated
    in a translation)."""
    solution = instructor_solutions(VALIDATED)[stub["nbgrader"]["grade_id"]].splitlines()
    head = stub["source"].splitlines()[:2]
    assert solution[0] == head[0] and solution[1].lstrip().startswith('"""'), solution[:2]
    return "\n".join(head + solution[2:])


@EVERY_LANGUAGE_TRANSLATIONS_END_TO_END
def test_validate_names_the_failing_cell_then_says_success(
    validating_lab: LabPage, language: Language, artifacts: Path
):
    lab = validating_lab
    open_notebook(lab, VALIDATED_PATH, "40-validated-exercise-opened")
    answer = next(c for c in lab.cells() if _nbgrader(c, "solution"))
    with lab.step("41-validated-exercise-wrong"):
        lab.replace_cell_source(answer["index"], VALIDATE_WRONG_ANSWER)
        lab.run_all_cells(EXERCISE_RUN_TIMEOUT_S, lab_menu(language, "Run"))
        cells = lab.cells()
        failing = next(c for c in cells if error_outputs([c]))
        lab.cell(failing["index"]).scroll_into_view_if_needed()
        lab.shot("41-validated-exercise-wrong-fails")
        failed = _validate(lab, "42-validate-wrong", VALIDATE_FAILED)
        read = learner_reads(cells) + [("Validate dialog", traceback_prose(failed))]
        assert_no_english(language, read, "exercise-wrong", artifacts)

    with lab.step("43-validated-exercise-right"):
        lab.replace_cell_source(answer["index"], right_answer(answer))
        passed = _validate(lab, "43-validate-right", VALIDATE_PASSED)
        assert_no_english(language, [("Validate dialog", passed)], "exercise-right", artifacts)


# ----------------------------------------------------------------------------- nbgrader


@EVERY_LANGUAGE_TRANSLATIONS_END_TO_END
def test_learner_lab_lists_assignments_and_has_no_instructor_tools(lab: LabPage):
    with lab.step("10-learner-nbgrader-menu"):
        lab.page.locator(".lm-MenuBar-item").filter(has_text=NBGRADER_MENU).click()
        items = lab.page.locator(".lm-Menu-item")
        items.first.wait_for()
        commands = [
            items.nth(i).get_attribute("data-command")
            for i in range(items.count())
            if items.nth(i).is_visible()
        ]
        lab.shot("10-learner-nbgrader-menu")
        assert "nbgrader:open-assignment-list" in commands, commands
        assert "nbgrader:open-formgrader" not in commands, commands
        assert not any(c and "create-assignment" in c for c in commands), commands

    with lab.step("11-learner-assignments"):
        with lab.page.expect_response(lambda r: "/courses" in r.url) as answer:
            lab.page.locator('.lm-Menu-item[data-command="nbgrader:open-assignment-list"]').click()
        courses = answer.value
        assert courses.ok and courses.json()["success"], f"listing courses failed: {courses.text()}"
        lab.page.get_by_text("Released assignments").first.wait_for()
        lab.page.wait_for_timeout(1000)  # let a late error notification show up, if any
        lab.shot("11-learner-assignments")
        assert_no_banners(lab, "the learner's Assignments list")
    formgrader = lab.server.request("formgrader", timeout=10, missing_ok=True)
    assert formgrader is None, "the learner's server serves the formgrader"


def nbgrader_in(course: Path, exchange: Path, *args: str) -> None:
    """An instructor's nbgrader command in `course`, with the learner lab's exchange (a real
    nbgrader process: its configuration reads FXCOURSE_EXCHANGE, grader/nbgrader_config.py)."""
    env = dict(os.environ, FXCOURSE_EXCHANGE=str(exchange))
    command = [sys.executable, "-m", "nbgrader", *args]
    done = subprocess.run(command, cwd=course, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}{done.stderr}"[-3000:]


@SOURCE_LANGUAGE
def test_learner_fetches_and_submits_through_the_exchange(lab: LabPage, tmp_path):
    exercise = ASSIGNMENTS[0]
    course = instructor_steps.copy_course(tmp_path / "course", [exercise])
    nbgrader_in(course, lab.server.exchange, "generate_assignment", exercise)
    nbgrader_in(course, lab.server.exchange, "release_assignment", exercise)

    with lab.step("14-learner-fetches"):
        lab.menu(NBGRADER_MENU, "nbgrader:open-assignment-list")
        lab.assignment_item("released", exercise).first.wait_for()
        lab.click_assignment_button("released", exercise, "Fetch", then="fetched")
        lab.page.locator('[data-command="filebrowser:refresh"]').click()
        lab.page.locator(".jp-DirListing-itemText", has_text=exact(exercise)).wait_for()
        lab.shot("14-learner-fetched")
        assert_no_banners(lab, "the Assignments tab after Fetch")
    fetched = lab.server.workspace / exercise / f"{exercise}.ipynb"
    assert fetched.is_file(), f"Fetch did not put the exercise in the workspace: {fetched}"
    assert not (ROOT / exercise).exists(), f"Fetch also wrote {exercise}/ into the repository"

    with lab.step("15-learner-submits"):
        lab.click_assignment_button("fetched", exercise, "Submit", then="submitted")
        lab.shot("15-learner-submitted")
        assert_no_banners(lab, "the Assignments tab after Submit")
    nbgrader_in(course, lab.server.exchange, "collect", exercise)
    collected = list(Course.configured(course).submitted.glob(f"*/{exercise}/{exercise}.ipynb"))
    assert len(collected) == 1, f"collect found {collected}"


@SOURCE_LANGUAGE
def test_formgrader_lists_the_assignments_without_warnings(instructor: LabPage):
    lab = instructor
    with lab.step("12-nbgrader-menu"):
        lab.page.locator(".lm-MenuBar-item").filter(has_text=NBGRADER_MENU).click()
        formgrader = lab.page.locator('.lm-Menu-item[data-command="nbgrader:open-formgrader"]')
        formgrader.wait_for()
        lab.shot("12-instructor-nbgrader-menu")

    with lab.step("13-formgrader"):
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
        lab.shot("13-formgrader-manage-assignments")
        assert_no_banners(lab, "the formgrader")


def lab_server_log_errors(lab: LabPage) -> str:
    """The server log's last traceback, which says why a request failed."""
    log = lab.server.log_tail(20_000)
    start = log.rfind("Traceback")
    return log[start : start + 3000] if start >= 0 else log[-3000:]


# ----------------------------------------------------------------------------- course updates

# Three chapters as a learner leaves them with JupyterLab's default autosave on: one only opened,
# one edited where the course's update does not touch, one edited where it does.
OPENED_ONLY, EDITED, COLLIDING = CHAPTER_1, "02_fx_ir.ipynb", "03_graph_transforms.ipynb"
LEARNER_LINE = "# my own note"
AUTOSAVE_WAIT_S = 300  # JupyterLab's next autosave comes 10 times the last save's duration later


def _saved(path: Path, written, what: str) -> nbformat.NotebookNode:
    """The notebook at `path` once `written(notebook)` holds: autosave wrote it."""
    deadline = time.monotonic() + AUTOSAVE_WAIT_S
    while time.monotonic() < deadline:
        try:
            notebook = nbformat.read(path, as_version=4)
        except nbformat.reader.NotJSONError:  # read while the server was writing it: look again
            notebook = None
        if notebook is not None and written(notebook):
            return notebook
        time.sleep(0.5)
    raise AssertionError(f"JupyterLab's autosave did not write {what} in {AUTOSAVE_WAIT_S} s")


def _learn_with_autosave(lab: LabPage) -> None:
    """Open one chapter, edit the first code cell of two others; autosave writes all three."""
    folder = lab.server.workspace
    # JupyterLab falls back on the server's default kernel (Jupyter's own: python3), which the
    # learner's lab does not offer: the default must be the course's kernel.
    specs = json.loads(lab.server.request("api/kernelspecs"))
    assert (specs["default"], list(specs["kernelspecs"])) == (KERNEL, [KERNEL]), specs
    with lab.step("20-autosave-chapter-opened"):
        # The URL `make lab` prints, in a fresh browser profile: the chapter opens on the course's
        # kernel (wait_for_notebook), with no "Select Kernel" dialog (a banner).
        lab.page.goto(f"{lab.server.url}lab/tree/{OPENED_ONLY}?token={lab.server.token}")
        lab.wait_for_notebook(OPENED_ONLY, KERNEL)
        lab.shot("20-autosave-chapter-opened")
        assert_no_banners(lab, "a chapter opened from the printed URL with autosave on")
    _saved(
        folder / OPENED_ONLY,
        lambda nb: "version" in nb.metadata.get("language_info", {}),
        "the kernel's language_info into the chapter the learner only opened",
    )
    for name in (EDITED, COLLIDING):
        shot = f"21-autosave-{name.removesuffix('.ipynb')}"
        lab.menu("File", "application:close-all")  # one notebook in the page: cell(i) is its
        open_notebook(lab, name, shot)
        # The kernel's language_info makes the opened notebook dirty and autosave writes it; an
        # edit typed while that save is in flight can be marked saved with it (JupyterLab), so
        # type once that first save is on disk.
        _saved(
            folder / name,
            lambda nb: "version" in nb.metadata.get("language_info", {}),
            f"the kernel's language_info into {name}",
        )
        with lab.step(f"{shot}-edited"):
            first_code = nbformat.read(folder / name, as_version=4).cells[1]
            lab.replace_cell_source(1, f"{first_code.source}\n{LEARNER_LINE}")
            _saved(
                folder / name,
                lambda nb: nb.cells[1].source.endswith(LEARNER_LINE),
                f"the learner's edit of {name}",
            )
            assert_no_banners(lab, f"{name} edited with autosave on")


def _course_update(chapters: Path) -> dict[str, nbformat.NotebookNode]:
    """A copy of the course whose three chapters changed: text added to a markdown cell of the
    first two, and to the cell the learner edited in the third."""
    (chapters / "exercises").mkdir(parents=True)
    updated = {}
    for name in (OPENED_ONLY, EDITED, COLLIDING):
        notebook = nbformat.read(ROOT / "chapters" / name, as_version=4)
        changed = notebook.cells[1 if name == COLLIDING else 2]
        changed.source += "\nprint('new in the course')" if name == COLLIDING else " Updated."
        nbformat.write(notebook, chapters / name)
        updated[name] = notebook
    return updated


@SOURCE_LANGUAGE
def test_course_update_reaches_opened_and_edited_chapters_with_autosave_on(
    browser, autosave_lab_server, artifacts, language, tmp_path
):
    server = autosave_lab_server
    context = new_context(browser, language)
    try:
        _learn_with_autosave(LabPage(context.new_page(), server, artifacts))
    finally:
        context.close()  # no tab left to autosave over the sync

    # The sync `make lab` runs before it starts JupyterLab, from a course whose chapters changed.
    course = _course_update(tmp_path / "course" / "chapters")
    report = workspace.sync(server.workspace, tmp_path / "course", exchange=server.exchange)
    assert (report.updated, report.merged, report.kept) == ([OPENED_ONLY], [EDITED], [COLLIDING])

    opened = nbformat.read(server.workspace / OPENED_ONLY, as_version=4)
    assert workspace.cells_text(opened) == workspace.cells_text(course[OPENED_ONLY])
    edited = nbformat.read(server.workspace / EDITED, as_version=4)
    for changed in (opened, edited):  # each opens with a notice that the course changed it
        assert changed.cells[0].metadata.get(workspace.NOTICE_KEY), changed.cells[0].source
    assert edited.cells[2].source.endswith(LEARNER_LINE)
    assert edited.cells[3].source == course[EDITED].cells[2].source
    kept = nbformat.read(server.workspace / COLLIDING, as_version=4)
    assert kept.cells[2].source.endswith(LEARNER_LINE), "the learner's cell was not kept"
    beside = server.workspace / workspace.beside_name(COLLIDING)
    assert workspace.cells_text(nbformat.read(beside, as_version=4)) == workspace.cells_text(
        course[COLLIDING]
    )

    context = new_context(browser, language)
    try:
        lab = LabPage(context.new_page(), server, artifacts)
        with lab.step("22-update-notice"):
            lab.open_lab()
            open_notebook(lab, COLLIDING, "22-update-notice-at-the-top")
            notice = lab.cell(0)
            assert beside.name in notice.text_content(), notice.text_content()
            assert_no_banners(lab, "the notebook with the course update notice")
    finally:
        context.close()


# ----------------------------------------------------------------------------- progress


def _has_error_output(notebook: nbformat.NotebookNode) -> bool:
    return any(
        output.get("output_type") == "error"
        for cell in notebook.cells
        for output in cell.get("outputs", [])
    )


@SOURCE_LANGUAGE
def test_progress_agrees_with_validate_right_after_it(
    browser, autosave_lab_server, artifacts, language
):
    """A learner runs the exercise with a wrong answer (autosave keeps the failing outputs), fixes
    the answer and presses Validate without running the cells again: nbgrader says "Success!" and
    progress says passed, though the saved outputs still show the failure."""
    server, relative = autosave_lab_server, f"exercises/{EXERCISE}/{EXERCISE}.ipynb"
    path, solutions = server.workspace / relative, instructor_solutions(EXERCISE)
    context = new_context(browser, language)
    try:
        lab = LabPage(context.new_page(), server, artifacts)
        with lab.step("30-progress-exercise-wrong"):
            lab.open_lab()
            open_notebook(lab, relative, "30-progress-exercise-opened")
            _saved(path, lambda nb: "version" in nb.metadata.get("language_info", {}), relative)
            answers = [c for c in lab.cells() if _nbgrader(c, "solution")]
            for cell in answers:
                wrong = _grade_id(cell) == WRONG_SOLUTION_CELL
                code = WRONG_SOLUTION if wrong else solutions[_grade_id(cell)]
                lab.replace_cell_source(cell["index"], code)
            lab.run_all_cells(EXERCISE_RUN_TIMEOUT_S)
            lab.save_notebook()
            _saved(path, _has_error_output, "the failing test's output")
            failing = next(c for c in lab.cells() if error_outputs([c]))
            lab.cell(failing["index"]).scroll_into_view_if_needed()
            lab.shot("30-progress-exercise-wrong")
            assert progress.progress(server.workspace)["exercises"][EXERCISE][0] == "failing"

        with lab.step("31-progress-validate-fixed"):
            target = next(c for c in answers if _grade_id(c) == WRONG_SOLUTION_CELL)
            lab.replace_cell_source(target["index"], solutions[WRONG_SOLUTION_CELL])
            # Validate saves first: pressed while autosave is writing, the two saves race and
            # JupyterLab asks "File Changed". Saved now, the notebook is clean: autosave waits.
            lab.save_notebook()
            fixed = solutions[WRONG_SOLUTION_CELL].strip()
            _saved(path, lambda nb: any(c.source.strip() == fixed for c in nb.cells), "the fix")
            lab.page.locator(".validate-button").click()
            dialog = lab.page.locator(".jp-Dialog")
            dialog.get_by_text("Success! Your notebook passes all the tests.").wait_for(
                timeout=EXERCISE_RUN_TIMEOUT_S * 1000
            )
            lab.shot("31-progress-validate-success")
            dialog.locator(".jp-mod-accept").click()
        saved = nbformat.read(path, as_version=4)
        assert _has_error_output(saved), "the saved outputs no longer show the failure"
        found = progress.progress(server.workspace)
        assert found["exercises"][EXERCISE][0] == "passed", found["exercises"]
        assert found["as_of"][EXERCISE][0] == "checks ran", found["as_of"]
        shown = "\n".join(progress.report(server.workspace))
        (artifacts / "31-progress-after-validate.txt").write_text(shown + "\n")
        assert f"{EXERCISE}: passed ({relative})  [checks ran " in shown, shown
    finally:
        context.close()


# ----------------------------------------------------------------------------- an update while open


@EVERY_LANGUAGE_TRANSLATIONS_END_TO_END
def test_a_course_update_reaches_the_open_tabs_with_what_was_typed(
    browser, lab_server, artifacts, language, tmp_path
):
    """tests/browser_updates.py: typed and not saved, updated, both kept, no dialog; the notice
    and the lab's message in the language (words_of reads them from its catalog)."""
    context = new_context(browser, language)
    try:
        lab = LabPage(context.new_page(), lab_server, artifacts)
        with lab.step("50-lab-start"):
            lab.open_lab()
        browser_updates.update_reaches_the_open_tabs(
            lab, tmp_path / "course", words_of(language.code)
        )
    finally:
        context.close()
