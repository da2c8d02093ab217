"""What `make release` (nbgrader's Generate) refuses in an exercise's source folder before it
writes anything: a test cell whose grade_id has no probe in probes.py or no check in checks.py,
which the grader would otherwise find only while grading (a GraderError on every submission).
"""

from __future__ import annotations

import ast
from pathlib import Path


def top_names(module: Path) -> set[str]:
    """The names a module defines at its top, read without running it (probes.py needs torch)."""
    found: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body if module.is_file() else ():
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Assign):  # test_a = test_b = probe
            found |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return found


def refuse_untested(assignment: str, folder: Path, test_cells) -> None:
    """ValueError naming each of `test_cells` without a probe and a check in `folder`."""
    parts = {"probe": top_names(folder / "probes.py"), "check": top_names(folder / "checks.py")}
    missing = []
    for cell in test_cells:
        grade_id = cell.metadata.nbgrader["grade_id"]
        if lacking := [
            f"no {part} in {part}s.py" for part, names in parts.items() if grade_id not in names
        ]:
            missing.append(f"{grade_id} ({', '.join(lacking)})")
    if missing:
        raise ValueError(
            f"{assignment}: a test cell needs a probe and a check of its grade_id: "
            + "; ".join(missing)
        )
