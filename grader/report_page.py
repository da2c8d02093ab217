"""The class report's page (`make report`): every text from the class passes through
html.escape; the page runs its one script (hashed in CSP) and loads nothing.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io

from grader.report_model import (
    GRADER_FAILED,
    NOT_GRADABLE,
    STATES,
    Column,
    Exercise,
    Row,
    Submission,
    TestRow,
    counts,
    graded,
    learner_columns,
    stalled_tryits,
    test_columns,
    test_rows,
)


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
    summary = "".join(f"<tr><th scope='row'>{s.label}</th><td>{found[s]}</td></tr>" for s in STATES)
    late = [s for s in exercise.submissions if s.seconds_late > 0]
    summary += f"<tr><th scope='row'>late</th><td>{len(late)}</td></tr>"
    parts = [f'<section aria-labelledby="h-{name}"><h2 id="h-{name}">{name}</h2>']
    parts.append(f"<table class='small'><caption>Submissions</caption>{summary}</table>")
    if graded(exercise):
        data, alt = histogram(exercise)
        parts.append(f'<img src="{data}" alt="{html.escape(alt)}" width="600" height="260">')
    parts.append(tests_table(exercise))
    parts.append(learners_table(exercise, progress, link_base))
    problems = [s for s in exercise.submissions if s.state in (NOT_GRADABLE, GRADER_FAILED)]
    if problems:
        items = "".join(f"<li>{problem_item(s)}</li>" for s in problems)
        parts.append(f"<h3>Not graded, and why</h3><ul class='problems'>{items}</ul>")
    return "\n".join(parts) + "</section>"


def problem_item(s: Submission) -> str:
    """A submission the grader did not grade: who, why in plain words, the error one click away."""
    reason = s.reason.removeprefix(f"{NOT_GRADABLE.label}: ")
    item = f"<strong>{html.escape(s.student)}</strong> ({s.state.label}): {html.escape(reason)}"
    if s.detail:
        item += (
            f"<details><summary>the error</summary><code>{html.escape(s.detail)}</code></details>"
        )
    return item


def tests_table(exercise: Exercise) -> str:
    if not exercise.tests:
        return "<p>No test cells in the gradebook yet (generate the exercise first).</p>"
    columns = test_columns(page=True)
    head = "".join(f"<th scope='col'>{html.escape(column.label)}</th>" for column in columns)
    rows = [
        "<tr>" + "".join(page_cell(column, row, "") for column in columns) + "</tr>"
        for row in test_rows(exercise)
    ]
    caption = "Tests: pass rate, mean points, and what the failing learners read"
    return (
        f"<table><caption>{caption}</caption><thead><tr>{head}</tr></thead>{''.join(rows)}</table>"
    )


def learners_table(exercise: Exercise, progress: dict[str, dict], link_base: str) -> str:
    columns = learner_columns(exercise, True, progress)
    head = "".join(
        f"<th scope='col' aria-sort='none'><button type='button'>{breakable(c.label)}</button></th>"
        for c in columns
    )
    body = [learner_row(exercise, s, progress, columns, link_base) for s in exercise.submissions]
    caption = f"Learners of {html.escape(exercise.name)} (click a heading to sort)"
    return (
        f"<table class='sortable'><caption>{caption}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def breakable(text: str) -> str:
    """Escaped text that may wrap after each underscore (test names make the table wide)."""
    return html.escape(text).replace("_", "_<wbr>")


def learner_row(
    exercise: Exercise, s: Submission, progress: dict, columns: list[Column], link_base: str
) -> str:
    return "<tr>" + "".join(
        page_cell(column, Row(exercise, s, progress, column.test), link_base) for column in columns
    ) + "</tr>"  # fmt: skip


def page_cell(column: Column, row: Row | TestRow, link_base: str) -> str:
    """One cell of a table, escaped: the row's heading, the link to a learner's feedback, a
    test's failure messages, or text (with the number it sorts by)."""
    if column.kind == "messages":
        return f"<td>{failure_list(row)}</td>"
    text = (column.page_text or column.text)(row)
    if column.kind == "heading":
        return f"<th scope='row'>{html.escape(text)}</th>"
    if column.kind == "link":
        if not text:
            return "<td></td>"
        href = html.escape(f"{link_base}/{text}", quote=True)  # text: feedback/<student>/...
        label = f"{html.escape(column.label)} of {html.escape(row.s.student)}"
        return f'<td><a href="{href}" aria-label="{label}">{html.escape(column.label)}</a></td>'
    key = "" if column.sort is None else f" data-sort='{html.escape(str(column.sort(row)))}'"
    return f"<td{key}>{html.escape(text)}</td>"


def failure_list(row: TestRow) -> str:
    failed = row.graded - row.passed
    return "<ul class='messages'>" + "".join(
        f"<li><strong>{count} of {failed}</strong>: <code>{html.escape(message)}</code></li>"
        for message, count in row.messages
    ) + "</ul>"  # fmt: skip


def tryit_section(progress: dict[str, dict]) -> str:
    rows = "".join(
        f"<tr><th scope='row'>{html.escape(tid)}</th><td>{passed}/{seen}</td></tr>"
        for tid, passed, seen in stalled_tryits(progress)
    )
    return (
        "<section aria-labelledby='h-tryits'><h2 id='h-tryits'>Try-its</h2><table>"
        "<caption>Learners whose saved chapter passed each try-it, out of the learners whose "
        "progress was read, fewest first</caption>"
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
body{{font-family:sans-serif;margin:2em;color:#1a1a1a}}
table{{border-collapse:collapse;margin:1em 0}} td,th{{border:1px solid #999;padding:4px 8px;
text-align:left;vertical-align:top}}
caption{{text-align:left;font-weight:bold;padding:4px 0;white-space:nowrap}}
th button{{font:inherit;font-weight:bold;background:none;border:0;padding:0;cursor:pointer;
color:#0b3d91;text-decoration:underline}} th[aria-sort=ascending] button::after{{content:" ▲"}}
th[aria-sort=descending] button::after{{content:" ▼"}} a{{color:#0b3d91}}
ul.messages{{margin:0;padding-left:1.2em}} code{{white-space:pre-wrap;word-break:break-word}}
table.sortable th[scope=row]{{overflow-wrap:anywhere;max-width:14em}}
td[data-sort]{{white-space:nowrap}} main>p{{max-width:60em}}
ul.problems details{{margin:0.2em 0 0.6em}}
nav a,th button{{display:inline-block;min-height:24px;line-height:24px}}
</style></head><body><main><h1>The class at a glance</h1>
<p>Per exercise: the states of the submissions, the spread of the graded scores (after late
penalties), each test's pass rate with the messages the failing learners read in their feedback,
and a row per learner. Grades come from the gradebook; nothing here changes them.</p>
<nav aria-label="exercises"><ul>{index}</ul></nav>
{body}
</main><script>{script}</script></body></html>"""
