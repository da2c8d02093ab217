"""Whether a try-it's cell still holds its scaffold: the learner has not answered yet."""

from __future__ import annotations

import ast
import inspect
import textwrap


def unfilled(*values) -> bool:
    """True while a try-it's scaffold is still there: a value that is `...`, or a function whose
    body is `...` alone (after a docstring, if any)."""
    return any(value is ... or _body_is_ellipsis(value) for value in values)


def _body_is_ellipsis(function) -> bool:
    if not inspect.isfunction(function):
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):  # no source to read: judge it by what it does
        return False
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef):  # a lambda: no scaffold is one
        return False
    body = definition.body
    if len(body) > 1 and ast.get_docstring(definition) is not None:
        body = body[1:]
    return all(
        isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is ...
        for s in body
    )
