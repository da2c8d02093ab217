"""The class at a glance (`make report`): per exercise, how scores spread, who submitted, who was
late, which test most learners fail and with which message, and each learner's row.

    python -m grader.report [--course DIR] [--out DIR] [--progress JSON|-] [--stdout]

Read from the gradebook (nbgrader's Gradebook API), the grader's result files
(classdata/autograded/.safegrade/<assignment>/<student>.json: graded, could not be graded, grader
failed) and the autograded notebooks (the message each failing test printed, which is what the
learner's feedback shows; the tests' own code, hidden or not, is never read). Writes
classdata/reports/report.html and, per exercise, <assignment>.csv (a row per learner) and
<assignment>_tests.csv (a row per test). `--progress` adds each learner's try-it progress: the
JSON the class hub's progress page gathers ({account: {"tryits": {chapter: {id: passed}}}}).

Everything a learner could have shaped (ids, messages that echo their output) is HTML-escaped in
the page and made inert in the CSV (a cell that starts like a formula gets a leading quote).
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import html
import io
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grader.course_grader import (
    ASSIGNMENTS,
    AUTOGRADED,
    CLASSDATA,
    COURSE_ID,
    FEEDBACK,
    GRADEBOOK,
    ROOT,
    SUBMITTED,
    source_order,
)

REPORTS = CLASSDATA / "reports"
RESULTS = AUTOGRADED / ".safegrade"
MESSAGE_CAP = 300  # characters of one failure message shown
# What a submission of an exercise came to; "graded" is the only state with a score.
GRADED, NOT_GRADED, GRADER_FAILED = "graded", "could not be graded", "grader failed"
WAITING, ABSENT = "not graded yet", "not submitted"
STATES = (GRADED, NOT_GRADED, GRADER_FAILED, WAITING, ABSENT)
RESULT_STATES = {"graded": GRADED, "error": NOT_GRADED, "grader-error": GRADER_FAILED}


@dataclass
class Submission:
    """One learner's standing on one exercise."""

    student: str
    state: str
    score: float | None = None  # after the late penalty
    seconds_late: float = 0.0
    penalty: float = 0.0
    tests: dict[str, float | None] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)  # failing test -> what it printed
    reason: str = ""  # the grader's one line, for a submission it could not grade
    feedback: str | None = None  # the feedback page, relative to the course


@dataclass
class Exercise:
    name: str
    tests: list[str]  # graded cells, in the notebook's order
    points: dict[str, float]  # test -> its maximum
    submissions: list[Submission]

    @property
    def max_score(self) -> float:
        return sum(self.points.values())


# ----------------------------------------------------------------------------- reading


def read_class(course: Path = ROOT) -> list[Exercise]:
    """Every exercise with every learner the gradebook, the submissions or the results know."""
    from nbgrader.api import Gradebook

    exercises = []
    with Gradebook(f"sqlite:///{course / GRADEBOOK}", COURSE_ID) as gradebook:
        known = {student.id for student in gradebook.students}
        for assignment in ASSIGNMENTS:
            tests, points = graded_cells(gradebook, course, assignment)
            students = (
                known | folders(course / SUBMITTED, assignment) | result_files(course, assignment)
            )
            rows = [standing(gradebook, course, assignment, s) for s in sorted(students)]
            exercises.append(Exercise(assignment, tests, points, rows))
    return exercises


def graded_cells(gradebook, course: Path, assignment: str) -> tuple[list[str], dict[str, float]]:
    from nbgrader.api import MissingEntry

    try:
        notebooks = gradebook.find_assignment(assignment).notebooks
    except MissingEntry:
        return [], {}
    points = {cell.name: cell.max_score for nb in notebooks for cell in nb.grade_cells}
    return sorted(points, key=source_order(course, assignment)), points


def folders(root: Path, assignment: str) -> set[str]:
    return {path.parent.name for path in root.glob(f"[!.]*/{assignment}") if path.is_dir()}


def result_files(course: Path, assignment: str) -> set[str]:
    return {path.stem for path in (course / RESULTS / assignment).glob("*.json")}


def result(course: Path, assignment: str, student: str) -> dict:
    try:
        found = json.loads((course / RESULTS / assignment / f"{student}.json").read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def standing(gradebook, course: Path, assignment: str, student: str) -> Submission:
    """What the gradebook and the grader's result file say of one learner's exercise."""
    from nbgrader.api import MissingEntry

    outcome = result(course, assignment, student)
    state = RESULT_STATES.get(outcome.get("status"), "")
    try:
        graded = gradebook.find_submission(assignment, student)
    except MissingEntry:
        graded = None
    if graded is None or state in (NOT_GRADED, GRADER_FAILED):
        submitted = (course / SUBMITTED / student / assignment).is_dir()
        state = state or (WAITING if submitted else ABSENT)
        return Submission(student, state, reason=str(outcome.get("reason", ""))[:MESSAGE_CAP])
    penalty = graded.late_submission_penalty or 0.0
    tests = {g.name: g.score for nb in graded.notebooks for g in nb.grades}
    page = FEEDBACK / student / assignment / f"{assignment}.html"
    return Submission(
        student,
        GRADED,
        score=max(0.0, graded.score - penalty),
        seconds_late=graded.total_seconds_late or 0.0,
        penalty=penalty,
        tests=tests,
        messages=printed_messages(course / AUTOGRADED / student / assignment),
        feedback=str(page) if (course / page).exists() else None,
    )


def printed_messages(folder: Path) -> dict[str, str]:
    """Failing test -> the error it printed ("AssertionError: ..."), lines joined by " / ": what
    the learner's feedback shows for it (its traceback cut to this); the cell's code is never
    read."""
    import nbformat
    from nbgrader import utils

    found = {}
    for path in sorted(folder.glob("*.ipynb")):
        try:
            cells = nbformat.read(path, as_version=4).cells
        except Exception:  # noqa: BLE001 - an unreadable notebook has no messages to group
            continue
        for cell in cells:
            if not (utils.is_grade(cell) and cell.cell_type == "code"):
                continue
            got, top = utils.determine_grade(cell)
            if got != top:
                found[cell.metadata.nbgrader["grade_id"]] = first_error(cell)
    return found


def first_error(cell) -> str:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            text = ": ".join(filter(None, (output.get("ename"), output.get("evalue"))))
            lines = [" ".join(line.split()) for line in str(text).split("\n")]
            shown = " / ".join(line for line in lines if line)
            if len(shown) > MESSAGE_CAP:
                shown = shown[:MESSAGE_CAP] + "..."
            return shown or "an error without a message"
    return "no error printed (the test's points were not given)"


def read_progress(source: str | None) -> dict[str, dict]:
    """{account: {chapter: {try-it id: passed}}}, from the hub progress page's JSON; accounts whose
    progress could not be read (a string in place of the data) are left out."""
    if not source:
        return {}
    text = sys.stdin.read() if source == "-" else Path(source).read_text()
    claim = json.loads(text)
    progress = {}
    for account, row in claim.items() if isinstance(claim, dict) else ():
        tryits = row.get("tryits") if isinstance(row, dict) else None
        if isinstance(tryits, dict):
            progress[str(account)] = {
                str(chapter): {str(k): v is True for k, v in marks.items()}
                for chapter, marks in tryits.items()
                if isinstance(marks, dict)
            }
    return progress


# ----------------------------------------------------------------------------- numbers


def graded(exercise: Exercise) -> list[Submission]:
    return [s for s in exercise.submissions if s.state == GRADED]


def counts(exercise: Exercise) -> dict[str, int]:
    found = Counter(s.state for s in exercise.submissions)
    return {state: found[state] for state in STATES}


def test_rows(exercise: Exercise) -> list[dict]:
    """Per test: its points, how many passed, the pass rate, mean points and the messages of
    those who failed, most frequent first."""
    done, rows = graded(exercise), []
    for test in exercise.tests:
        top = exercise.points[test]
        got = [s.tests.get(test) or 0.0 for s in done]
        passed = sum(1 for points in got if points >= top)
        messages = Counter(s.messages[test] for s in done if test in s.messages)
        rows.append(
            {
                "test": test,
                "points": top,
                "graded": len(done),
                "passed": passed,
                "pass_rate": passed / len(done) if done else None,
                "mean_points": sum(got) / len(done) if done else None,
                "messages": messages.most_common(),
            }
        )
    return rows


def tryit_totals(progress: dict[str, dict], student: str) -> str:
    chapters = progress.get(student)
    if chapters is None:
        return ""
    marks = [ok for chapter in chapters.values() for ok in chapter.values()]
    return f"{sum(marks)}/{len(marks)}"


def stalled_tryits(progress: dict[str, dict]) -> list[tuple[str, int, int]]:
    """(try-it id, learners who passed it, learners whose chapter was read), fewest passes first."""
    passed, seen = Counter(), Counter()
    for chapters in progress.values():
        for chapter in chapters.values():
            for tid, ok in chapter.items():
                seen[tid] += 1
                passed[tid] += ok
    order = sorted(seen, key=lambda tid: (passed[tid] / seen[tid], [int(p) for p in numbers(tid)]))
    return [(tid, passed[tid], seen[tid]) for tid in order]


def numbers(tid: str) -> list[str]:
    return [part for part in tid.split(".") if part.isdigit()]


def points(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def late_text(seconds: float) -> str:
    if seconds <= 0:
        return ""
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


# ----------------------------------------------------------------------------- CSV


def inert(value: object) -> str:
    """A CSV cell no spreadsheet runs: text that starts like a formula gets a leading quote."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def write_csv(path: Path, rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        for row in rows:
            writer.writerow([inert(cell) for cell in row])
    return path


def learner_csv(exercise: Exercise, progress: dict[str, dict]) -> list[list[object]]:
    head = ["student_id", "state", "score", "max_score", "seconds_late", "late_penalty"]
    rows = [head + exercise.tests + ["tryits_passed", "reason"]]
    for s in exercise.submissions:
        row = [s.student, s.state, points(s.score), points(exercise.max_score)]
        row += [f"{s.seconds_late:.0f}" if s.seconds_late > 0 else "", points(s.penalty or None)]
        row += [points(s.tests.get(test)) if s.state == GRADED else "" for test in exercise.tests]
        rows.append(row + [tryit_totals(progress, s.student), s.reason])
    return rows


def tests_csv(exercise: Exercise) -> list[list[object]]:
    rows = [["test", "points", "graded", "passed", "pass_rate", "mean_points", "message", "count"]]
    for row in test_rows(exercise):
        rate = "" if row["pass_rate"] is None else f"{row['pass_rate']:.3f}"
        mean = "" if row["mean_points"] is None else f"{row['mean_points']:.3f}"
        base = [row["test"], points(row["points"]), row["graded"], row["passed"], rate, mean]
        rows += [base + [message, count] for message, count in row["messages"]] or [base]
    return rows


# ----------------------------------------------------------------------------- the page


def histogram(exercise: Exercise) -> tuple[str, str]:
    """(a PNG as a data: URL, its text alternative) of the graded scores, one bar per point."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    scores = [s.score for s in graded(exercise)]
    top = max(int(round(exercise.max_score)), 1)
    edges = list(range(top + 2))
    figure, axes = pyplot.subplots(figsize=(6, 2.6), dpi=100)
    heights, _, _ = axes.hist(scores, bins=edges, color="#1f5f99", edgecolor="white", align="left")
    axes.set_xticks(range(top + 1))
    axes.set_xlabel(f"score (out of {exercise.max_score:g}, after late penalties)")
    axes.set_ylabel("learners")
    axes.yaxis.get_major_locator().set_params(integer=True)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    pyplot.close(figure)
    bars = [f"{edges[i]}: {int(h)}" for i, h in enumerate(heights) if h]
    alt = (
        f"Histogram of the {len(scores)} graded scores of {exercise.name} out of "
        f"{exercise.max_score:g}; learners per score, rounded down: "
        + ("; ".join(bars) if bars else "none")
        + "."
    )
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode(), alt


def page(exercises: list[Exercise], progress: dict[str, dict], link_base: str = "..") -> str:
    """The whole report, escaped: every text from the class passes through html.escape."""
    sections = [exercise_section(e, progress, link_base) for e in exercises]
    if progress:
        sections.append(tryit_section(progress))
    index = "".join(
        f'<li><a href="#{html.escape(e.name)}">{html.escape(e.name)}</a></li>' for e in exercises
    )
    return PAGE.format(index=index, body="\n".join(sections), script=SORT_SCRIPT)


def exercise_section(exercise: Exercise, progress: dict[str, dict], link_base: str) -> str:
    name = html.escape(exercise.name)
    found = counts(exercise)
    summary = "".join(f"<tr><th scope='row'>{s}</th><td>{found[s]}</td></tr>" for s in STATES)
    late = [s for s in exercise.submissions if s.seconds_late > 0]
    summary += f"<tr><th scope='row'>late</th><td>{len(late)}</td></tr>"
    parts = [f'<section aria-labelledby="h-{name}"><h2 id="h-{name}">{name}</h2>']
    parts.append(f"<table class='small'><caption>Submissions</caption>{summary}</table>")
    if graded(exercise):
        data, alt = histogram(exercise)
        parts.append(f'<img src="{data}" alt="{html.escape(alt)}" width="600" height="260">')
    parts.append(tests_table(exercise))
    parts.append(learners_table(exercise, progress, link_base))
    problems = [s for s in exercise.submissions if s.state in (NOT_GRADED, GRADER_FAILED)]
    if problems:
        items = "".join(
            f"<li>{html.escape(s.student)} ({s.state}): {html.escape(s.reason)}</li>"
            for s in problems
        )
        parts.append(f"<h3>Not graded, and why</h3><ul>{items}</ul>")
    return "\n".join(parts) + "</section>"


def tests_table(exercise: Exercise) -> str:
    if not exercise.tests:
        return "<p>No test cells in the gradebook yet (generate the exercise first).</p>"
    rows = []
    for row in test_rows(exercise):
        rate = "" if row["pass_rate"] is None else f"{row['pass_rate']:.0%}"
        mean = "" if row["mean_points"] is None else f"{row['mean_points']:.2f}"
        failed = row["graded"] - row["passed"]
        messages = "".join(
            f"<li><strong>{count} of {failed}</strong>: <code>{html.escape(message)}</code></li>"
            for message, count in row["messages"]
        )
        rows.append(
            f"<tr><th scope='row'>{html.escape(row['test'])}</th><td>{points(row['points'])}</td>"
            f"<td>{row['passed']}/{row['graded']}</td><td>{rate}</td><td>{mean}</td>"
            f"<td><ul class='messages'>{messages}</ul></td></tr>"
        )
    head = "<tr>" + "".join(f"<th scope='col'>{h}</th>" for h in TEST_HEADS) + "</tr>"
    caption = "Tests: pass rate, mean points, and what the failing learners read"
    return f"<table><caption>{caption}</caption><thead>{head}</thead>{''.join(rows)}</table>"


TEST_HEADS = ("test", "points", "passed", "pass rate", "mean points", "failure messages")


def learners_table(exercise: Exercise, progress: dict[str, dict], link_base: str) -> str:
    heads = ["learner", "state", "score", "late", "penalty", *exercise.tests]
    heads += ["try-its passed"] if progress else []
    heads.append("feedback")
    head = "".join(
        f"<th scope='col' aria-sort='none'><button type='button'>{html.escape(h)}</button></th>"
        for h in heads
    )
    body = [learner_row(exercise, s, progress, link_base) for s in exercise.submissions]
    caption = f"Learners of {html.escape(exercise.name)} (click a heading to sort)"
    return (
        f"<table class='sortable'><caption>{caption}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def learner_row(exercise: Exercise, s: Submission, progress: dict, link_base: str) -> str:
    def cell(text: str, key: object = None) -> str:
        sort = "" if key is None else f" data-sort='{html.escape(str(key))}'"
        return f"<td{sort}>{html.escape(text)}</td>"

    is_graded = s.state == GRADED
    cells = [f"<th scope='row'>{html.escape(s.student)}</th>", cell(s.state)]
    cells.append(cell(points(s.score), s.score if is_graded else -1))
    cells.append(cell(late_text(s.seconds_late), s.seconds_late))
    cells.append(cell(points(s.penalty or None), s.penalty))
    for test in exercise.tests:
        got = s.tests.get(test) if is_graded else None
        cells.append(cell(points(got), -1 if got is None else got))
    if progress:
        passed = tryit_totals(progress, s.student)
        cells.append(cell(passed, passed.split("/")[0] if passed else -1))
    if s.feedback:
        within = Path(s.feedback).relative_to(CLASSDATA).as_posix()  # feedback/<student>/...
        href = html.escape(f"{link_base}/{within}", quote=True)
        label = f"feedback of {html.escape(s.student)}"
        cells.append(f'<td><a href="{href}" aria-label="{label}">feedback</a></td>')
    else:
        cells.append("<td></td>")
    return "<tr>" + "".join(cells) + "</tr>"


def tryit_section(progress: dict[str, dict]) -> str:
    rows = "".join(
        f"<tr><th scope='row'>{html.escape(tid)}</th><td>{passed}/{seen}</td></tr>"
        for tid, passed, seen in stalled_tryits(progress)
    )
    return (
        "<section aria-labelledby='h-tryits'><h2 id='h-tryits'>Try-its</h2><table>"
        "<caption>Learners whose saved chapter passed each try-it, fewest first</caption>"
        f"<thead><tr><th scope='col'>try-it</th><th scope='col'>passed</th></tr></thead>{rows}"
        "</table></section>"
    )


# A table sorts by a click on its heading: numbers by data-sort, text by its letters.
SORT_SCRIPT = """
document.querySelectorAll('table.sortable th button').forEach((button) => {
  button.addEventListener('click', () => {
    const th = button.parentElement, table = th.closest('table');
    const column = Array.from(th.parentElement.children).indexOf(th);
    const up = th.getAttribute('aria-sort') !== 'ascending';
    table.querySelectorAll('thead th').forEach((h) => h.setAttribute('aria-sort', 'none'));
    th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
    const key = (row) => {
      const c = row.children[column];
      const n = parseFloat(c.dataset.sort);
      return Number.isNaN(n) ? c.textContent.trim().toLowerCase() : n;
    };
    const body = table.tBodies[0];
    const rows = Array.from(body.rows).sort((a, b) => {
      const x = key(a), y = key(b);
      return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
    });
    rows.forEach((row) => body.appendChild(row));
  });
});
"""
SCRIPT_HASH = base64.b64encode(hashlib.sha256(SORT_SCRIPT.encode()).digest()).decode()
# The page runs its one script and loads nothing: the hub serves it with this policy.
CSP = (
    f"default-src 'none'; script-src 'sha256-{SCRIPT_HASH}'; style-src 'unsafe-inline'; "
    "img-src data:"
)

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>The class at a glance</title><style>
body{{font-family:sans-serif;margin:2em;color:#1a1a1a;max-width:80em}}
table{{border-collapse:collapse;margin:1em 0}} td,th{{border:1px solid #999;padding:4px 8px;
text-align:left;vertical-align:top}}
caption{{text-align:left;font-weight:bold;padding:4px 0;white-space:nowrap}}
th button{{font:inherit;font-weight:bold;background:none;border:0;padding:0;cursor:pointer;
color:#0b3d91;text-decoration:underline}} th[aria-sort=ascending] button::after{{content:" ▲"}}
th[aria-sort=descending] button::after{{content:" ▼"}} a{{color:#0b3d91}}
ul.messages{{margin:0;padding-left:1.2em}} code{{white-space:pre-wrap;word-break:break-word}}
</style></head><body><main><h1>The class at a glance</h1>
<p>Per exercise: the states of the submissions, the spread of the graded scores (after late
penalties), each test's pass rate with the messages the failing learners read in their feedback,
and a row per learner. Grades come from the gradebook; nothing here changes them.</p>
<nav aria-label="exercises"><ul>{index}</ul></nav>
{body}
</main><script>{script}</script></body></html>"""


# ----------------------------------------------------------------------------- command


def build(course: Path, out: Path, progress: dict[str, dict], link_base: str = "..") -> list[Path]:
    """Write the page and the CSV files into `out`; returns their paths."""
    exercises = read_class(course)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.html"]
    written[0].write_text(page(exercises, progress, link_base), encoding="utf-8")
    for exercise in exercises:
        written.append(write_csv(out / f"{exercise.name}.csv", learner_csv(exercise, progress)))
        written.append(write_csv(out / f"{exercise.name}_tests.csv", tests_csv(exercise)))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--course", type=Path, default=ROOT, help="course root (default: repo)")
    parser.add_argument("--out", type=Path, help="folder (default: COURSE/classdata/reports)")
    parser.add_argument("--progress", help="the hub's progress JSON (a file, or - for stdin)")
    parser.add_argument("--stdout", action="store_true", help="print the page, write nothing")
    parser.add_argument("--link-base", default="..", help="URL of classdata/ for feedback links")
    args = parser.parse_args(argv)
    course = args.course.resolve()
    if not (course / GRADEBOOK).exists():
        print(
            f"report: no gradebook at {course / GRADEBOOK}: run make autograde first",
            file=sys.stderr,
        )
        return 1
    progress = read_progress(args.progress)
    if args.stdout:
        sys.stdout.write(page(read_class(course), progress, args.link_base))
        return 0
    for path in build(course, args.out or course / REPORTS, progress, args.link_base):
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
