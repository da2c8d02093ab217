"""`make similarity` on a made-up class (tests/similarity_class.py): 20 honest answers and 3
planted copies per exercise, written into classdata/submitted/ of a scratch course as the learners'
notebooks (the released starters with the answer in the solution cell). Every planted copy must
rank above every other pair; the page escapes what learners wrote."""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat
import pytest
from similarity_class import PLANTED, class_answers

from grader import similarity
from grader.course_grader import ASSIGNMENTS, STUDENT_VERSIONS, SUBMITTED

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = '</code></pre><script>alert("x")</script><img src=x onerror=alert(1)>'


def write_class(course: Path, assignment: str, answers: dict[str, str]) -> None:
    starter = nbformat.read(ROOT / STUDENT_VERSIONS / assignment / f"{assignment}.ipynb", 4)
    for student, code in answers.items():
        notebook = nbformat.from_dict(starter)
        solution = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("solution"))
        solution.source = code
        folder = course / SUBMITTED / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{assignment}.ipynb")


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> Path:
    course = tmp_path_factory.mktemp("similarity")
    for assignment in ASSIGNMENTS:
        answers = class_answers(assignment)
        answers["learner05"] += f"\n# {HOSTILE}\n"
        write_class(course, assignment, answers)
    assert similarity.main(["--course", str(course), "--out", str(course / "out")]) == 0
    return course


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_planted_copy_ranks_above_every_honest_pair(compared, assignment):
    with (compared / "out" / "similarity.csv").open() as handle:
        rows = [row for row in csv.DictReader(handle) if row["assignment"] == assignment]
    assert len(rows) == 23 * 22 // 2  # every pair of 20 honest and 3 planted answers
    copies = {frozenset((f"learner{i:02d}", f"copier_of_learner{i:02d}")) for i, _ in PLANTED}
    planted = [float(r["score"]) for r in rows if {r["student_a"], r["student_b"]} in copies]
    others = [float(r["score"]) for r in rows if {r["student_a"], r["student_b"]} not in copies]
    assert len(planted) == len(PLANTED)
    assert min(planted) > max(others), (sorted(planted), sorted(others)[-5:])
    print(assignment, "planted", sorted(planted), "highest honest", sorted(others)[-3:])


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
        assert "copier_of_learner" in first.locator("h3").inner_text()
        assert first.locator("mark").count() >= 2  # matches marked on both sides
        first.screenshot(path=artifacts / "similarity-first-pair.png")
        assert serious_violations(tab) == []
        assert dialogs == []
        browser.close()
