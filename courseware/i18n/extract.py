"""What a document gives to translate: the Markdown blocks, comments, shown strings and
docstrings of a notebook, the messages of a package's `_()`, of a module beside an exercise and of
the grader's checks."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat

from courseware import shown_strings

FENCE = re.compile(r"^\s*(```|~~~|:::)")


@dataclass(frozen=True)
class Text:
    """One translatable piece: where it is (cell, kind) and its English text."""

    cell: int
    kind: str  # "markdown", "comment" or "string" (the source of a string literal)
    text: str


def markdown_blocks(source: str) -> list[str]:
    """A Markdown cell split at blank lines; a fenced block (code, admonition) stays whole."""
    blocks, current, fence = [], [], None
    for line in source.splitlines():
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None and line.strip().startswith(fence) and line.strip() == fence:
            fence = None
        if not line.strip() and fence is None:
            blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    blocks.append("\n".join(current))
    return [block for block in blocks if block.strip()]


def comments(source: str) -> list[tuple[int, int, str]]:
    """(line, column, text after '# ') of each comment with words in it."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                text = token.string.lstrip("#").strip()
                if re.search(r"[A-Za-z]{2}", text) and not text.startswith(("noqa", "type:")):
                    found.append((*token.start, text))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


DEFINITIONS = ast.FunctionDef | ast.AsyncFunctionDef


def docstring_values(node: ast.AST) -> list[ast.expr]:
    """The docstring of a module, class or function, as its string literal node."""
    body = getattr(node, "body", None)
    is_documented = isinstance(node, ast.Module | ast.ClassDef | DEFINITIONS)
    if is_documented and body and isinstance(body[0], ast.Expr):
        value = body[0].value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return [value]
    return []


def message_strings(source: str, asserts: bool, names: frozenset[str] = frozenset()) -> list[str]:
    """Source text of the learner-facing strings (courseware.shown_strings: what is printed, drawn,
    raised or hinted, and the literals that reach it), and the docstrings of the functions and
    classes the code defines (a learner reads them in the cell and in `help()`); in exercise
    code (asserts) also assert messages and a module's docstring. `names`: names shown by the
    notebook's other cells."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = shown_strings.shown_literals(tree, names)
    for node in ast.walk(tree):
        if asserts and isinstance(node, ast.Assert) and node.msg is not None:
            found.append(node.msg)
        if asserts or isinstance(node, ast.ClassDef | DEFINITIONS):
            found.extend(docstring_values(node))
    found += printed_choices(tree, found)
    strings = [
        ast.get_source_segment(source, n)
        for n in found
        if isinstance(n, ast.JoinedStr | ast.Constant)
    ]
    return list(dict.fromkeys(s for s in strings if s and re.search(r"[A-Za-z]{2}", s)))


def printed_choices(tree: ast.AST, printed: list[ast.expr]) -> list[ast.expr]:
    """The words of `name = "faster" if ... else "slower"` when a printed f-string shows
    {name}: only then, since a word the code compares or returns must stay as it is."""
    shown = {
        inner.id
        for literal in printed
        if isinstance(literal, ast.JoinedStr)
        for inner in ast.walk(literal)
        if isinstance(inner, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in shown
            and isinstance(node.value, ast.IfExp)
            and shown_strings.is_words(node.value.body)
            and shown_strings.is_words(node.value.orelse)
        ):
            found += [node.value.body, node.value.orelse]
    return found


def python_messages(package: Path) -> list[Text]:
    """The messages a package shows through `_("...")` (fxcourse.messages), in file order."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "_"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.append(Text(node.lineno, "message", node.args[0].value))
    return found


def shown_source_texts(package: Path) -> list[Text]:
    """The docstrings and comments of the package's functions that chapters print
    (fxcourse.shown_source.SHOWN), as fxcourse.shown_source.source looks them up."""
    from fxcourse.shown_source import SHOWN

    found = []
    for module, names in SHOWN.items():
        path = package.parent / (module.replace(".", "/") + ".py")
        if not path.is_file() or path.parent != package:
            continue
        source = path.read_text(encoding="utf-8")
        for node in ast.parse(source).body:
            if isinstance(node, DEFINITIONS) and node.name in names:
                found += [Text(node.lineno, "message", ast.get_docstring(node) or "")]
                function = ast.get_source_segment(source, node, padded=True) or ""
                found += [
                    Text(node.lineno + line, "comment", t) for line, _, t in comments(function)
                ]
    return [text for text in found if text.text]


def texts_of(nb: nbformat.NotebookNode, asserts: bool = False) -> Iterator[Text]:
    """Every translatable text of a notebook, in order (mistake cells are not learner-facing)."""
    names = notebook_shown_names(nb)
    for index, cell in enumerate(nb.cells):
        if cell.metadata.get("tryit", {}).get("role") == "mistake":
            continue
        if cell.cell_type == "markdown":
            for block in markdown_blocks(cell.source):
                yield Text(index, "markdown", block)
        elif cell.cell_type == "code":
            for _, _, text in comments(cell.source):
                yield Text(index, "comment", text)
            for text in message_strings(cell.source, asserts, names):
                yield Text(index, "string", text)


def notebook_shown_names(nb: nbformat.NotebookNode) -> frozenset[str]:
    """The names any code cell of nb shows (a cell may set a label another prints)."""
    names = set()
    for cell in nb.cells:
        if cell.cell_type == "code":
            try:
                names |= shown_strings.shown_names(ast.parse(cell.source))
            except SyntaxError:
                continue
    return frozenset(names)


def sentence_literals(source: str) -> list[str]:
    """Source text of every string literal that holds words (outside its {placeholders}): the
    messages a module builds before it asserts or returns them."""
    tree = ast.parse(source)
    inner = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr | ast.FormattedValue)
        for child in ast.walk(node)
        if child is not node
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in inner or not isinstance(node, ast.JoinedStr | ast.Constant):
            continue
        text = ast.get_source_segment(source, node)
        if text and isinstance(getattr(node, "value", ""), str):
            words = re.sub(r"\{[^{}]*\}", "", text)
            if re.search(r"[A-Za-z]{2,}[ ,:]+[A-Za-z(]", words):
                found.append(text)
    return found


def python_file_texts(source: str) -> list[Text]:
    """What a learner reads in a module beside an exercise (verify.py): its comments, docstrings
    and the messages its checks fail with."""
    found = [Text(line, "comment", text) for line, _, text in comments(source)]
    strings = message_strings(source, asserts=True) + sentence_literals(source)
    return found + [Text(0, "string", text) for text in dict.fromkeys(strings)]


def grader_messages(source: str) -> list[Text]:
    """What the grader's checks.py tells a learner: the messages its checks fail with and the
    names of its cases (`what`, even of two words: "a chain"); its docstrings and comments are
    the instructor's."""
    strings = message_strings(source, asserts=True) + sentence_literals(source)
    strings += [s for s in string_literals(source) if re.search(r"[A-Za-z]+ [A-Za-z]{2,}", s)]
    # raw strings are its patterns (code), not messages
    kept = (s for s in dict.fromkeys(strings) if not s.startswith(('"""', "r", "R")))
    return [Text(0, "string", s) for s in kept]


def string_literals(source: str) -> list[str]:
    """Source text of every plain string literal (not part of an f-string)."""
    tree = ast.parse(source)
    inner = {id(c) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for c in ast.walk(n)}
    return [
        ast.get_source_segment(source, node) or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inner
    ]
