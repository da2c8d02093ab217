"""What a module imports, read from its syntax tree: the one walker that the layout test
(tests/test_grader_layout.py) and the package test (tests/test_packages.py) share, so an import
one of them sees the other sees too."""

from __future__ import annotations

import ast
import importlib.util


def literal_import_module(node: ast.AST) -> str | None:
    """The module that `importlib.import_module("name")` (also with a literal package for a
    relative name, or `import_module` imported bare) or `__import__("name")` loads, when `node`
    is such a call with literal arguments; None for every other node."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    name, *rest = [a.value if isinstance(a, ast.Constant) else None for a in node.args[:2]]
    if called not in ("import_module", "__import__") or not isinstance(name, str):
        return None
    anchor = rest[0] if called == "import_module" and rest and isinstance(rest[0], str) else None
    try:
        return importlib.util.resolve_name(name, anchor)
    except (ImportError, ValueError, TypeError):  # a relative name without its package
        return None


def imported_names(node: ast.AST, package: str) -> list[str]:
    """The absolute module names one node imports: an import statement's modules (for
    `from x import y`, both x and x.y, since y may be a module), or an import_module call's
    literal name. `package` is the importing module's package, which relative imports count from."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = package.split(".")
            anchor = parts[: len(parts) - node.level + 1]
            base = ".".join([*anchor, *filter(None, [node.module])])
        return [base] + [f"{base}.{alias.name}" for alias in node.names]
    name = literal_import_module(node)
    return [name] if name else []


def unread_import_calls(tree: ast.AST) -> list[int]:
    """The lines of import_module/__import__ calls whose module name is not a literal: imports
    the walk above cannot see."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or literal_import_module(node):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called in ("import_module", "__import__"):
            lines.append(node.lineno)
    return lines
