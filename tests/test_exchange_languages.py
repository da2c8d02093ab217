"""A class with Chinese and English learners, through nbgrader's exchange for real: the instructor
releases exercise 1 in both languages (grader/exercises.py: `ex1_sigmoid_to_tanh-zh` is its own
assignment, graded by the same hidden tests), a learner fetches each (the workspace's own nbgrader
settings, fxcourse.workspace), answers wrongly and submits; the instructor collects, autogrades
in the sandbox and generates feedback. The Chinese feedback holds the Chinese notebook and
Chinese messages from the visible tests' checks (verify.py) and the hidden ones (checks.py); the
English one is English. Both learners are this test's own account (the exchange names a
submission after the owner of its folder): one submits the Chinese assignment, one the English.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from english_prose import english_found, html_prose, learner_reads

from courseware.repository import HERE
from fxcourse.workspace import write_nbgrader_config
from grader import exercises, instructor
from grader.course import REPOSITORY, Course

# Its own class and gradebook; a whole class round trip, so `make test-end-to-end` runs it.
pytestmark = [pytest.mark.xdist_group("exchange_languages"), pytest.mark.end_to_end]
EX1 = "ex1_sigmoid_to_tanh"
EX1_ZH = exercises.translated(EX1, "zh")
# Wrong twice: torch.sigmoid becomes the in-place torch.tanh_ (a check only the hidden side makes,
# in checks.py) and a sigmoid method or module stays (verify.py's check_rewrite, as in the cell).
WRONG_ANSWER = """\
def replace_sigmoid_with_tanh(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.sigmoid:
            node.target = torch.tanh_
    gm.recompile()
    return gm
"""
# A cell the learner added before the last test removes the answer: that test's probe fails with
# the grader's own message (grader/safegrade/wording.py), not a check's.
REMOVED = "del replace_sigmoid_with_tanh"
# What each language's feedback says of them: (the hidden test's, the visible test's, the
# grader's own).
SAID = {
    EX1: (
        "an in-place tanh is no replacement",
        "the rewritten graph still computes a sigmoid",
        "replace_sigmoid_with_tanh is not defined: run the cell that defines it",
    ),
    EX1_ZH: ("原地 tanh 不能代替", "重写后的图在", "replace_sigmoid_with_tanh 没有定义：请先运行"),
}
CJK = re.compile(r"[\u4e00-\u9fff]")


def run(command: list[str], cwd: Path, env: dict) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}{done.stderr}"[-4000:]
    return done.stdout + done.stderr


def nbgrader(cwd: Path, env: dict, *args: str) -> str:
    return run([sys.executable, "-m", "nbgrader", *args], cwd, env)


def answer_wrongly(notebook: Path) -> None:
    nb = nbformat.read(notebook, as_version=4)
    cells = [c for c in nb.cells if "def replace_sigmoid_with_tanh" in c.source]
    assert len(cells) == 1 and cells[0].metadata.nbgrader["solution"], "no answer cell"
    cells[0].source = WRONG_ANSWER
    last_test = max(
        i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade")
    )
    nb.cells.insert(last_test, nbformat.v4.new_code_cell(REMOVED))
    nbformat.write(nb, notebook)


@pytest.fixture(scope="module")
def class_graded(tmp_path_factory, class_languages) -> Path:
    """The course after both learners' submissions went through the exchange and were graded
    (its class has Chinese learners: the instructor's configuration names zh)."""
    scratch = tmp_path_factory.mktemp("class")
    course = class_languages(instructor.copy_course(scratch / "course", [EX1]), "en", "zh")
    env, configured = dict(os.environ), Course.configured(course)
    learner = scratch / "learner"
    learner.mkdir()
    # The learner's workspace points at the exchange of the instructor's course (and creates it).
    write_nbgrader_config(learner, configured.exchange, configured.course_id)
    instructor.release(course)
    for assignment in (EX1_ZH, EX1):
        nbgrader(course, env, "release_assignment", assignment)
        nbgrader(learner, env, "fetch_assignment", assignment)
        answer_wrongly(learner / assignment / f"{assignment}.ipynb")
        nbgrader(learner, env, "submit", assignment)
    grader = [sys.executable, "grader/course_grader.py"]
    run([*grader, "collect"], course, env)
    run([sys.executable, "-m", "grader.safegrade", "autograde"], course, env)
    run([*grader, "feedback"], course, env)
    return course


def test_the_chinese_learner_fetches_the_chinese_notebook(class_graded):
    submitted = Course.configured(class_graded).submitted
    (zh,) = submitted.glob(f"*/{EX1_ZH}/{EX1_ZH}.ipynb")
    practice = REPOSITORY / "chapters" / "zh" / "exercises" / EX1 / f"{EX1}.ipynb"
    # the practice copy's first cell (its links one folder deeper: chapters/zh/exercises/ex1/)
    first = nbformat.read(practice, as_version=4).cells[0].source.replace("](../../", "](../")
    assert nbformat.read(zh, as_version=4).cells[0].source == first
    (en,) = submitted.glob(f"*/{EX1}/{EX1}.ipynb")
    assert not CJK.search(nbformat.read(en, as_version=4).cells[0].source)


def reads(notebook: Path) -> list[tuple[str, str]]:
    nb = nbformat.read(notebook, as_version=4)
    return learner_reads(
        [
            {"index": i, "type": c.cell_type, "source": c.source, "outputs": c.get("outputs")}
            for i, c in enumerate(nb.cells)
        ]
    )


def messages(notebook: Path) -> list[str]:
    """The failing tests' messages in an autograded notebook."""
    nb = nbformat.read(notebook, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {})]
    return [o.evalue for c in cells for o in c.outputs if o.output_type == "error"]


@pytest.mark.parametrize("assignment", [EX1_ZH, EX1])
def test_feedback_speaks_the_assignments_language(class_graded, assignment):
    (graded,) = Course.configured(class_graded).autograded.glob(f"*/{assignment}/*.ipynb")
    found = messages(graded)
    hidden, visible, grader = SAID[assignment]
    assert any(hidden in m for m in found), found  # checks.py's own check
    assert any(visible in m for m in found), found  # verify.py's, called by checks.py
    assert any(grader in m for m in found), found  # the grader's (the probe's NameError)
    (page,) = Course.configured(class_graded).feedback.glob(f"*/{assignment}/{assignment}.html")
    text = page.read_text()
    shown = [html.escape(m, quote=False) for m in found]
    assert all(m in text for m in shown), "a message of the graded notebook is not in its feedback"
    if assignment == EX1_ZH:
        assert all(CJK.search(m) for m in found), found
        assert english_found(reads(graded)) == []
        assert english_found([("feedback", html_prose(text))]) == []
    else:  # the same detector finds the English learner's messages
        assert not any(CJK.search(m) for m in found), found
        errors = [(where, text) for where, text in reads(graded) if "(error)" in where]
        assert english_found(errors), errors


def test_the_export_counts_either_language_as_the_exercise(class_graded):
    out = class_graded / "grades.csv"
    instructor.export(class_graded, out)
    header = out.read_text().splitlines()[0]
    assert header == f"student_id,{EX1},total"


def test_the_grader_finds_each_exercises_translations_in_the_catalogs():
    from grader.safegrade import assignments

    assert assignments.installed_catalogs() == HERE.locales
    assert assignments.catalogs_of(REPOSITORY) == HERE.locales
    assert exercises.languages_of(EX1) == ["zh"] and exercises.split(EX1_ZH) == (EX1, "zh")
    assert exercises.split(f"{EX1}-xx") == (f"{EX1}-xx", "")  # not a language of the course


def test_a_class_is_released_in_english_only_unless_its_configuration_names_more(
    tmp_path, class_languages
):
    course = instructor.copy_course(tmp_path / "course", [EX1])
    assert exercises.assignments_of(course) == (EX1,)
    (course / exercises.SOURCE / EX1_ZH).mkdir()  # left by a release when the class had zh
    assert exercises.write_translations(course) == (EX1,)
    assert not (course / exercises.SOURCE / EX1_ZH).exists()  # the formgrader would list it
    class_languages(course, "en", "zh")
    assert exercises.assignments_of(course) == (EX1, EX1_ZH)


def test_a_language_the_course_does_not_have_is_refused_by_name(tmp_path, class_languages):
    course = class_languages(instructor.copy_course(tmp_path / "course", [EX1]), "en", "fr")
    with pytest.raises(SystemExit, match=r"ClassLanguages.languages: no language 'fr' .*en, zh"):
        exercises.assignments_of(course)
