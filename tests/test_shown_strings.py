"""The extractor finds what a learner reads: strings printed, raised, drawn as a title, or carried
to a shown name by an assignment or a loop; strings that stay code are left alone."""

from __future__ import annotations

import pytest

from courseware.i18n import message_strings, translate_notebook

SHOWN = {
    "a name read by a hint": 'why = "use tensor operations that trace"\ncheck(ok, why)',
    "a branch of a printed or": 'print(path, users or "imports nothing from it")',
    "a raised message": 'raise RuntimeError("this model can only be interpreted")',
    "a torch._check message": 'torch._check(n <= 3, lambda: "asked for more rows than x has")',
    "a helper's title": 'show_graph(gm, "GatedNet with Linear traced into")',
    "a chart's axis label": 'horizontal_bars(sizes, "bytes (batch of 2)", title)',
    "a printed loop label": 'for label, fn in [("run vs generated code", f)]:\n    print(label)',
    "a dict key through items()": 'for name, m in {"one conv, two names": m}.items():\n'
    '    print(f"{name}: ok")',
    "a dict key through a name": 'cases = {"tuple vs tensor": 1}\nfor label in cases:\n'
    "    check(ok, label)",
    "an f-string assigned, then printed": 'outcome = f"swap runs: {ok}"\nprint(outcome)',
    "a case's kind picked from options": 'KINDS = ["a layer inside a block"]\n'
    'KINDS += ["a name used twice"]\n'
    'def cases(make):\n    kind, n = make.each(KINDS), 2\n    make.note(f"{kind}, {n}")',
    "options sampled for a case's note": 'OTHERS = {"a copy in float16": f}\n'
    "def cases(make):\n    others = make.rng.sample(list(OTHERS), 2)\n"
    '    make.note(f"after the model: {others[0]}")',
    "a hint joined with +": 'check(ok, reason(x) + "does the first member hold a real spec?")',
    "a case note joined with +": 'make.note(f"input {layout}; calls: " + ", ".join(paths))',
    "a table's column headers": 'print(tabulate(rows, headers=["node", "shape (or type)"]))',
    "a function's docstring": 'def fold(gm):\n    """Fold every pair, then recompile."""\n',
    "a method's docstring": "class P(Interpreter):\n    def run_node(self, n):\n"
    '        """Time one node."""\n        return 1',
}
CODE = {
    "a mode string": 'mode = "reduce-overhead"\nprint(mode)',
    "an identifier as a title": 'show_graph(gm, "TinyNet")',
    "a label that is not shown": 'for label, fn in [("run vs generated code", f)]:\n    fn()',
    "options picked for what is not shown": (
        'kind = make.each(["sigmoid", "hard sigmoid"])\nrun(kind)'
    ),
    "a key compared, not shown": 'if name == "one conv, two names":\n    pass',
    "placeholders only": 'print(f"{type(err).__name__}: {err}")',
    "a bare string that is no docstring": 'x = 1\n"""not a docstring"""',
}


@pytest.mark.parametrize("source", SHOWN.values(), ids=SHOWN.keys())
def test_a_shown_string_is_extracted(source):
    assert message_strings(source, asserts=False), source


@pytest.mark.parametrize("source", CODE.values(), ids=CODE.keys())
def test_a_string_that_stays_code_is_not(source):
    assert not message_strings(source, asserts=False), message_strings(source, asserts=False)


def test_a_label_set_in_one_cell_and_shown_in_another_is_one_value_in_every_cell():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('label = "chapter fuser"\nresults = {"chapter fuser": 1}'),
        nbformat.v4.new_code_cell('print(f"{label}: done")'),
        nbformat.v4.new_code_cell('best = results["chapter fuser"]'),
    ]
    assert message_strings(nb.cells[0].source, False, frozenset({"label"}))
    translated = translate_notebook(nb, {'"chapter fuser"': '"本章的融合器"'})
    assert all('"chapter fuser"' not in cell.source for cell in translated.cells)
    assert translated.cells[2].source == 'best = results["本章的融合器"]'


def test_a_docstring_of_a_chapter_function_is_translated_in_place():
    import nbformat

    nb = nbformat.v4.new_notebook()
    source = 'def fold(gm):\n    """Fold every pair, then recompile."""\n    return gm'
    nb.cells = [nbformat.v4.new_code_cell(source)]
    lookup = {'"""Fold every pair, then recompile."""': '"""折叠每一对，然后重新编译。"""'}
    translated = translate_notebook(nb, lookup)
    assert translated.cells[0].source == source.replace(*lookup.popitem())


def test_every_option_of_a_shown_case_kind_is_extracted():
    """A case's kind shown by its note is picked from options (added to in another statement):
    every option is the learner's to read, and the comparison with one stays the same value."""
    source = SHOWN["a case's kind picked from options"] + '\n    if kind == "a name used twice":\n'
    found = message_strings(source + "        pass", asserts=False)
    assert {'"a layer inside a block"', '"a name used twice"'} <= set(found), found
