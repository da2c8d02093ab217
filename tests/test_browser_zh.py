"""Each translation's lab in a real browser (fxcourse.languages' registry; today Chinese): what
its learner reads in chapter 1 and exercise 1.

Per translation, starts the learner's lab as `make lab LANG=<code>` does (its chapters, JupyterLab
in its language pack, whose menu labels the test reads from the pack; in a scratch workspace)
and drives Debian's headless Chromium with Playwright, with the browser fixture and steps of
tests/test_browser.py: chapter 1 runs top to bottom; in exercise 1 the learner types
a wrong answer, runs the notebook and presses nbgrader's Validate button, then types the right
answer and presses Validate again. A course update made while two chapters are open, one with
an attempt typed and not saved, goes into the open tabs (tests/browser_updates.py).

Everything the learner reads on the way is collected: the chapters' Markdown, every output of
every code cell (printed text, HTML boxes, error messages) and the text of each Validate dialog.
None of it may hold an English sentence (`english_sentences`): a run of four or more English
words joined by single spaces (commas allowed), outside code. Code is what the learner reads as
code: the code cells themselves, Markdown's code spans and fenced blocks, <code>/<pre> in HTML
outputs (the revealed reference answers), the source lines a traceback quotes, and in printed
text the Python source a cell prints (`print(gm.code)`) and objects' reprs (`<built-in ...>`).
A printed line "ClassName: message" quotes a library's exception or warning verbatim (the learner
meets the same text in their own code; the chapter explains it in Chinese) and is left out too.
What else may stay English is listed, and is named in the Chinese README: nbgrader's own labels
and Python's traceback header (UNTRANSLATED_LABELS), and the names of papers and document
sections a chapter cites (CITED_NAMES). Pictures (graphs, charts) are not read.

What a learner reads is checked for English sentences with a detector built for a script other
than Latin (tests/english_prose.py): a translation written in Latin letters needs its own.

Screenshots go to test-artifacts/browser-<code>/ (git-ignored), with the server's log.
"""

from __future__ import annotations

import importlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_lab import LabPage, error_outputs, visible_banners, warning_outputs
from browser_updates import update_reaches_the_open_tabs, words_of
from english_prose import (
    CHINESE_README,
    UNTRANSLATED_LABELS,
    english_found,
    english_sentences,
    html_prose,
    learner_reads,
    printed_prose,
    traceback_prose,
)
from lab_runner import running_lab
from test_browser import (  # noqa: F401  (browser: a fixture, shared with the English test)
    CHAPTER_1,
    CHAPTER_RUN_TIMEOUT_S,
    EXERCISE_RUN_TIMEOUT_S,
    KERNEL,
    RepoGuard,
    browser,
    instructor_solutions,
)

from fxcourse import languages
from fxcourse.languages import Language

# Labs of their own (the English test's labs are English), so a worker of their own.
pytestmark = pytest.mark.xdist_group("browser-translations")

ROOT = Path(__file__).resolve().parents[1]
EXERCISE = "ex1_sigmoid_to_tanh"
EXERCISE_PATH = f"exercises/{EXERCISE}/{EXERCISE}.ipynb"
# A learner's first try: only the torch.sigmoid spelling, so the method and module spellings fail.
WRONG_ANSWER = """\
def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.sigmoid:
            node.target = torch.tanh
    gm.recompile()
    return gm"""

# ----------------------------------------------------------------------------- the detector


@pytest.mark.parametrize(
    "text",
    [
        "Not yet: the checkpoint wants a GraphModule.",
        "<div class='box'><b>Stuck?</b> Show the reference answer</div>",
        "AssertionError: x.sigmoid(): the pass left a sigmoid node in the graph",
    ],
)
def test_an_english_sentence_is_found(text):
    prose = html_prose(text) if text.startswith("<") else traceback_prose(text)
    assert english_sentences(prose), text


@pytest.mark.parametrize(
    "text",
    [
        "还没有通过：检查点需要一个 GraphModule。",
        "def forward(self, x):\n    relu = torch.relu(x);  x = None\n    return relu",
        "opcode         name    target                   args        kwargs",
        "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor",
        "Success! Your notebook passes all the tests.",
        "<p>看看 <code>print the graph of this model</code></p><pre>for node in graph nodes</pre>",
    ],
)
def test_code_chinese_and_nbgrader_labels_are_not_english_sentences(text):
    prose = html_prose(text) if text.startswith("<") else printed_prose(text)
    assert not english_sentences(prose), english_sentences(prose)


def test_the_chinese_readme_names_every_label_left_in_english():
    readme = CHINESE_README.read_text(encoding="utf-8")
    assert [label for label in UNTRANSLATED_LABELS if label not in readme] == []


def test_printed_code_library_messages_and_reprs_are_not_the_course_s_english():
    printed = (
        "def forward(self, x):\n    _assert = torch._assert(eq, 'x has been specialized to have"
        " value True');  eq = None\n    return x\n\n"
        "torch.fx.proxy.TraceError: symbolically traced variables cannot be used as inputs\n"
        "call_function  sigmoid  <built-in method sigmoid of type object at 0x7f>\n"
        "要的是 relu，得到的是： tensor([1.])"
    )
    assert english_sentences(printed_prose(printed)) == []
    for course_line in ("Note: the graph has three nodes", "the graph has three nodes"):
        assert english_sentences(printed_prose(printed + "\n" + course_line)), course_line


def test_a_traceback_is_read_without_its_source_lines():
    traceback = (
        "\x1b[31mAssertionError\x1b[39m                            Traceback (most recent call"
        ' last)\nCell \x1b[32mIn[14]\x1b[39m, line 3\n----> 3 check_spelling("x.sigmoid()",'
        " tanh of the input here)\n\x1b[31mAssertionError\x1b[39m: x.sigmoid()：应为 tanh"
    )
    assert english_sentences(traceback_prose(traceback)) == []
    assert english_sentences(traceback_prose(traceback + ", not the original sigmoid node"))


# ----------------------------------------------------------------------------- the lab


def lab_menu(language: Language, label: str) -> str:
    """A top menu's label ("Run", "File") as the lab's language pack for `language` shows it."""
    pack = importlib.import_module(f"jupyterlab_language_pack_{language.lab_locale}")
    folder = Path(pack.__file__).parent / "locale" / language.lab_locale / "LC_MESSAGES"
    words = json.loads((folder / "jupyterlab.json").read_text(encoding="utf-8"))
    return (words.get(f"menu\x04{label}") or words[label])[0]


def browser_locale(language: Language) -> str:
    return language.lab_locale.replace("_", "-")


@pytest.fixture(scope="module", params=languages.TRANSLATIONS, ids=lambda t: t.code)
def translation(request) -> Language:
    return request.param


@pytest.fixture(scope="module")
def artifacts(translation) -> Path:
    folder = ROOT / "test-artifacts" / f"browser-{translation.code}"
    folder.mkdir(parents=True, exist_ok=True)
    for stale in [*folder.glob("*.png"), *folder.glob("*.txt")]:
        stale.unlink()
    print(f"{translation.label} lab screenshots: {folder}/")
    return folder


@pytest.fixture(scope="module")
def translated_lab_server(translation, artifacts):
    guard = RepoGuard()
    code = translation.code
    with tempfile.TemporaryDirectory(prefix=f"fxcourse-lab-{code}-") as scratch:
        with running_lab(ROOT, Path(scratch), artifacts / "lab.log", language=code) as server:
            yield server
    problems = guard.problems()
    assert not problems, f"the {code} lab wrote into the repository:\n" + "\n".join(problems)


@pytest.fixture
def translated_lab(browser, translated_lab_server, translation, artifacts) -> Iterator[LabPage]:  # noqa: F811
    viewport, locale = {"width": 1400, "height": 900}, browser_locale(translation)
    context = browser.new_context(viewport=viewport, locale=locale)
    try:
        page = LabPage(context.new_page(), translated_lab_server, artifacts)
        with page.step("00-lab-start"):
            page.open_lab()
        yield page
    finally:
        context.close()


def _open(lab: LabPage, relative: str, shot: str) -> None:
    with lab.step(shot):
        lab.double_click_path(relative)
        lab.wait_for_notebook(relative, KERNEL)
        lab.shot(shot)


def _assert_no_english(read: list[tuple[str, str]], where: str, artifacts: Path) -> None:
    (artifacts / f"{where}-read.txt").write_text(
        "\n\n".join(f"## {place}\n{text}" for place, text in read) + "\n"
    )
    english = english_found(read)
    assert not english, f"{where}: English sentences a translation's learner reads:\n" + "\n".join(
        english
    )


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


def test_a_translations_learner_reads_no_english_sentence(
    translated_lab: LabPage, translation, artifacts
):
    lab = translated_lab
    run_menu, file_menu = lab_menu(translation, "Run"), lab_menu(translation, "File")
    _open(lab, CHAPTER_1, "01-chapter1-opened")
    with lab.step("02-chapter1-ran"):
        lab.run_all_cells(CHAPTER_RUN_TIMEOUT_S, run_menu)
        cells = lab.cells()
        assert not error_outputs(cells), error_outputs(cells)
        boxes = lab.page.locator(".fxcourse-checkpoint")
        assert boxes.count() >= 3, "chapter 1 shows no checkpoint boxes"
        boxes.first.scroll_into_view_if_needed()
        lab.page.wait_for_timeout(500)  # pictures above it finish laying out, then look again
        boxes.first.scroll_into_view_if_needed()
        lab.shot("02-chapter1-ran-not-yet")
        assert not visible_banners(lab.page) + warning_outputs(cells)
        _assert_no_english(learner_reads(cells), "chapter1", artifacts)

    lab.menu(file_menu, "application:close-all")  # one notebook in the page: cell(i) is its
    lab.page.locator(".jp-Dialog .jp-mod-warn").click()  # "Save your work?": discard
    lab.page.locator(".jp-Dialog").wait_for(state="hidden")
    _open(lab, EXERCISE_PATH, "03-exercise-opened")
    answer = next(c for c in lab.cells() if (c.get("nbgrader") or {}).get("solution"))
    with lab.step("04-exercise-wrong"):
        lab.replace_cell_source(answer["index"], WRONG_ANSWER)
        lab.run_all_cells(EXERCISE_RUN_TIMEOUT_S, run_menu)
        cells = lab.cells()
        failing = next(c for c in cells if error_outputs([c]))
        lab.cell(failing["index"]).scroll_into_view_if_needed()
        lab.shot("04-exercise-wrong-fails")
        failed = _validate(lab, "05-validate-wrong", "The following cell failed:")
        read = learner_reads(cells) + [("Validate dialog", traceback_prose(failed))]
        _assert_no_english(read, "exercise-wrong", artifacts)

    with lab.step("06-exercise-right"):
        lab.replace_cell_source(answer["index"], right_answer(answer))
        passed = _validate(lab, "06-validate-right", "Success! Your notebook passes all the tests.")
        _assert_no_english([("Validate dialog", passed)], "exercise-right", artifacts)


def right_answer(stub: dict) -> str:
    """The instructor's solution under the translated stub's own first lines (def and docstring)."""
    solution = instructor_solutions(EXERCISE)[stub["nbgrader"]["grade_id"]].splitlines()
    head = stub["source"].splitlines()[:2]
    assert solution[0] == head[0] and solution[1].lstrip().startswith('"""'), solution[:2]
    return "\n".join(head + solution[2:])


def test_a_course_update_reaches_the_open_translated_tabs_with_what_was_typed(
    browser,  # noqa: F811
    translated_lab_server,
    translation,
    artifacts,
    tmp_path,
):
    """tests/browser_updates.py in a translation's lab: the notice and the lab's message in its
    language (words_of reads them from its catalog)."""
    viewport, locale = {"width": 1400, "height": 900}, browser_locale(translation)
    context = browser.new_context(viewport=viewport, locale=locale)
    try:
        lab = LabPage(context.new_page(), translated_lab_server, artifacts)
        with lab.step("50-lab-start"):
            lab.open_lab()
        update_reaches_the_open_tabs(lab, tmp_path / "course", words_of(translation.code))
    finally:
        context.close()
