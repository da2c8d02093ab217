"""The fxcourse functions a chapter prints are printed in the learner's language: docstrings and
comments translated, the code itself unchanged (fxcourse/shown_source.py)."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap

import nbformat
import pytest

from courseware.i18n import extract
from courseware.repository import HERE
from fxcourse import languages, messages, shown_source

FUNCTIONS = [
    getattr(importlib.import_module(module), name)
    for module, names in shown_source.SHOWN.items()
    for name in names
]


def code_only(text: str) -> str:
    """The function's code with its docstrings left out (comments are not in the tree)."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if shown_source.documented(node) is not None:
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


@pytest.mark.parametrize("language", languages.translation_codes())
@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.__name__)
def test_a_shown_function_reads_in_the_language_with_the_same_code(function, language):
    english = textwrap.dedent(inspect.getsource(function))
    with messages.speaking(language):
        shown = shown_source.source(function)
    assert code_only(shown) == code_only(english)
    left = [text for _, _, text in extract.comments(shown) if messages._catalog(language).get(text)]
    assert not left, f"English comments left: {left}"
    docstring = ast.get_docstring(ast.parse(shown).body[0])
    assert not docstring or docstring not in messages._catalog(language), docstring


def test_in_english_a_shown_function_is_its_source():
    with messages.speaking(languages.SOURCE.code):
        assert all(shown_source.source(f) == inspect.getsource(f) for f in FUNCTIONS)


def test_a_function_nobody_extracts_for_is_refused():
    with pytest.raises(ValueError, match="not in SHOWN"):
        shown_source.source(shown_source.quoted)


def test_a_docstring_keeps_its_indentation_and_quotes():
    assert shown_source.quoted("一行", 4) == '"""一行"""'
    assert shown_source.quoted("第一行\n\n第二行", 4) == '"""第一行\n\n    第二行\n    """'


def test_chapters_print_fxcourse_functions_through_source():
    """inspect.getsource on a name imported from fxcourse would print its English docstring."""
    for path in sorted(HERE.sources.glob("[0-9][0-9]_*.ipynb")):
        code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        trees = [ast.parse(text) for text in code] if "getsource" in "".join(code) else []
        ours = {
            alias.asname or alias.name
            for tree in trees
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fxcourse")
            for alias in node.names
        }
        for node in (n for tree in trees for n in ast.walk(tree)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "getsource":
                root = node.args[0]
                while isinstance(root, ast.Attribute | ast.Call | ast.Subscript):
                    root = getattr(root, "value", None) or root.func
                assert getattr(root, "id", None) not in ours, f"{path.name}: use shown_source"
