"""An exercise's reference solution has one source, its notebook's solution cells (the code
between `### BEGIN SOLUTION` and `### END SOLUTION` and the definitions around it). The
grader's checks compare a learner's results with the reference's: they import it from
solutions/<exercise>/solution.py, which `make chapters` writes from the notebook (a stale copy
fails `python -m courseware.authoring check` and its test).

solution.py is the grader's, as checks.py is: nbgrader never releases it, the sandbox never
sees it (grader/safegrade/staging.py), no edition ships solutions/.

The module holds the solution cells, after the statements of the cells before them that define
what the solutions use (their imports, and names taken from verify.py, which the module loads
beside itself). A solution that uses a name those cells define any other way is refused.
"""

from __future__ import annotations

import ast
import builtins
import re
import sys

MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n", re.M)
FILE = "solution.py"  # beside the exercise's checks.py
LOAD_VERIFY = 'verify = sibling(__file__, "verify")'
FIRST_PARTY = {"grader", "fxcourse", "courseware"}
PROVIDED = set(dir(builtins)) | {"__file__", "sibling"}  # the header makes sibling


def is_solution(cell) -> bool:
    return cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution", False)


def names_in(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names read, names bound) anywhere in tree, in any scope."""
    read, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read, bound


def definitions(cells) -> list[tuple[str, ast.stmt]]:
    """The top-level imports and assignments of `cells` (text, statement), verify.py's names
    taken as checks.py takes them: one by one from the module loaded beside it (`from verify
    import` needs the folder on the path, which a checking process does not have)."""
    found = []
    for cell in cells:
        for statement in ast.parse(cell.source).body:
            if isinstance(statement, ast.Import | ast.ImportFrom) and uses_verify(statement):
                texts = [LOAD_VERIFY]
                if isinstance(statement, ast.ImportFrom):
                    texts += [f"{a.asname or a.name} = verify.{a.name}" for a in statement.names]
                found += [(text, ast.parse(text).body[0]) for text in texts]
            elif isinstance(statement, ast.Import | ast.ImportFrom | ast.Assign):
                found.append((ast.get_source_segment(cell.source, statement), statement))
    return found


def uses_verify(statement: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(statement, ast.ImportFrom):
        return statement.module == "verify"
    return any(alias.name == "verify" for alias in statement.names)


def needed(statements: list[tuple[str, ast.stmt]], wanted: set[str]) -> list[str]:
    """The texts of the statements that define `wanted`, and what those read, in their order;
    raises LookupError naming what none defines."""
    kept, defined = [], set()
    for text, statement in reversed(statements):
        read, bound = names_in(statement)
        if bound & wanted and text not in kept:
            kept.insert(0, text)
            wanted, defined = wanted | (read - PROVIDED), defined | bound
    if wanted - defined:
        raise LookupError(", ".join(sorted(wanted - defined)))
    return kept


def section(text: str) -> int:
    """isort's section of an import: 0 the standard library, 1 third party, 2 the course's."""
    module = text.split()[1].split(".")[0]
    return 0 if module in sys.stdlib_module_names else 2 if module in FIRST_PARTY else 1


def header(texts: list[str]) -> str:
    """Imports by section (their order within one kept, as ruff sorted them in the notebook),
    then the assignments."""
    imports = [t for t in texts if t.startswith(("import ", "from "))]
    if LOAD_VERIFY in texts:
        imports.append("from grader.safegrade.probing import sibling")
    blocks = ["\n".join(t for t in imports if section(t) == part) for part in range(3)]
    blocks.append("\n".join(t for t in texts if not t.startswith(("import ", "from "))))
    return "\n\n".join(block for block in blocks if block)


def solution_module(notebook, exercise: str) -> str:
    """solution.py's text (without its stamp) for the exercise's source notebook."""
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    solutions = [cell for cell in cells if is_solution(cell)]
    if not solutions:
        raise SystemExit(f"{exercise}: the notebook has no solution cell")
    code = "\n\n\n".join(MARKER.sub("", cell.source).strip() for cell in solutions)
    read, bound = names_in(ast.parse(code))
    try:
        texts = needed(definitions(cells[: cells.index(solutions[0])]), read - bound - PROVIDED)
    except LookupError as missing:
        raise SystemExit(
            f"{exercise}: the solution cells use {missing}, which no import or assignment of "
            "the cells before them defines (the grader's copy could not run)"
        ) from None
    doc = f'"""The reference solution of {exercise}: its notebook\'s solution cells."""'
    return f"{doc}\n\n{header(texts)}\n\n\n{code}\n"
