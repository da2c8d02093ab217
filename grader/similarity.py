"""Copied work, found (`make similarity`): pairs of submissions whose answers are unusually alike.

    python -m grader.similarity [--course DIR] [--out DIR] [--top N] [--given COURSE ...]

For each exercise, every submission's own code is read from its autograded notebook (as JSON,
never run: the notebook `make autograde` graded, already repaired, renamed and converted): every
code cell that is not the instructor's and differs from the starter's cells, the cells the
learner added included. A notebook that could not be read (never graded, could not be graded,
too large, not JSON) is named on the page and on stderr with the reason, never skipped
silently; one notebook's failure stops no other. The code is fingerprinted by copydetect, the
winnowing of MOSS: comments, layout and names are normalised away (every variable is the same
token, every function name another), so renaming, reformatting and commenting do not hide a copy.
The starter code and the course's own code (every code cell of the chapters, try-it answers
included) are boilerplate: a fingerprint found there counts for nobody. They are the course's
(its release, its published starters, its solutions/ chapters) and those of each course named by
--given (a folder of LMS submissions has no course of its own: name the one its learners had).
Every pair is scored by the share of each answer's fingerprints found in the other; the page
ranks the pairs, shows the two answers side by side with the matching parts marked, and escapes
every character of them.

A high score says two answers share long runs of the same code structure that neither the
starter nor the course gave them. It does not say who copied whom, or that anyone did: short
exercises have few ways to be written, learners who studied together or from the same web page
converge, and a reordered or rewritten copy can score low. It is a reason to read the two answers,
never a verdict.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.course import Course
from grader.safegrade.data import inert_text
from grader.safegrade.grading_limits import LIMITS
from grader.safegrade.jsontext import json_values
from grader.safegrade.result_files import State
from grader.similarity_page import page, write_csv
from grader.similarity_records import Compared, Pair
from grader.standings import verdict_of

NOISE_TOKENS = 25  # copydetect's k: matches shorter than this are noise
GUARANTEE_TOKENS = 30  # matches this long are always found (winnowing's window)
MAX_VALUES = 4 * LIMITS.notebook_values  # an autograded notebook: what nbgrader read, and outputs


class Unreadable(Exception):
    """Why a learner's notebook could not be read."""


def read_notebook(path: Path) -> dict:
    """The notebook's JSON, its size and values bounded before it is parsed."""
    if not path.is_file() or path.is_symlink():
        raise Unreadable("no autograded notebook")
    if (size := path.stat().st_size) > LIMITS.similarity_notebook_bytes:
        raise Unreadable(
            f"the notebook is {size >> 20} MB (at most {LIMITS.similarity_notebook_bytes >> 20})"
        )
    data = path.read_bytes()
    if (values := json_values(data, stop_over=MAX_VALUES)) > MAX_VALUES:
        raise Unreadable(f"the notebook holds over {values} JSON values (at most {MAX_VALUES})")
    try:
        notebook = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"the notebook is not JSON ({exc})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise Unreadable("the notebook has no list of cells")
    return notebook


def own_code(notebook: dict, starter: set[str]) -> str:
    """The code a learner wrote: every code cell but the instructor's (marked by nbgrader, not
    a solution) and those the starter holds as they are, learner-added cells included."""
    sources = []
    for cell in notebook["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        marks = metadata.get("nbgrader")
        if isinstance(marks, dict) and marks and marks.get("solution") is not True:
            continue
        text = source_text(cell.get("source", ""))
        if text.strip() and text.strip() not in starter:
            sources.append(text)
    return "\n\n".join(sources)


def source_text(source: object) -> str:
    if isinstance(source, list):
        return "".join(part for part in source if isinstance(part, str))
    return source if isinstance(source, str) else ""


def notebook_code(path: Path) -> str:
    """Every code cell of one of the course's own notebooks."""
    cells = json.loads(path.read_text()).get("cells", [])
    return "\n\n".join(source_text(c["source"]) for c in cells if c["cell_type"] == "code")


@dataclass(frozen=True)
class GivenCode:
    """The code the learners were given, which counts for nobody: the exercises' starters
    (folders of <assignment>/<assignment>.ipynb) and the course's chapters (folders of
    NN_*.ipynb), from the courses named, never from this code's own checkout."""

    starter_folders: tuple[Path, ...]
    chapter_folders: tuple[Path, ...]

    @classmethod
    def of(cls, *courses: Course) -> GivenCode:
        """What the learners of `courses` got: each one's released and published starters and
        the chapters in its sources."""
        starters = tuple(f for c in courses for f in (c.release, c.student_versions))
        return cls(starters, tuple(course.source for course in courses))

    def starters(self, assignment: str) -> list[Path]:
        found = (folder / assignment / f"{assignment}.ipynb" for folder in self.starter_folders)
        return [path for path in found if path.exists()]

    def chapters(self) -> list[Path]:
        return sorted(p for f in self.chapter_folders for p in f.glob("[0-9][0-9]_*.ipynb"))


def starter_cells(given: GivenCode, assignment: str) -> set[str]:
    """The code cells of the exercise's starter, as learners got them."""
    cells = (c for path in given.starters(assignment) for c in read_notebook(path)["cells"])
    return {source_text(c.get("source", "")).strip() for c in cells if c.get("cell_type") == "code"}


def boilerplate_hashes(given: GivenCode, assignment: str):
    """Fingerprints of the starter code and of the course's own code."""
    import numpy
    from copydetect import CodeFingerprint

    texts = [notebook_code(path) for path in given.chapters() + given.starters(assignment)]
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


def learners(course: Course, assignment: str) -> list[str]:
    """Everyone who submitted the exercise or whose submission was graded."""
    folders = (course.submitted, course.autograded)
    return sorted({p.parent.name for root in folders for p in root.glob(f"[!.]*/{assignment}")})


def not_graded(course: Course, student: str, assignment: str) -> str:
    """Why a learner has no autograded notebook of the exercise."""
    result = verdict_of(course, student, assignment)
    if result is None:
        return "not graded yet: run make autograde"
    if result.status == State.GRADER_FAILED:
        return "the grader failed on it: run make autograde again"
    return result.reason


def answers(
    course: Course, assignment: str, given: GivenCode
) -> tuple[dict[str, str], dict[str, str]]:
    """student -> their own code (not the `given` starter's), for every submission of the
    exercise that has some; and student -> why their notebook was not compared."""
    found, left_out = {}, {}
    starter = starter_cells(given, assignment)
    for student in learners(course, assignment):
        path = course.autograded / student / assignment / f"{assignment}.ipynb"
        try:
            if not path.exists():
                raise Unreadable(not_graded(course, student, assignment))
            code = own_code(read_notebook(path), starter)
        except Unreadable as exc:
            left_out[student] = str(exc)
            continue
        except Exception as exc:  # noqa: BLE001 - one notebook's failure stops no other
            left_out[student] = f"it could not be read ({type(exc).__name__}: {exc})"
            continue
        if code.strip():
            found[student] = code
        else:
            left_out[student] = "no code of its own (every code cell is the starter's)"
    return found, left_out


def compare(course: Course, assignment: str, given: GivenCode) -> Compared:
    """Every pair of the exercise's submissions, most alike first; the answers; what was not
    compared, and why. What the learners were `given` counts for nobody."""
    from copydetect import CodeFingerprint, compare_files

    codes, left_out = answers(course, assignment, given)
    boilerplate = boilerplate_hashes(given, assignment)
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
    return Compared(sorted(pairs, key=lambda pair: -pair.score), codes, left_out)


def ranges(slices) -> list[tuple[int, int]]:
    """copydetect's slices (a 2 x n array of start and end offsets) as (start, end) pairs."""
    if len(slices) < 2:  # no match at all
        return []
    return [(int(start), int(end)) for start, end in zip(slices[0], slices[1], strict=True)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--course", type=Path, help="course root (default: this repository)")
    parser.add_argument("--out", type=Path, help="folder (default: COURSE/classdata/reports)")
    parser.add_argument(
        "--top", type=int, default=LIMITS.shown_pairs, help="pairs shown per exercise"
    )
    parser.add_argument(
        "--given",
        type=Path,
        action="append",
        default=[],
        help="a course whose starters and chapters the learners were given, besides COURSE's "
        "own (a folder of LMS submissions has none: name the course here); repeatable",
    )
    args = parser.parse_args(argv)
    course = Course.configured(args.course.resolve()) if args.course else Course.configured()
    given = GivenCode.of(course, *(Course.configured(root.resolve()) for root in args.given))
    # An exercise in another language (grader/exercises.py) is compared among its own learners,
    # and shown only when someone submitted it.
    found = {assignment: compare(course, assignment, given) for assignment in course.assignments}
    exercises = course.exercises
    found = {a: c for a, c in found.items() if a in exercises or c.codes or c.left_out}
    for assignment, compared in found.items():
        for student, why in compared.left_out.items():
            note = f"similarity: not compared: {student}/{assignment}: {why}"
            print(inert_text(note, LIMITS.reason_chars), file=sys.stderr)
    if not any(compared.codes or compared.left_out for compared in found.values()):
        print(f"similarity: no submission in {course.submitted}: collect first", file=sys.stderr)
        return 1
    out = args.out or course.reports
    out.mkdir(parents=True, exist_ok=True)
    (out / "similarity.html").write_text(page(found, args.top), encoding="utf-8")
    write_csv(out / "similarity.csv", found)
    for name in ("similarity.html", "similarity.csv"):
        print(f"wrote {os.path.relpath(out / name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
