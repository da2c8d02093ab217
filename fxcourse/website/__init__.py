"""The course as a static website, built with Sphinx and MyST-NB from the same sources.

    python -m fxcourse.website build [--out dist/site]

Sources are generated into build/site/src (chapters from solutions/, with each try-it shown as its
task, its reference answer folded away and its checkpoint run; the exercises' task text from the
released starters, never executed; a start page with the table of contents), then Sphinx builds
them with warnings as errors. Executed outputs are cached in build/site/cache, keyed by each
notebook's code: a rebuild after one chapter changed re-runs that chapter only.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import nbformat

from fxcourse.authoring import SOURCES, tryit_of
from fxcourse.notebooks import clean

ROOT = Path(__file__).resolve().parents[2]
CONF = Path(__file__).with_name("conf.py").parent
BUILD = ROOT / "build" / "site"
EXERCISES = ROOT / "chapters" / "exercises"

HOW_TO_RUN = """\
:::{admonition} Run this page yourself
:class: tip
This page was executed on the course's pinned PyTorch. To run and edit it: clone the course and
run `make lab` (it sets everything up and opens JupyterLab in your own `workspace/`), or unpack
the student edition your instructor gives you and run `make lab` there, or open it on your class
hub. The download button at the top gives this page as a notebook.
:::"""

START_PAGE = """\
# torch.fx graph capture

A hands-on course on how PyTorch turns Python programs into graphs and what you can do with them:
symbolic tracing, the FX IR, graph transforms, operator fusion, the Interpreter, graph capture with
TorchDynamo and `torch.export`, and FX in practice. Every output on these pages was produced by
running the code on the course's pinned PyTorch.

**Read** the chapters here, in order. Each "Try it" shows its task; the reference answer is folded
under it (try first!), followed by the checkpoint that judges it.

**Run** the course: clone it and run `make lab` (set-up included), or use the student edition or
your class hub. The three graded exercises are submitted through nbgrader in a class.

```{{toctree}}
:caption: Chapters
:maxdepth: 1

{chapters}
```

```{{toctree}}
:caption: Graded exercises
:maxdepth: 1

{exercises}
```
"""


def site_chapter(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A chapter source as a site page: mistakes dropped, answers folded, a how-to-run note."""
    page = clean(nbformat.reads(nbformat.writes(nb), as_version=4))
    cells = [page.cells[0], nbformat.v4.new_markdown_cell(HOW_TO_RUN)]
    for cell in page.cells[1:]:
        marker = tryit_of(cell)
        role = marker[1] if marker else None
        if role == "mistake":
            continue
        if role == "answer":
            cell.metadata.setdefault("tags", []).append("hide-input")
            cell.metadata["mystnb"] = {"code_prompt_show": "Show a reference answer"}
        cells.append(cell)
    page.cells = cells
    return page


def site_exercise(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """An exercise starter as task text: shown as released, with the how-to-run note."""
    page = clean(nbformat.reads(nbformat.writes(nb), as_version=4))
    page.cells.insert(1, nbformat.v4.new_markdown_cell(HOW_TO_RUN))
    return page


def write_if_changed(path: Path, text: str) -> None:
    """Unchanged pages keep their time stamps, so Sphinx re-reads only what changed."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def write_sources(src: Path) -> list[Path]:
    """Every page of the site under src; returns the pages written."""
    pages: dict[Path, str] = {}
    chapters = sorted(SOURCES.glob("[0-9][0-9]_*.ipynb"))
    exercises = sorted(EXERCISES.glob("*.ipynb"))
    for source in chapters:
        page = site_chapter(nbformat.read(source, as_version=4))
        pages[src / source.name] = nbformat.writes(page) + "\n"
    for starter in exercises:
        page = site_exercise(nbformat.read(starter, as_version=4))
        pages[src / "exercises" / starter.name] = nbformat.writes(page) + "\n"
    pages[src / "index.md"] = START_PAGE.format(
        chapters="\n".join(path.stem for path in chapters),
        exercises="\n".join(f"exercises/{path.stem}" for path in exercises),
    )
    for stale in set(src.rglob("*.ipynb")) | set(src.rglob("*.md")):
        if stale not in pages:
            stale.unlink()
    for path, text in pages.items():
        write_if_changed(path, text)
    return list(pages)


def build(out: Path, build_dir: Path = BUILD) -> int:
    """Generate the sources and run Sphinx (warnings are errors); returns its exit status."""
    src = build_dir / "src"
    write_sources(src)
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-b",
        "html",
        "-W",
        "--keep-going",
        "-n",
        "-q",
        "-c",
        str(CONF),
        "-d",
        str(build_dir / "doctrees"),
        "-D",
        f"nb_execution_cache_path={build_dir / 'cache'}",
        str(src),
        str(out),
    ]
    return subprocess.call(command, cwd=ROOT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["build"])
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "site")
    args = parser.parse_args(argv)
    status = build(args.out)
    if status == 0:
        print(f"wrote {args.out}: open {args.out / 'index.html'} in a browser")
    return status
