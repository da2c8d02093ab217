"""Copied work, found (`make similarity`): pairs of submissions whose answers are unusually alike.

    python -m grader.similarity [--course DIR] [--out DIR] [--top N]

For each exercise, every submission's answer cells (the cells nbgrader marks as the learner's
solution, read as JSON from classdata/submitted/: never run) are fingerprinted by copydetect, the
winnowing of MOSS: comments, layout and names are normalised away (every variable is the same
token, every function name another), so renaming, reformatting and commenting do not hide a copy.
The starter code and the course's own code (every code cell of the chapters, try-it answers
included) are boilerplate: a fingerprint found there counts for nobody. Every pair is scored by
the share of each answer's fingerprints found in the other; the page ranks the pairs, shows the
two answers side by side with the matching parts marked, and escapes every character of them.

A high score says two answers share long runs of the same code structure that neither the
starter nor the course gave them. It does not say who copied whom, or that anyone did: short
exercises have few ways to be written, learners who studied together or from the same web page
converge, and a reordered or rewritten copy can score low. It is a reason to read the two answers,
never a verdict.
"""

from __future__ import annotations

import argparse
import csv
import html
import itertools
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.course_grader import RELEASE, ROOT, SOURCE, STUDENT_VERSIONS, SUBMITTED, exercises_of
from grader.report import REPORTS, inert
from grader.safegrade.limits import LIMITS

NOISE_TOKENS = 25  # copydetect's k: matches shorter than this are noise
GUARANTEE_TOKENS = 30  # matches this long are always found (winnowing's window)
MAX_NOTEBOOK_BYTES = LIMITS.similarity_notebook_bytes
SHOWN_PAIRS = LIMITS.shown_pairs  # per exercise, on the page; the CSV has every pair


@dataclass
class Pair:
    assignment: str
    first: str
    second: str
    share_first: float  # of the first's fingerprints, found in the second
    share_second: float
    marked_first: list[tuple[int, int]]  # character ranges of the first's answer that match
    marked_second: list[tuple[int, int]]

    @property
    def score(self) -> float:
        return (self.share_first + self.share_second) / 2


def answer_code(path: Path) -> str:
    """The learner's solution cells of a notebook, read as data; "" when there are none."""
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        return ""
    try:
        cells = json.loads(path.read_bytes()).get("cells", [])
    except (ValueError, UnicodeDecodeError, AttributeError):
        return ""
    sources = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        marks = cell.get("metadata", {}).get("nbgrader", {})
        if isinstance(marks, dict) and marks.get("solution") is True:
            sources.append(source_text(cell.get("source", "")))
    return "\n\n".join(sources)


def source_text(source: object) -> str:
    if isinstance(source, list):
        return "".join(part for part in source if isinstance(part, str))
    return source if isinstance(source, str) else ""


def notebook_code(path: Path) -> str:
    """Every code cell of one of the course's own notebooks."""
    cells = json.loads(path.read_text()).get("cells", [])
    return "\n\n".join(source_text(c["source"]) for c in cells if c["cell_type"] == "code")


def boilerplate_hashes(course: Path, assignment: str):
    """Fingerprints of the starter code and of the course's own code."""
    import numpy
    from copydetect import CodeFingerprint

    chapters = sorted((ROOT / SOURCE).glob("[0-9][0-9]_*.ipynb"))  # the course this code is from
    texts = [notebook_code(path) for path in chapters]
    for starter in (course / RELEASE, ROOT / STUDENT_VERSIONS):
        if (notebook := starter / assignment / f"{assignment}.ipynb").exists():
            texts.append(answer_code(notebook))
    hashes = set().union(*(fingerprint(text, CodeFingerprint).hashes for text in texts))
    return numpy.array(sorted(hashes), dtype=numpy.int64)


def fingerprint(code: str, maker, boilerplate=None):
    import io

    return maker(
        "answer.py",
        NOISE_TOKENS,
        GUARANTEE_TOKENS - NOISE_TOKENS + 1,
        boilerplate=boilerplate,
        fp=io.StringIO(code),
    )


def answers(course: Path, assignment: str) -> dict[str, str]:
    """student -> answer code, for every submission of the exercise that has one."""
    found = {}
    for path in sorted((course / SUBMITTED).glob(f"[!.]*/{assignment}/{assignment}.ipynb")):
        if path.is_file() and not path.is_symlink() and (code := answer_code(path)).strip():
            found[path.parent.parent.name] = code
    return found


def compare(course: Path, assignment: str) -> tuple[list[Pair], dict[str, str]]:
    """Every pair of the exercise's submissions, most alike first; and the answers."""
    from copydetect import CodeFingerprint, compare_files

    codes = answers(course, assignment)
    boilerplate = boilerplate_hashes(course, assignment)
    prints = {s: fingerprint(code, CodeFingerprint, boilerplate) for s, code in codes.items()}
    pairs = []
    for first, second in itertools.combinations(sorted(prints), 2):
        if not prints[first].hashes or not prints[second].hashes:
            continue
        _, (share_first, share_second), slices = compare_files(prints[first], prints[second])
        pairs.append(
            Pair(
                assignment,
                first,
                second,
                float(share_first),
                float(share_second),
                ranges(slices[0]),
                ranges(slices[1]),
            )
        )
    return sorted(pairs, key=lambda pair: -pair.score), codes


def ranges(slices) -> list[tuple[int, int]]:
    """copydetect's slices (a 2 x n array of start and end offsets) as (start, end) pairs."""
    if len(slices) < 2:  # no match at all
        return []
    return [(int(start), int(end)) for start, end in zip(slices[0], slices[1], strict=True)]


# ----------------------------------------------------------------------------- output


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


def page(found: dict[str, tuple[list[Pair], dict[str, str]]], shown: int) -> str:
    sections = []
    for assignment, (pairs, codes) in found.items():
        name = html.escape(assignment)
        body = "".join(pair_html(p, codes, i + 1) for i, p in enumerate(pairs[:shown]))
        count = (
            f"{len(codes)} answers, {len(pairs)} pairs; the {min(shown, len(pairs))} most alike:"
        )
        sections.append(f"<section><h2>{name}</h2><p>{count}</p>{body or NONE}</section>")
    return PAGE.format(body="\n".join(sections), meaning=html.escape(MEANING))


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
.side{{flex:1;min-width:0}} pre{{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:13px}}
mark{{background:#ffe08a;color:#1a1a1a}} h4{{margin:0.3em 0}}
</style></head><body><main><h1>Similar answers</h1><p>{meaning}</p>
<p>Marked: the parts of each answer that match the other (after names are normalised).</p>
{body}</main></body></html>"""


def write_csv(path: Path, found: dict[str, tuple[list[Pair], dict[str, str]]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["assignment", "student_a", "student_b", "score", "share_a", "share_b"])
        for pairs, _ in found.values():
            for p in pairs:
                row = [p.assignment, p.first, p.second, f"{p.score:.3f}"]
                writer.writerow(map(inert, row + [f"{p.share_first:.3f}", f"{p.share_second:.3f}"]))
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--course", type=Path, default=ROOT, help="course root (default: repo)")
    parser.add_argument("--out", type=Path, help="folder (default: COURSE/classdata/reports)")
    parser.add_argument("--top", type=int, default=SHOWN_PAIRS, help="pairs shown per exercise")
    args = parser.parse_args(argv)
    course = args.course.resolve()
    found = {assignment: compare(course, assignment) for assignment in exercises_of(course)}
    if not any(codes for _, codes in found.values()):
        print(f"similarity: no submission in {course / SUBMITTED}: collect first", file=sys.stderr)
        return 1
    out = args.out or course / REPORTS
    out.mkdir(parents=True, exist_ok=True)
    (out / "similarity.html").write_text(page(found, args.top), encoding="utf-8")
    write_csv(out / "similarity.csv", found)
    for name in ("similarity.html", "similarity.csv"):
        print(f"wrote {os.path.relpath(out / name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
