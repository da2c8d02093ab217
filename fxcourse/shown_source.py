"""The course's own functions whose source a chapter prints for the learner to read, printed in
the learner's language: `print(source(fusion.fold_pair))` shows the code as it is, its docstring
and comments translated (fxcourse.po holds them: courseware.i18n extracts the docstrings and
comments of the functions SHOWN names). Code and identifiers stay as they are."""

from __future__ import annotations

import ast
import inspect
import io
import textwrap
import tokenize

from fxcourse.messages import _

# module -> the functions of it that a chapter prints (chapter 4: fusion, bench_models; 6: dynamo)
SHOWN = {
    "fxcourse.fusion": (
        "bn_scale_and_shift",
        "folded_weight_and_bias",
        "conv_feeding",
        "refusal_reason",
        "fold_pair",
        "replace_submodule",
    ),
    "fxcourse.bench_models": ("bn_erased",),
    "fxcourse.dynamo_cases": ("planted_bug",),
}


def source(function) -> str:
    """The function's source as inspect.getsource gives it, with its docstring and comments in
    the learner's language where fxcourse.po translates them."""
    if function.__name__ not in SHOWN.get(function.__module__, ()):  # else nothing extracts them
        raise ValueError(f"{function.__module__}.{function.__name__} is not in SHOWN")
    text = textwrap.dedent(inspect.getsource(function))
    lines = text.splitlines(keepends=True)
    for (row, column), end, new in sorted(replacements(text), reverse=True):
        first, last = lines[row - 1], lines[end[0] - 1]
        lines[row - 1 : end[0]] = [first[:column] + new + last[end[1] :]]
    return "".join(lines)


def replacements(text: str) -> list[tuple[tuple[int, int], tuple[int, int], str]]:
    """(start, end, new text) of each comment and docstring that has a translation."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            words = token.string.lstrip("#").strip()
            if _(words) != words:
                found.append((token.start, token.end, f"# {_(words)}"))
    for node in ast.walk(ast.parse(text)):
        literal = documented(node)
        english = inspect.cleandoc(literal.value) if literal else ""
        if literal and _(english) != english:
            start, end = (
                (literal.lineno, literal.col_offset),
                (literal.end_lineno, literal.end_col_offset),
            )
            found.append((start, end, quoted(_(english), literal.col_offset)))
    return found


def documented(node: ast.AST) -> ast.Constant | None:
    """The docstring of a function or class, as its string literal node."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return None
    first = node.body[0] if node.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        return first.value if isinstance(first.value.value, str) else None
    return None


def quoted(docstring: str, indent: int) -> str:
    """A docstring literal whose lines after the first are indented to the docstring's column."""
    lines = docstring.splitlines()
    if len(lines) == 1:
        return f'"""{docstring}"""'
    rest = "".join(f"\n{' ' * indent}{line}" if line else "\n" for line in lines[1:])
    return f'"""{lines[0]}{rest}\n{" " * indent}"""'
