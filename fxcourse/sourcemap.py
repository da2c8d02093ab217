"""A map of a package's source files, read from the installed copy (nothing is pasted).

    display(Markdown(markdown_table(source_map("torch.fx", folders=("", "passes")))))

Each row is one .py file: its path inside the package, its length in lines, and the public
names it defines: its `__all__` when the file declares one, else its top-level classes and then
its functions whose names do not start with an underscore. Files are parsed with `ast`, not
imported, so mapping a package runs none of its code.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass
class SourceFile:
    path: str
    lines: int
    names: list[str]


def package_folder(package: str) -> Path:
    """Where the installed package's __init__.py lives."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"no installed package named {package!r}")
    return Path(spec.origin).parent


def declared_all(tree: ast.Module) -> list[str] | None:
    """The literal `__all__ = [...]` of a module, or None when it has none we can read."""
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                try:
                    return [str(name) for name in ast.literal_eval(statement.value)]
                except ValueError:
                    return None
    return None


def public_names(tree: ast.Module) -> list[str]:
    if (names := declared_all(tree)) is not None:
        return names
    classes = [s.name for s in tree.body if isinstance(s, ast.ClassDef)]
    functions = [s.name for s in tree.body if isinstance(s, ast.FunctionDef)]
    return [name for name in classes + functions if not name.startswith("_")]


def source_map(package: str, folders: tuple[str, ...] = ("",)) -> list[SourceFile]:
    """One SourceFile per .py file directly inside each folder (relative to the package)."""
    root = package_folder(package)
    rows = []
    for folder in folders:
        for path in sorted((root / folder).glob("*.py")):
            text = path.read_text(encoding="utf-8")
            rows.append(
                SourceFile(
                    path.relative_to(root).as_posix(),
                    len(text.splitlines()),
                    public_names(ast.parse(text)),
                )
            )
    return rows


def markdown_table(rows: list[SourceFile], most: int = 5) -> str:
    """A Markdown table of the map, listing at most `most` names per file."""
    lines = ["| file | lines | defines |", "| --- | ---: | --- |"]
    for row in rows:
        shown = ", ".join(f"`{name}`" for name in row.names[:most]) or "(no public names)"
        if len(row.names) > most:
            shown += f" and {len(row.names) - most} more"
        lines.append(f"| `{row.path}` | {row.lines} | {shown} |")
    return "\n".join(lines)
