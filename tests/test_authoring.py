"""Learner chapters and answers.json are derived from solutions/ and carry no answers."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from courseware import authoring, reference_solutions
from courseware.notebooks import kernelspec
from courseware.repository import HERE
from fxcourse import stamps
from grader.safegrade.staging import GRADER_ONLY

SOURCES = sorted(HERE.sources.glob("[0-9][0-9]_*.ipynb"))


def test_learner_chapters_and_answers_are_up_to_date():
    stale = authoring.stale_files()
    assert not stale, f"run `make chapters`: stale {[str(p) for p in stale]}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_no_answer_or_mistake_reaches_the_learner_chapter(source):
    nb = nbformat.read(source, as_version=4)
    assert not authoring.problems(nb, source.stem)
    learner_text = (HERE.chapters / source.name).read_text()
    learner_sources = [c.source for c in nbformat.reads(learner_text, as_version=4).cells]
    for cell in nb.cells:
        marker = authoring.tryit_of(cell)
        if marker and marker[1] in ("answer", "mistake"):
            body = cell.source.strip()
            assert body not in learner_text and body not in learner_sources, (
                f"the {marker[1]} of try it {marker[0]} is in chapters/{source.name}"
            )


def test_every_answer_is_in_answers_json_and_nothing_else_is():
    answers = stamps.unstamped_json(json.loads(HERE.answers.read_text()))
    expected = {}
    for source in SOURCES:
        expected.update(authoring.answers_of(nbformat.read(source, as_version=4), source.stem))
    assert answers == expected


CHECK_CELL = """from fxcourse.cases import built_once

goal = "double x"
with checkpoint("1.1", goal) as check:
    check(double(2) == 4, "not doubled")
"""


def _tryit(tid, role, source="x = 1"):
    return new_code_cell(source, metadata={"tryit": {"id": tid, "role": role}})


def test_problems_names_missing_roles_wrong_order_and_silent_mistakes():
    good = [_tryit("1.1", "scaffold"), _tryit("1.1", "mistake", "# wrong\nx = 2")]
    good += [_tryit("1.1", "answer"), _tryit("1.1", "check", CHECK_CELL)]
    assert authoring.problems(new_notebook(cells=good), "01_x") == []
    no_mistake = new_notebook(cells=[good[0], good[2], good[3]])
    assert "want 1 scaffold, 1+ mistake" in authoring.problems(no_mistake, "01_x")[0]
    swapped = new_notebook(cells=[good[0], good[1], good[3], good[2]])
    assert "in the order" in authoring.problems(swapped, "01_x")[0]
    silent = new_notebook(cells=[good[0], _tryit("1.1", "mistake"), good[2], good[3]])
    assert "open with a comment" in authoring.problems(silent, "01_x")[0]
    assert "start with '2.'" in authoring.problems(new_notebook(cells=good), "02_x")[0]


@pytest.mark.parametrize(
    "top_level",
    [
        "SIGMOID_NODES = {'sigmoid'}",
        "def is_linear(node):\n    return True",
        "from fxcourse.cases import built_once as once",
        "from fxcourse.compiler_cases import RulePasses",
        "import numbers",
    ],
)
def test_a_check_cell_that_binds_a_helper_of_its_own_is_refused(top_level):
    """Whatever a check cell binds replaces a learner's object of that name (red team redN:
    3.1's SIGMOID_NODES, 3.2's is_linear): its helpers live in fxcourse modules."""
    cells = [_tryit("1.1", "scaffold"), _tryit("1.1", "mistake", "# wrong\nx = 2")]
    cells += [_tryit("1.1", "answer"), _tryit("1.1", "check", CHECK_CELL)]
    assert authoring.problems(new_notebook(cells=cells), "01_x") == []
    cells[3] = _tryit("1.1", "check", CHECK_CELL.replace("\ngoal", f"{top_level}\n\ngoal"))
    (problem,) = authoring.problems(new_notebook(cells=cells), "01_x")
    assert "check cell" in problem and top_level.split("\n")[0].split()[-1] in problem


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_every_name_a_check_cell_imports_is_a_function_of_fxcourse(source):
    nb = nbformat.read(source, as_version=4)
    for tryit_id, roles in authoring.tryits(nb).items():
        for statement in ast.parse(nb.cells[roles["check"][0]].source).body:
            if isinstance(statement, ast.ImportFrom):
                module = importlib.import_module(statement.module)
                for alias in statement.names:
                    imported = getattr(module, alias.name)
                    assert inspect.isfunction(imported), f"{tryit_id}: {alias.name} is no function"


def test_learner_version_keeps_scaffold_and_check_only():
    cells = [new_code_cell("import torch"), _tryit("1.1", "scaffold", "x = ...")]
    cells += [_tryit("1.1", "mistake", "# no\nx = 2"), _tryit("1.1", "answer", "x = 3")]
    cells += [_tryit("1.1", "check", "check(x)")]
    learner = authoring.learner_version(new_notebook(cells=cells))
    assert learner.cells[0].id == "fxcourse-kernel-check"
    assert [c.source for c in learner.cells[1:]] == ["import torch", "x = ...", "check(x)"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_kernel_without_the_course_stops_at_the_first_cell_and_says_which_to_pick(
    language, tmp_path
):
    folder = HERE.chapters / ("" if language == "en" else language)
    chapter = nbformat.read(folder / SOURCES[0].name, as_version=4)
    first = next(cell for cell in chapter.cells if cell.cell_type == "code")
    assert first.id == "fxcourse-kernel-check"
    # -S: no site-packages, so neither torch nor fxcourse, as in a kernel of another Python
    bare = [sys.executable, "-I", "-S", "-c", first.source]
    run = subprocess.run(bare, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and kernelspec()["display_name"] in run.stderr, run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith("ModuleNotFoundError: ")
    course = subprocess.run([sys.executable, "-c", first.source], cwd=tmp_path, timeout=60)
    assert course.returncode == 0


@pytest.mark.parametrize("readme", ["README.md", "env/student-edition/README.md"])
def test_the_readmes_list_every_chapter(readme):
    text = (HERE.root / readme).read_text()
    missing = [p.name for p in SOURCES if f"`{p.name}`" not in text]
    assert not missing, f"{readme} does not list {missing}"


def _exercise(*cells):
    """A source notebook of an exercise: (source, is a solution cell) per code cell."""
    made = [
        new_code_cell(text, metadata={"nbgrader": {"solution": solution}})
        for text, solution in cells
    ]
    return new_notebook(cells=made)


def test_an_exercises_reference_is_its_notebooks_solution_with_what_it_uses():
    """solution.py: the solution cells without their markers, after the statements of the
    cells before them that define what the solutions use (verify's names loaded as checks.py
    loads them); what they do not use is left out."""
    notebook = _exercise(
        (
            "import time\n\nimport torch\nfrom verify import Ops, shown\n\n"
            "_ = torch.manual_seed(0)",
            False,
        ),
        ("demo = time.time()\nTIMED = Ops.timed", False),
        (
            "def f(x):\n    ### BEGIN SOLUTION\n    return shown(x) in TIMED\n    ### END SOLUTION",
            True,
        ),
    )
    module = reference_solutions.solution_module(notebook, "ex9")
    assert "### BEGIN SOLUTION" not in module and "    return shown(x) in TIMED\n" in module
    assert "manual_seed" not in module and "demo" not in module and "import time" not in module
    assert 'verify = sibling(__file__, "verify")\nOps = verify.Ops' in module
    assert "shown = verify.shown" in module and "TIMED = Ops.timed" in module
    code = compile(module, "solution.py", "exec")
    assert "f" in code.co_names


def test_a_solution_that_uses_what_no_earlier_import_defines_is_refused():
    notebook = _exercise(
        ("import torch\n\n\ndef helper(x):\n    return x", False),
        (
            "def f(x):\n    ### BEGIN SOLUTION\n    return helper(torch.tensor(x))\n"
            "    ### END SOLUTION",
            True,
        ),
    )
    with pytest.raises(SystemExit, match="use helper, which no import"):
        reference_solutions.solution_module(notebook, "ex9")


def test_the_reference_solution_lives_in_the_notebook_only():
    """Every exercise's solution.py is derived (the stale test holds it to its notebook), the
    grader alone reads it, and no checks.py repeats a line of it."""
    derived = authoring.exercise_solutions()
    notebooks = HERE.sources.glob("*/*.ipynb")
    assert {p.parent for p in derived} == {p.parent for p in notebooks if p.stem == p.parent.name}
    for path, text in derived.items():
        body = [line.strip() for line in text.splitlines() if line.startswith("    ")]
        lines = {line for line in body if len(line) > 30}  # the solutions' code
        checks = (path.parent / "checks.py").read_text()
        assert not [line for line in lines if line in checks], f"{path.parent}/checks.py"
    assert reference_solutions.FILE in GRADER_ONLY


def test_a_translations_source_folder_takes_the_solution_along(tmp_path):
    """make release's folder of an exercise in a translation: its notebook under the
    assignment's name, and the grader's solution.py and probes.py as they are."""
    from grader import exercises, instructor

    exercise = "ex2_node_dump"
    course = instructor.copy_course(tmp_path / "course", [exercise])
    target = exercises.write_translation(course, exercise, "zh")
    names = {"checks.py", f"{exercise}-zh.ipynb", "probes.py", "solution.py", "verify.py"}
    assert {path.name for path in target.iterdir()} == names
    solution = HERE.sources / exercise / reference_solutions.FILE
    assert (target / reference_solutions.FILE).read_text() == solution.read_text()


# A count of exercises written in prose: "three graded exercises", "12 exercises", "三道计分练习".
NUMBERS = {
    **{word: n for n, word in enumerate("two three four five six seven eight nine ten".split(), 2)},
    **{char: n for n, char in enumerate("一二三四五六七八九十", 1)},
    "两": 2,
}
COUNTED = re.compile(
    r"\b(\d+|" + "|".join(w for w in NUMBERS if w.isascii()) + r")\s+(?:graded\s+)?exercises\b"
    r"|(\d+|[一二两三四五六七八九十])\s*[道个](?:计分)?练习",
    re.IGNORECASE,
)


def counts_written(text: str) -> list[int]:
    found = [one or other for one, other in COUNTED.findall(text)]
    return [int(n) if n.isdigit() else NUMBERS[n.lower()] for n in found]


def test_a_count_of_exercises_in_prose_is_read():
    text = "The Four graded exercises, 12 exercises, 三道计分练习, 两个练习; one exercise each."
    assert counts_written(text) == [4, 12, 3, 2]


def test_no_hand_written_count_of_exercises_disagrees_with_the_exercises_found():
    """The learner's texts (the READMEs, the website's own pages, the chapters, every catalog)
    either name no number of exercises or the number grader.exercises finds in solutions/."""
    from grader import exercises

    root = HERE.root
    found = len(exercises.names(root))
    texts = [
        *root.glob("*.md"), *(root / "env" / "student-edition").glob("*.md"),
        *(root / "courseware" / "website").glob("*.py"), *SOURCES,
        *root.glob("courseware/locale/*/*.po"), *root.glob("fxcourse/locale/*/*.po"),
    ]  # fmt: skip
    wrong = {
        path.relative_to(root).as_posix(): written
        for path in texts
        if (written := [n for n in counts_written(path.read_text()) if n != found])
    }
    assert found and not wrong, f"{found} exercises found; texts that say otherwise: {wrong}"
