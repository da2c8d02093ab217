"""An exercise is its folder under solutions/: a throw-away exercise, `cosine_swap`, written into
a temporary copy of the course (never the repository) and nothing else, is released, graded in the
sandbox and exported by the instructor's pipeline beside the course's own exercises. Its graphs
use a function (torch.cos) and a module type of its own (Scale, made with an argument) that no
other exercise declares; the trusted side rebuilds them from its declaration, and refuses a
function it does not declare.

And no file of the course's code outside solutions/<exercise>/ names an exercise.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from submissions.build import Snippet, reference_solutions, submission, write_submission

from grader import exercises, instructor
from grader.course import Course

ASSIGNMENTS = Course.configured().exercises  # this repository's
COURSE_ID = Course.configured().course_id

ROOT = Path(__file__).resolve().parents[1]
NAME = "cosine_swap"  # no exNN_ prefix: the course finds it by its folder, not by a pattern
pytestmark = pytest.mark.xdist_group("new-exercise")  # its own course copy and gradebook

PROBES = '''"""The throw-away exercise's probes and its graphs' vocabulary."""

import operator

import torch
import torch.nn as nn

from grader.safegrade.graph_data import Vocabulary, linear_arguments
from grader.safegrade.probing import learner


class Scale(nn.Module):
    """x * factor: a module type of this exercise's own, made with an argument."""

    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


GRAPHS = Vocabulary(
    functions=(torch.cos, torch.sin, operator.mul),
    modules={nn.Linear: linear_arguments, Scale: lambda module: (module.factor,)},
    local=(Scale,),
)


def swapped(namespace, case):
    gm = GRAPHS.build(case["graph"], codegen=True)
    return {"graph": GRAPHS.describe(learner(namespace, "swap_cos_for_sin")(gm))}


test_swapped = test_outputs = swapped
'''
CHECKS = '''"""The throw-away exercise's inputs and checks (the trusted side)."""

import torch
import torch.fx
import torch.nn as nn

from grader.safegrade.probing import sibling

verify = sibling(__file__, "verify")
probes = sibling(__file__, "probes")
GRAPHS, Scale = probes.GRAPHS, probes.Scale


class Wave(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.lin, self.scale = nn.Linear(3, 3), Scale(factor)

    def forward(self, x):
        return self.scale(torch.cos(self.lin(x))) * 2


class Tracer(torch.fx.Tracer):
    def is_leaf_module(self, module, qualified_name):
        return isinstance(module, Scale) or super().is_leaf_module(module, qualified_name)


def inputs(grade_id, seed):
    generator = torch.Generator().manual_seed(seed)
    model = Wave(1.0 + seed % 5)
    with torch.no_grad():
        for tensor in model.state_dict().values():
            tensor.copy_(torch.randn(tensor.shape, generator=generator))
    gm = torch.fx.GraphModule(model, Tracer().trace(model))
    sample = torch.randn(2, 3, generator=generator)
    return {"graph": GRAPHS.describe(gm, state=True), "sample": sample}


def test_swapped(data, case):
    verify.check_swapped(GRAPHS.build(data["graph"], case["graph"]))


def test_outputs(data, case):
    rebuilt, sent = GRAPHS.build(data["graph"], case["graph"]), GRAPHS.build(case["graph"])
    with torch.no_grad():
        want = sent.scale(torch.sin(sent.lin(case["sample"]))) * 2
        verify.check_outputs(rebuilt(case["sample"]), want)
'''
VERIFY = """import torch


def check_swapped(gm):
    targets = [node.target for node in gm.graph.nodes if node.op == "call_function"]
    assert torch.cos not in targets, "a torch.cos node is left"
    assert torch.sin in targets, "no torch.sin node"


def check_outputs(got, want):
    assert torch.allclose(got, want), "the outputs are not those of the model with sin"
"""
SETUP = """import torch
import torch.fx
import torch.nn as nn
from verify import check_outputs, check_swapped


class Wave(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return torch.cos(self.lin(x)) * 2


x = torch.randn(2, 3)"""
SOLUTION = """def swap_cos_for_sin(gm):
    ### BEGIN SOLUTION
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.cos:
            node.target = torch.sin
    gm.recompile()
    return gm
    ### END SOLUTION"""
TESTS = {
    "test_swapped": (3, "check_swapped(swap_cos_for_sin(torch.fx.symbolic_trace(Wave())))"),
    "test_outputs": (
        2,
        "wave = torch.fx.symbolic_trace(Wave())\n"
        "want = torch.sin(wave.lin(x)) * 2\n"
        "check_outputs(swap_cos_for_sin(wave)(x), want)",
    ),
}
# An answer whose visible tests pass, with a function its exercise never declared: torch.exp.
UNDECLARED = """def swap_cos_for_sin(gm):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.cos:
            node.target = torch.sin
            with gm.graph.inserting_after(node):
                gm.graph.call_function(torch.exp, (node,))
    gm.recompile()
    return gm"""


def nbgrader_cell(source: str, grade_id: str, **flags) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    meta = {"grade": False, "solution": False, "locked": True, "task": False} | flags
    cell.metadata["nbgrader"] = meta | {"grade_id": grade_id, "schema_version": 3}
    return cell


def write_exercise(course: Path) -> None:
    """The exercise's folder, and only that: its notebook, probes, checks and verify.py."""
    folder = course / exercises.SOURCE / NAME
    folder.mkdir()
    cells = [
        nbgrader_cell(SETUP, "setup"),
        nbgrader_cell(SOLUTION, "swap", solution=True, locked=False),
    ]
    cells += [
        nbgrader_cell(source, grade_id, grade=True, points=points)
        for grade_id, (points, source) in TESTS.items()
    ]
    kernel = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": kernel})
    nbformat.write(nb, folder / f"{NAME}.ipynb")
    for name, text in (("probes", PROBES), ("checks", CHECKS), ("verify", VERIFY)):
        (folder / f"{name}.py").write_text(text)


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    """A copy of the course with the exercise added, released, and three of its submissions
    collected and graded as `make autograde` grades them."""
    course = instructor.copy_course(tmp_path_factory.mktemp("course"))
    write_exercise(course)
    instructor.release(course, publish_to=course / "published")
    student = nbformat.read(Course.configured(course).release / NAME / f"{NAME}.ipynb", 4)
    source = nbformat.read(course / exercises.SOURCE / NAME / f"{NAME}.ipynb", 4)
    answers = {"reference": {}, "undeclared": {"swap": UNDECLARED}}
    uploads = tmp_path_factory.mktemp("uploads")
    for name, cells in answers.items():
        answered = submission(student, reference_solutions(source), Snippet(name, NAME, 5, cells))
        write_submission(uploads, name, NAME, answered)
    write_submission(uploads, "untouched", NAME, student)
    assert not instructor.collect(uploads, course).refused
    command = [sys.executable, "-m", "grader.safegrade", "autograde", "--Execute.timeout=20"]
    run = subprocess.run(command, cwd=course, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return course


def reason(course: Path, student: str) -> str:
    path = Course.configured(course).results / NAME / f"{student}.json"
    return json.loads(path.read_text())["reason"]


def test_the_course_finds_the_exercise_by_its_folder(graded):
    assert NAME in exercises.names(graded)
    assert set(exercises.names(ROOT)) < set(exercises.names(graded))
    assert NAME not in ASSIGNMENTS  # the repository's own list never names it


def test_release_writes_the_hidden_tests_and_hands_out_none(graded):
    published = (graded / "published" / NAME / f"{NAME}.ipynb").read_text()
    assert "BEGIN SOLUTION" not in published and "HIDDEN" not in published
    assert "raise NotImplementedError" in published and "check_swapped" in published
    assert sorted(p.name for p in (graded / "published" / NAME).iterdir()) == [
        f"{NAME}.ipynb",
        "verify.py",
    ]
    from nbgrader.api import Gradebook

    with Gradebook(Course.configured(graded).gradebook_url, COURSE_ID) as gradebook:
        notebook = gradebook.find_notebook(NAME, NAME)
        sources = {cell.name: cell.source for cell in notebook.source_cells}
    for grade_id in TESTS:
        assert sources[grade_id].endswith(exercises.hidden_tests(NAME, grade_id)), grade_id
        assert f'run_check("{NAME}", "{grade_id}", globals())' in sources[grade_id]


def test_the_sandbox_grades_it_by_its_own_probes_checks_and_vocabulary(graded):
    got = {student: row.get(NAME) for student, row in instructor.scores(graded).items()}
    assert got == {"reference": 5, "untouched": 0, "undeclared": 0}, reason(graded, "undeclared")
    assert "NotImplementedError" in reason(graded, "untouched")
    assert "torch.exp" in reason(graded, "undeclared")
    assert "never runs" in reason(graded, "undeclared")


def test_export_has_its_column_beside_the_course_exercises(graded, tmp_path):
    with instructor.export(graded, tmp_path / "grades.csv").open() as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["student_id", *exercises.names(graded), "total"]
    by_student = {row[0]: dict(zip(rows[0][1:], row[1:], strict=True)) for row in rows[1:]}
    assert by_student["reference"][NAME] == "5" and by_student["reference"]["total"] == "5"
    assert by_student["untouched"][NAME] == "0"
    with (tmp_path / "grades_by_test.csv").open() as handle:
        header = next(csv.reader(handle))
    columns = [f"{NAME}:{name}" for name in [*TESTS, "late_penalty"]]
    assert [column for column in header if column.startswith(f"{NAME}:")] == columns


# ----------------------------------------------------------------------------- no names elsewhere

COURSE_CODE = ("grader/**/*.py", "grader/*.mk", "Makefile", "nbgrader_config.py", "fxcourse/*.py")


def test_no_file_of_the_course_code_names_an_exercise():
    """Outside solutions/ (and tests and docs), the exercises are found, never named."""
    names = exercises.names(ROOT)
    assert names, "the course has no exercise"
    files = sorted({path for pattern in COURSE_CODE for path in ROOT.glob(pattern)})
    assert len(files) > 20, files
    naming = {
        path.relative_to(ROOT): [name for name in names if name in path.read_text()]
        for path in files
    }
    assert not {path: found for path, found in naming.items() if found}
