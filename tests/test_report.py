"""grader/report.py's page and CSV from made-up class data (a graded class: test_grading.py):
learner text escaped in the page and inert in the CSV, the numbers per test, sorting in a browser
and no serious axe-core violation."""

from __future__ import annotations

import csv
import html
from pathlib import Path

import pytest

from grader import report
from grader.report import ABSENT, GRADED, GRADER_FAILED, NOT_GRADABLE, Exercise, Submission

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = '<script>alert("id")</script>'
MESSAGE = 'AssertionError: got <img src=x onerror=alert(1)> "=cmd|calc"'


def made_up_class() -> list[Exercise]:
    tests = ["test_a", "test_b"]
    rows = [
        Submission("ann", GRADED, 10.0, tests={"test_a": 5.0, "test_b": 5.0}),
        Submission(
            "ben", GRADED, 5.0, tests={"test_a": 5.0, "test_b": 0.0}, messages={"test_b": MESSAGE}
        ),
        Submission(
            HOSTILE,
            GRADED,
            4.0,
            3600 * 30,
            1.0,
            {"test_a": 5.0, "test_b": 0.0},
            {"test_b": MESSAGE},
        ),
        Submission("=HYPERLINK(1)", NOT_GRADABLE, reason=f"0: could not grade {HOSTILE}"),
        Submission("dan", GRADER_FAILED, reason="0: not graded: the grader failed"),
        Submission("eve", ABSENT),
    ]
    return [Exercise("ex1_sigmoid_to_tanh", tests, {"test_a": 5.0, "test_b": 5.0}, rows)]


def test_numbers_per_test_and_state():
    exercise = made_up_class()[0]
    found = {row.test: row for row in report.test_rows(exercise)}
    assert found["test_a"].passed == 3 and found["test_a"].pass_rate == 1.0
    assert found["test_b"].passed == 1 and found["test_b"].mean_points == pytest.approx(5 / 3)
    assert found["test_b"].messages == [(MESSAGE, 2)]
    counts = report.counts(exercise)
    assert counts == {GRADED: 3, NOT_GRADABLE: 1, GRADER_FAILED: 1, report.WAITING: 0, ABSENT: 1}


def test_learner_text_is_escaped_in_the_page_and_inert_in_the_csv(tmp_path):
    page = report.page(made_up_class(), {"ann": {"01": {"1.1": True, "1.2": False}}})
    assert HOSTILE not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&quot;id&quot;)&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # the page's own sorting script
    path = report.write_csv(tmp_path / "l.csv", report.learner_csv(made_up_class()[0], {}))
    rows = list(csv.reader(path.open()))
    assert ["'=HYPERLINK(1)"] == [row[0] for row in rows if "HYPERLINK" in row[0]]
    tests = report.write_csv(tmp_path / "t.csv", report.tests_csv(made_up_class()[0]))
    messages = [row[6] for row in csv.reader(tests.open()) if len(row) > 6]
    assert MESSAGE in messages  # starts with a letter: left as it is


def test_the_page_sorts_in_a_browser_and_passes_axe(tmp_path):
    from axe_check import serious_violations
    from browser_lab import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "report.html"
    page_file.write_text(report.page(made_up_class(), {"ann": {"01": {"1.1": True}}}))
    artifacts = ROOT / "test-artifacts" / "report"
    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        dialogs = []
        tab.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        tab.goto(page_file.as_uri())
        table = tab.locator("table.sortable")
        table.locator("thead button", has_text="score").click()
        learners = table.locator("tbody th").all_inner_texts()
        assert learners[-3:] == [HOSTILE, "ben", "ann"], learners  # 4, 5, 10 points
        scores = table.locator("tbody td:nth-of-type(2)").all_inner_texts()
        graded = [float(s) for s in scores if s]
        assert graded == sorted(graded), scores
        assert table.locator("th[aria-sort=ascending]").count() == 1
        tab.screenshot(path=artifacts / "made-up-class.png", full_page=True)
        assert serious_violations(tab) == []
        assert dialogs == []  # no learner's script ran
        browser.close()


def test_try_it_ids_a_learner_made_up_never_break_the_report(tmp_path):
    """The hub's progress service reads each learner's claim about their try-its: one id of
    5,000 digits (over Python's int() digit limit) stopped the class report. The service and
    the report keep only the course's own try-it ids, each in its own chapter; the report's
    order cannot raise whatever ids it is given."""
    import json
    import sys

    from grader.hub import progress_service
    from grader.report_model import stalled_tryits

    huge = "9" * 5000
    chapters = progress_service.course_shape().chapters
    claim = {"tryits": {name: {} for name in chapters}, "exercises": {}, "as_of": {}}
    claim["tryits"][chapters[0]] = {"1.1": True, huge: True, "2.1": True, f"1.{huge}": False}
    row = progress_service.checked(json.dumps(claim).encode())
    assert row["tryits"][chapters[0]] == {"1.1": True}  # 2.1 is chapter 2's
    sent = {"ann": {"tryits": claim["tryits"]}, "ben": "could not be read"}
    (tmp_path / "progress.json").write_text(json.dumps(sent))
    progress = report.read_progress(str(tmp_path / "progress.json"))
    assert progress["ann"]["01_symbolic_tracing.ipynb"] == {"1.1": True} and "ben" not in progress
    page = report.page(made_up_class(), progress)
    assert huge not in page and "1.1" in page
    order = stalled_tryits({"x": {"c": {huge: True, "2.10": False, "2.9": False, "a.b": True}}})
    assert [tid for tid, _, _ in order] == ["2.9", "2.10", huge, "a.b"]
    assert sys.get_int_max_str_digits() < 5000  # the limit the old key ran into


def test_try_its_passed_count_out_of_the_course_not_the_chapters_a_learner_saved():
    """A learner whose saved chapter 3 is missing has not passed its try-its: both learners'
    totals are out of the course's try-its, the per-try-it table out of both learners, and the
    page sorts the totals as numbers (10 above 9)."""
    from grader.report_model import Row, course_tryits, stalled_tryits, tryits_sort

    chapter = {tid: True for tid, name in course_tryits().items() if name.startswith("01_")}
    third = {tid: False for tid, name in course_tryits().items() if name.startswith("03_")}
    assert len(chapter) >= 2 and third  # the course's chapters 1 and 3 have try-its
    progress = {"ann": {"01_symbolic_tracing": chapter, "03_x": third}, "ben": {"01_x": chapter}}
    exercise = made_up_class()[0]
    rows = {row[0]: row for row in report.learner_csv(exercise, progress)}
    heading = report.learner_csv(exercise, progress)[0].index("tryits_passed")
    every = len(course_tryits())
    assert rows["ann"][heading] == rows["ben"][heading] == f"{len(chapter)}/{every}"
    assert rows["eve"][heading] == ""  # no progress read: nothing claimed
    assert {seen for _, _, seen in stalled_tryits(progress)} == {2}
    many = {"c": {f"1.{n}": True for n in range(10)}}
    few = {"c": {f"1.{n}": True for n in range(9)}}
    sort = {name: tryits_sort(Row(exercise, Submission(name, GRADED), {"a": many, "b": few}))
            for name in "ab"}  # fmt: skip
    assert sort == {"a": 10, "b": 9}


def wide_class() -> list[Exercise]:
    """Exercises with the real exercises' test names, long learner ids, try-its and a
    submission that could not be graded."""
    from grader.report_model import Exercise as Ex

    names = {
        "ex1_sigmoid_to_tanh": ["test_torch_sigmoid", "test_method_and_module",
                                "test_functional_spellings", "test_in_place", "test_graph_hygiene"],
        "ex2_node_dump": ["test_records", "test_targets", "test_arguments", "test_users",
                          "test_refers_to", "test_merge"],
    }  # fmt: skip
    exercises = []
    for exercise, tests in names.items():
        top = dict.fromkeys(tests, 2.0)
        page = f"feedback/x/{exercise}/{exercise}.html"
        rows = [
            Submission(
                f"learner{i:02d}_from_section_b", GRADED, 7.0, 3600 * 30, 1.0, top, {}, "", "", page
            )
            for i in range(4)
        ]
        rows.append(Submission("dave", NOT_GRADABLE, reason=CUT_OFF, detail=NOT_JSON))
        exercises.append(Ex(exercise, tests, top, rows))
    return exercises


CUT_OFF = "could not be graded: the notebook is cut off or corrupt: ask for a new upload"
NOT_JSON = (
    "nbformat.reader.NotJSONError: Notebook does not appear to be JSON: '{\\n \"cells\": ...'"
)


def test_the_learners_table_fits_1400_px_and_the_error_is_one_click_away(tmp_path):
    """Every column of the learners' tables, feedback links included, within a 1400 px window;
    a submission that could not be graded reads what to do, its error behind a click."""
    from browser_lab import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    progress = {
        f"learner{i:02d}_from_section_b": {"01_symbolic_tracing": {"1.1": True}} for i in range(4)
    }
    page_file = tmp_path / "report.html"
    page_file.write_text(report.page(wide_class(), progress))
    artifacts = ROOT / "test-artifacts" / "report"
    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1400, "height": 900})
        tab.goto(page_file.as_uri())
        assert tab.evaluate("document.documentElement.scrollWidth") <= 1400
        for table in tab.locator("table.sortable").all():
            assert table.bounding_box()["x"] + table.bounding_box()["width"] <= 1400
            assert table.locator("a", has_text="feedback").first.is_visible()
        problem = tab.locator("ul.problems li").first
        assert problem.inner_text().startswith(
            "dave (could not be graded): the notebook is cut off"
        )
        assert not problem.locator("code").is_visible()
        problem.locator("summary").click()
        assert "NotJSONError" in problem.locator("code").inner_text()
        tab.screenshot(path=artifacts / "report-1400px.png", full_page=True)
        browser.close()


def test_a_new_learner_column_is_one_row_and_shows_in_the_csv_and_the_page(monkeypatch):
    """The learners' CSV and the page's learners table come from one column table: a column
    added as one row there appears in both, with the same text, after the same column."""
    from grader import report_model
    from grader.report_model import Column, Row

    mark = lambda row: f"<{row.s.student}> late {row.s.seconds_late:.0f}"  # noqa: E731
    at = next(i for i, c in enumerate(report_model.LEARNER_COLUMNS) if c.name == "score") + 1
    columns = list(report_model.LEARNER_COLUMNS)
    columns.insert(at, Column("late_mark", "late mark", mark))
    monkeypatch.setattr(report_model, "LEARNER_COLUMNS", columns)
    exercise = made_up_class()[0]
    rows = report.learner_csv(exercise, {})
    where = rows[0].index("late_mark")
    assert rows[0][where - 1] == "score"
    marks = [mark(Row(exercise, s, {})) for s in exercise.submissions]
    assert [row[where] for row in rows[1:]] == marks
    page = report.page([exercise], {})
    assert ">late mark</button>" in page
    assert all(f"<td>{html.escape(text)}</td>" in page for text in marks)
    assert "&lt;ben&gt; late 0" in page and f"{HOSTILE} late 108000" not in page
    heads = page.split("<table class='sortable'>")[1].split("</thead>")[0]
    assert heads.index(">score<") < heads.index(">late mark<") < heads.index(">late<")
    monkeypatch.setattr(report_model, "LEARNER_COLUMNS", columns[:at] + columns[at + 1 :])
    assert "late_mark" not in report.learner_csv(exercise, {})[0]
    assert "late mark" not in report.page([exercise], {})


def test_a_new_test_column_is_one_row_and_shows_in_the_csv_and_the_page(monkeypatch):
    """The tests' CSV and the page's tests table come from one column table too: a column added
    as one row of TEST_COLUMNS appears in both, after the same column, in every per-message row
    of the CSV; removing the row removes it from both."""
    from grader import report_model
    from grader.report_model import Column

    failed = lambda row: f"<{row.graded - row.passed} failed>"  # noqa: E731
    at = next(i for i, c in enumerate(report_model.TEST_COLUMNS) if c.name == "passed") + 1
    columns = list(report_model.TEST_COLUMNS)
    columns.insert(at, Column("failed", "failed learners", failed))
    monkeypatch.setattr(report_model, "TEST_COLUMNS", columns)
    exercise = made_up_class()[0]
    rows = report.tests_csv(exercise)
    where = rows[0].index("failed")
    assert rows[0][where - 1] == "passed"
    by_test = {row[0]: row[where] for row in rows[1:]}
    assert by_test == {"test_a": "<0 failed>", "test_b": "<2 failed>"}
    assert [row[rows[0].index("message")] for row in rows[1:]] == ["", MESSAGE]
    page = report.page([exercise], {})
    table = page.split("<caption>Tests:")[1].split("</table>")[0]
    heads = table.split("</thead>")[0]
    assert heads.index(">passed<") < heads.index(">failed learners<") < heads.index(">pass rate<")
    assert "<td>&lt;0 failed&gt;</td>" in table and "<td>&lt;2 failed&gt;</td>" in table
    assert "<2 failed>" not in page  # escaped like every cell
    monkeypatch.setattr(report_model, "TEST_COLUMNS", columns[:at] + columns[at + 1 :])
    assert "failed" not in report.tests_csv(exercise)[0]
    assert "failed learners" not in report.page([exercise], {})
