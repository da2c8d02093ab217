"""Execute a notebook headlessly in the course's Jupyter kernel and collect its error outputs."""

from __future__ import annotations

import base64
import re
import time
from pathlib import Path

import nbclient
import nbformat

from fxcourse.workspace import course_kernel

KERNEL_NAME = course_kernel()["name"]
CELL_TIMEOUT_S = 300


def error_outputs(nb: nbformat.NotebookNode) -> list[str]:
    """One line per error output (a traceback shown to the learner) or stderr traceback."""
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                found.append(f"cell {index}: {output.ename}: {output.evalue}")
            elif output.get("name") == "stderr" and "Traceback" in output.get("text", ""):
                found.append(f"cell {index}: traceback on stderr")
    return found


def execute(path: Path, cwd: Path | None = None) -> tuple[nbformat.NotebookNode, float]:
    """Run every cell in a fresh kernel started in `cwd` (default: the notebook's folder);
    returns (the executed notebook, seconds)."""
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=KERNEL_NAME,
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(cwd or path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    return nb, time.perf_counter() - start


def is_graded_student_version(path: Path, nb: nbformat.NotebookNode, root: Path) -> bool:
    """A learner's copy of an nbgrader exercise: its solution cells are still unanswered."""
    in_chapters = path.resolve().is_relative_to(root / "chapters")
    has_solution_cells = any(c.metadata.get("nbgrader", {}).get("solution") for c in nb.cells)
    return in_chapters and has_solution_cells


FITTED_GRAPH = re.compile(
    r'class="fxcourse-graph" src="data:image/svg\+xml;base64,([^"]+)" width="(\d+)"'
)


def unreadable_graphs(nb: nbformat.NotebookNode, smallest_px: float = 9.0) -> list[str]:
    """The graph pictures (fxcourse.graphs) whose node names, once the picture is fitted to an
    output area of GraphPicture.SHRUNK_FROM_PX, are drawn smaller than `smallest_px` CSS px. The
    full-size copies under "Show at full size" and "Show the whole graph" are not fitted."""
    from fxcourse.graphs import GraphPicture

    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            for match in FITTED_GRAPH.finditer(output.get("data", {}).get("text/html", "")):
                svg = base64.b64decode(match.group(1)).decode()
                width = int(match.group(2))
                name_pt = max(float(f) for f in re.findall(r'font-size="([\d.]+)"', svg))
                px = name_pt * 4 / 3 * min(1, GraphPicture.SHRUNK_FROM_PX / width)
                if px < smallest_px:
                    found.append(f"cell {index}: {width} px wide, names at {px:.1f} px")
    return found
