"""Check that the course runs on this machine: every learner chapter, top to bottom, headless.

    python -m fxcourse.selfcheck [NOTEBOOK ...]    (default: every chapter in chapters/)

Each chapter runs in a fresh kernel of the course's (course.json's, "Python 3 (fx-course)") from
a temporary copy, so nothing in chapters/ or in your workspace changes. A chapter passes when no
cell shows an error; its try-its show "Not yet" until you fill them in, which is expected here.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import nbclient
import nbformat

from fxcourse.workspace import course_kernel

ROOT = Path(__file__).resolve().parents[1]  # the learner's own checkout


def errors_in(nb: nbformat.NotebookNode) -> list[str]:
    return [
        f"cell {index}: {output.ename}: {output.evalue}"
        for index, cell in enumerate(nb.cells)
        for output in cell.get("outputs", [])
        if output.output_type == "error"
    ]


def run_chapter(path: Path, kernel: str) -> tuple[list[str], float]:
    """Execute a copy of `path` in `kernel` from a scratch folder: (errors, seconds)."""
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as scratch:
        client = nbclient.NotebookClient(
            nb, kernel_name=kernel, timeout=600, resources={"metadata": {"path": scratch}}
        )
        start = time.perf_counter()
        client.execute()
    return errors_in(nb), time.perf_counter() - start


def main(argv: list[str], root: Path = ROOT) -> int:
    """Run the chapters named in `argv`, or every chapter of the course at `root`, in its kernel."""
    paths = [Path(a) for a in argv] or sorted((root / "chapters").glob("[0-9][0-9]_*.ipynb"))
    kernel, failed = course_kernel(root)["name"], 0
    for path in paths:
        errors, seconds = run_chapter(path, kernel)
        verdict = "ok" if not errors else f"{len(errors)} error(s)"
        print(f"{path.name}: {verdict} ({seconds:.0f} s)", flush=True)
        for line in errors:
            print(f"    {line}")
        failed += bool(errors)
    print("the course runs here" if not failed else f"{failed} chapter(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
