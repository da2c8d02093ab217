"""The pages of `make similarity` (grader/similarity.py compares): similarity.html, each
exercise's most alike pairs side by side with the matching parts marked and what was not
compared, named with the reason; similarity.csv, every pair. Every character a learner wrote is
escaped on the page and made inert in the CSV."""

from __future__ import annotations

import csv
import html
from pathlib import Path

from grader.report import inert
from grader.similarity_records import Compared, Pair


def marked(code: str, spans: list[tuple[int, int]]) -> str:
    """The code, escaped, with the matching ranges in <mark>."""
    parts, at = [], 0
    for start, end in sorted(spans):
        start = max(start, at)
        if end <= start:
            continue
        parts += [html.escape(code[at:start]), f"<mark>{html.escape(code[start:end])}</mark>"]
        at = end
    return "".join(parts) + html.escape(code[at:])


def pair_html(pair: Pair, codes: dict[str, str], rank: int) -> str:
    first, second = html.escape(pair.first), html.escape(pair.second)
    side = (
        "<div class='side'><h4>{name}: {share:.0%} of it matches</h4>"
        "<pre tabindex='0'><code>{code}</code></pre></div>"
    )
    return (
        f"<section class='pair'><h3>{rank}. {first} and {second}: {pair.score:.0%}</h3>"
        "<div class='sides'>"
        + side.format(
            name=first, share=pair.share_first, code=marked(codes[pair.first], pair.marked_first)
        )
        + side.format(
            name=second,
            share=pair.share_second,
            code=marked(codes[pair.second], pair.marked_second),
        )
        + "</div></section>"
    )


def page(found: dict[str, Compared], shown: int) -> str:
    sections = []
    for assignment, compared in found.items():
        pairs, codes = compared.pairs, compared.codes
        body = "".join(pair_html(p, codes, i + 1) for i, p in enumerate(pairs[:shown]))
        count = (
            f"{len(codes)} answers, {len(pairs)} pairs; the {min(shown, len(pairs))} most alike:"
        )
        sections.append(
            f"<section><h2>{html.escape(assignment)}</h2>{left_out_html(compared.left_out)}"
            f"<p>{count}</p>{body or NONE}</section>"
        )
    return PAGE.format(body="\n".join(sections), meaning=html.escape(MEANING))


def left_out_html(left_out: dict[str, str]) -> str:
    """The submissions not compared, each with the reason (never left out silently)."""
    if not left_out:
        return "<p>Every submission was compared.</p>"
    items = "".join(
        f"<li><strong>{html.escape(student)}</strong>: {html.escape(why)}</li>"
        for student, why in left_out.items()
    )
    return f"<p class='left-out'>Not compared ({len(left_out)}):</p><ul>{items}</ul>"


NONE = "<p>No two answers to compare.</p>"
MEANING = (
    "A high score says two answers share long runs of the same code structure (names, comments "
    "and layout ignored) that neither the starter nor the course's own code gave them. It does "
    "not say who copied whom, or that anyone did: short exercises have few ways to be written, "
    "and learners who worked together or read the same page converge. Read the two answers."
)
PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Similar answers</title><style>
body{{font-family:sans-serif;margin:2em;color:#1a1a1a}} .sides{{display:flex;gap:1em}}
.side{{flex:1;min-width:0}} pre{{background:#f6f6f6;padding:8px;font-size:13px;
white-space:pre-wrap;overflow-wrap:anywhere}} .left-out{{font-weight:bold}}
mark{{background:#ffe08a;color:#1a1a1a}} h4{{margin:0.3em 0}}
</style></head><body><main><h1>Similar answers</h1><p>{meaning}</p>
<p>Marked: the parts of each answer that match the other (after names are normalised).</p>
{body}</main></body></html>"""


def write_csv(path: Path, found: dict[str, Compared]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["assignment", "student_a", "student_b", "score", "share_a", "share_b"])
        for compared in found.values():
            for p in compared.pairs:
                row = [p.assignment, p.first, p.second, f"{p.score:.3f}"]
                writer.writerow(map(inert, row + [f"{p.share_first:.3f}", f"{p.share_second:.3f}"]))
    return path
