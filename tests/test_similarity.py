"""`make similarity` on a made-up class (tests/similarity_class.py): 20 honest answers and 3
planted copies per exercise, uploaded as the learners' notebooks (the released starters with the
answer in the solution cell) and graded by `make autograde`, whose autograded notebooks
similarity reads. Every planted copy must rank above every other pair, including copies hidden
the ways an upload can hide them from a reader of the raw files (a cell whose metadata is null,
a byte that is not UTF-8, nbformat 3, a renamed notebook, a notebook over 32 MiB, the answer in
a cell of the learner's own); a notebook that could not be graded and a starter uploaded
unchanged are named with the reason; the page escapes what learners wrote. make test grades the
class of one exercise (the one holding the hidden copies); the end-to-end test, all three."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from released_course import copy_of
from similarity_class import PLANTED, answer, class_answers, honest_choices, planted_copy

from grader import instructor, similarity
from grader.course import STUDENT_VERSIONS, Course

ASSIGNMENTS = Course.configured().exercises  # this repository's

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = '</code></pre><script>alert("x")</script><img src=x onerror=alert(1)>'
HIDDEN_IN = "ex2_node_dump"  # the exercise whose class also holds the hidden copies
pytestmark = pytest.mark.xdist_group("similarity")


def starter(assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / STUDENT_VERSIONS / assignment / f"{assignment}.ipynb", 4)


def solution_cell(notebook) -> dict:
    return next(c for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("solution"))


def with_code(assignment: str, code: str) -> nbformat.NotebookNode:
    notebook = starter(assignment)
    solution_cell(notebook).source = code
    return notebook


def upload(uploads: Path, student: str, assignment: str, name: str, data: bytes) -> None:
    folder = uploads / student / assignment
    folder.mkdir(parents=True)
    (folder / name).write_bytes(data)


def hidden_copies(assignment: str) -> dict[str, tuple[int, str, bytes]]:
    """student -> (the learner copied, the notebook's file name, its bytes): a planted copy of
    a classmate's answer, hidden each way an upload can hide it from a reader of raw files."""
    copy = {
        n: planted_copy(answer(assignment, honest_choices()[n], (1, 0, 2, 3))) for n in range(9)
    }
    name = f"{assignment}.ipynb"
    null_metadata = json.loads(nbformat.writes(with_code(assignment, copy[1])))
    null_metadata["cells"].insert(1, nbformat.v4.new_code_cell("seen = True") | {"metadata": None})
    damaged = with_code(assignment, copy[2])
    damaged.cells.insert(0, nbformat.v4.new_markdown_cell("notes: caf\udce9 \udcff"))
    big = with_code(assignment, copy[7])
    last_code = [cell for cell in big.cells if cell.cell_type == "code"][-1]
    last_code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * (33 << 20))]
    added = starter(assignment)
    at = added.cells.index(solution_cell(added)) + 1
    added.cells.insert(at, nbformat.v4.new_code_cell(copy[8]))
    return {
        "hidden_null_metadata": (1, name, json.dumps(null_metadata).encode()),
        "hidden_not_utf8": (2, name, nbformat.writes(damaged).encode("utf-8", "surrogateescape")),
        "hidden_nbformat3": (
            4,
            name,
            nbformat.writes(nbformat.convert(with_code(assignment, copy[4]), 3), 3).encode(),
        ),
        "hidden_renamed": (
            6,
            "my work (1).ipynb",
            nbformat.writes(with_code(assignment, copy[6])).encode(),
        ),
        "hidden_over_32_mib": (7, name, nbformat.writes(big).encode()),
        "hidden_in_a_cell_of_its_own": (8, name, nbformat.writes(added).encode()),
    }


def compare(released_course, tmp_path_factory, assignments: list[str]) -> Path:
    """The class's uploads of these exercises collected, autograded, then compared."""
    course = copy_of(released_course, tmp_path_factory.mktemp("similarity"))
    uploads = tmp_path_factory.mktemp("uploads")
    for assignment in assignments:
        answers = class_answers(assignment)
        answers["learner03"] += f"\n# {HOSTILE}\nlong_line = {'x' * 300!r}\n"  # a pair shown
        for student, code in answers.items():
            notebook = nbformat.writes(with_code(assignment, code)).encode()
            upload(uploads, student, assignment, f"{assignment}.ipynb", notebook)
    for student, (_, name, data) in hidden_copies(HIDDEN_IN).items():
        upload(uploads, student, HIDDEN_IN, name, data)
    upload(uploads, "broken_upload", HIDDEN_IN, f"{HIDDEN_IN}.ipynb", b'{"cells": [')
    unchanged = nbformat.writes(starter(HIDDEN_IN)).encode()
    upload(uploads, "starter_unchanged", HIDDEN_IN, f"{HIDDEN_IN}.ipynb", unchanged)
    instructor.collect(uploads, course)
    command = [sys.executable, "-m", "grader.safegrade", "autograde"]
    graded = subprocess.run(command, cwd=course, capture_output=True, text=True, timeout=1500)
    assert graded.returncode == 0, graded.stderr[-3000:]
    command = [sys.executable, "-m", "grader.similarity", "--course", str(course)]
    command += ["--out", str(course / "out"), "--given", str(ROOT)]  # the chapters: ROOT's
    found = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert found.returncode == 0, found.stderr[-3000:]
    (course / "out" / "stderr.txt").write_text(found.stderr)
    return course


@pytest.fixture(scope="module")
def compared(released_course, tmp_path_factory) -> Path:
    """make test's: the class of the exercise that also holds the hidden copies."""
    return compare(released_course, tmp_path_factory, [HIDDEN_IN])


@pytest.fixture(scope="module")
def compared_in_every_exercise(released_course, tmp_path_factory) -> Path:
    return compare(released_course, tmp_path_factory, ASSIGNMENTS)


def pairs(compared: Path, assignment: str) -> list[dict]:
    with (compared / "out" / "similarity.csv").open() as handle:
        return [row for row in csv.DictReader(handle) if row["assignment"] == assignment]


def planted_copies_rank_first(compared: Path, assignment: str) -> None:
    rows = pairs(compared, assignment)
    hidden = hidden_copies(assignment) if assignment == HIDDEN_IN else {}
    answers = 23 + len(hidden)  # 20 honest, 3 planted, and the hidden copies
    assert len(rows) == answers * (answers - 1) // 2
    copies = {frozenset((f"learner{i:02d}", f"copier_of_learner{i:02d}")) for i, _ in PLANTED}
    copies |= {frozenset((f"learner{i:02d}", student)) for student, (i, _, _) in hidden.items()}
    planted = [float(r["score"]) for r in rows if {r["student_a"], r["student_b"]} in copies]
    others = [float(r["score"]) for r in rows if {r["student_a"], r["student_b"]} not in copies]
    assert len(planted) == len(PLANTED) + len(hidden)
    assert min(planted) > max(others), (sorted(planted), sorted(others)[-5:])
    print(assignment, "planted", sorted(planted), "highest honest", sorted(others)[-3:])


def test_every_planted_and_hidden_copy_ranks_above_every_honest_pair(compared):
    planted_copies_rank_first(compared, HIDDEN_IN)


@pytest.mark.end_to_end
def test_in_every_exercise_every_planted_copy_ranks_above_every_honest_pair(
    compared_in_every_exercise,
):
    """The same class in each exercise (make test grades one: this grades about 80 notebooks)."""
    for assignment in ASSIGNMENTS:
        planted_copies_rank_first(compared_in_every_exercise, assignment)
    page = (compared_in_every_exercise / "out" / "similarity.html").read_text()
    assert page.count("Every submission was compared.") == len(ASSIGNMENTS) - 1


def test_every_notebook_left_out_is_named_with_the_reason(compared):
    """An upload that could not be graded and one that is the starter unchanged are named on
    the page and on stderr, each with why; no other notebook is left out."""
    page = (compared / "out" / "similarity.html").read_text()
    stderr = (compared / "out" / "stderr.txt").read_text()
    for shown in (page, stderr):
        assert "broken_upload" in shown and "could not be graded" in shown, shown[-2000:]
        assert "starter_unchanged" in shown and "no code of its own" in shown, shown[-2000:]
        assert "hidden_" not in shown.split("broken_upload")[0][-200:]
    assert stderr.count("not compared") == 2, stderr


def test_a_notebook_that_breaks_the_reader_stops_no_other(tmp_path, monkeypatch):
    """One notebook that makes the reader raise is named; the rest are compared."""
    course = Course.configured(tmp_path)
    for index, student in enumerate(("ann", "ben", "cid")):
        folder = course.autograded / student / HIDDEN_IN
        folder.mkdir(parents=True)
        code = class_answers(HIDDEN_IN)[f"learner0{index}"]
        nbformat.write(
            with_code(HIDDEN_IN, code + f"\n# {student}\n"), folder / f"{HIDDEN_IN}.ipynb"
        )
    notebook = course.autograded / "ben" / HIDDEN_IN / f"{HIDDEN_IN}.ipynb"
    notebook.write_text(notebook.read_text().replace('"cells": [', '"cells": [null, 7, ', 1))
    real = similarity.own_code

    def breaks_on_ben(found, starter):
        if found["cells"][0] is None:
            raise KeyError("metadata")
        return real(found, starter)

    monkeypatch.setattr(similarity, "own_code", breaks_on_ben)
    given = similarity.GivenCode.of(Course.configured(ROOT))
    codes, left_out = similarity.answers(course, HIDDEN_IN, given)
    assert set(codes) == {"ann", "cid"} and "KeyError" in left_out["ben"]


def test_the_page_shows_pairs_side_by_side_escaped(compared):
    page = (compared / "out" / "similarity.html").read_text()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert page.count("<script") == 0
    assert "copier_of_learner03" in page and "<mark>" in page
    assert "does not say who copied whom" in page


def test_the_page_in_a_browser_runs_nothing_of_a_learner_and_passes_axe(compared):
    from axe_check import serious_violations
    from browser_lab import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    artifacts = ROOT / "test-artifacts" / "report"
    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        dialogs = []
        tab.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        tab.goto((compared / "out" / "similarity.html").as_uri())
        first = tab.locator("section.pair").first
        heading = first.locator("h3").inner_text()
        assert "copier_of_learner" in heading or "hidden_" in heading, heading  # a copy first
        assert first.locator("mark").count() >= 2  # matches marked on both sides
        first.screenshot(path=artifacts / "similarity-first-pair.png")
        assert tab.evaluate("document.documentElement.scrollWidth") <= 1280  # long lines wrap
        left_out = tab.locator("ul", has_text="broken_upload")
        assert left_out.is_visible() and "could not be graded" in left_out.inner_text()
        assert "starter_unchanged" in left_out.inner_text()
        left_out.screenshot(path=artifacts / "similarity-not-compared.png")
        tab.screenshot(path=artifacts / "similarity.png", full_page=True)
        assert serious_violations(tab) == []
        assert dialogs == []
        browser.close()


def test_why_a_learner_has_no_notebook_is_the_graders_record_as_the_standings_read_it(tmp_path):
    """make similarity reads the grader's verdict through grader/standings.py: a result file
    that a later grading superseded (the formgrader's button writes only the tests' record) is
    not what it reports."""
    from grader.safegrade import result_files

    course = Course(tmp_path, "c", Path("."))
    assert similarity.not_graded(course, "ann", "ex1") == "not graded yet: run make autograde"
    failed = result_files.SubmissionResult(
        "ann", "ex1", result_files.State.GRADER_FAILED, None, 0, "x"
    )
    path = result_files.result_path(course.results, "ann", "ex1")
    result_files.save(failed, path)
    said = similarity.not_graded(course, "ann", "ex1")
    assert said == "the grader failed on it: run make autograde again"
    result_files.save_tests(course.results, "ann", "ex1", [])
    record = result_files.tests_path(course.results, "ann", "ex1")
    os.utime(record, ns=(path.stat().st_mtime_ns + 10**9,) * 2)  # written after the result file
    assert similarity.not_graded(course, "ann", "ex1") != said


def test_the_code_learners_were_given_comes_from_the_courses_named(tmp_path):
    """A folder of LMS submissions has no course of its own: nothing counts as given until the
    course its learners had is named (--given); this checkout's starters are never read unasked."""
    scratch = Course(tmp_path, "lms", Path("."))
    alone = similarity.GivenCode.of(scratch)
    assert alone.starters(HIDDEN_IN) == [] and alone.chapters() == []
    given = similarity.GivenCode.of(scratch, Course.configured(ROOT))
    assert ROOT / STUDENT_VERSIONS / HIDDEN_IN / f"{HIDDEN_IN}.ipynb" in given.starters(HIDDEN_IN)
    assert given.chapters() and {path.parent for path in given.chapters()} == {ROOT / "solutions"}
    folder = scratch.autograded / "ann" / HIDDEN_IN
    folder.mkdir(parents=True)
    nbformat.write(starter(HIDDEN_IN), folder / f"{HIDDEN_IN}.ipynb")  # the starter, unchanged
    codes, left_out = similarity.answers(scratch, HIDDEN_IN, given)
    assert codes == {} and "no code of its own" in left_out["ann"]
    codes, left_out = similarity.answers(scratch, HIDDEN_IN, alone)
    assert "ann" in codes and left_out == {}
