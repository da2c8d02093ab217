"""Keep committed notebooks clean: no outputs, no execution counts, the course kernel.

python -m courseware.notebooks strip FILE...   rewrite the files in place
python -m courseware.notebooks check FILE...   exit 1 and list the files that are not clean
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from courseware.repository import HERE
from fxcourse.workspace import course_kernel

RUNTIME_CELL_KEYS = ("execution", "collapsed", "scrolled")


def kernelspec(root: Path = HERE.root) -> dict[str, str]:
    """The notebook kernelspec of the course at `root`: its course.json's kernel."""
    return {**course_kernel(root), "language": "python"}


def clean(nb: nbformat.NotebookNode, root: Path = HERE.root) -> nbformat.NotebookNode:
    """Strip run-time state in place, the kernel set to that of the course at `root`;
    nbgrader's cell metadata and tags are kept."""
    nb.metadata.kernelspec = nbformat.NotebookNode(kernelspec(root))
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for key in RUNTIME_CELL_KEYS:
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def problems(nb: nbformat.NotebookNode, root: Path = HERE.root) -> list[str]:
    """What keeps a notebook of the course at `root` from being clean."""
    found, kernel = [], course_kernel(root)["name"]
    if nb.metadata.get("kernelspec", {}).get("name") != kernel:
        found.append(f"kernel is not {kernel!r}")
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and cell.outputs:
            found.append(f"cell {index} has outputs")
        if cell.cell_type == "code" and cell.execution_count is not None:
            found.append(f"cell {index} has an execution count")
    return found


def main(argv: list[str]) -> int:
    command, paths = argv[0], [Path(p) for p in argv[1:]]
    dirty = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if command == "strip":
            nbformat.write(clean(nb), path)
        elif found := problems(nb):
            dirty += 1
            print(f"{path}: {'; '.join(found)}")
    if dirty:
        print(f"{dirty} notebook(s) not clean: run `make strip`")
    return 1 if dirty else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
