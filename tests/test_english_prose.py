"""The detector of English sentences that the browser tests (tests/test_browser.py, in each
translation of the registry) and the site's scan (tests/test_site_english.py) apply to what a
translation's learner reads: tests/english_prose.py."""

from __future__ import annotations

import pytest
from english_prose import (
    CHINESE_README,
    UNTRANSLATED_LABELS,
    english_sentences,
    html_prose,
    printed_prose,
    traceback_prose,
)


@pytest.mark.parametrize(
    "text",
    [
        "Not yet: the checkpoint wants a GraphModule.",
        "<div class='box'><b>Stuck?</b> Show the reference answer</div>",
        "AssertionError: x.sigmoid(): the pass left a sigmoid node in the graph",
    ],
)
def test_an_english_sentence_is_found(text):
    prose = html_prose(text) if text.startswith("<") else traceback_prose(text)
    assert english_sentences(prose), text


@pytest.mark.parametrize(
    "text",
    [
        "还没有通过：检查点需要一个 GraphModule。",
        "def forward(self, x):\n    relu = torch.relu(x);  x = None\n    return relu",
        "opcode         name    target                   args        kwargs",
        "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor",
        "Success! Your notebook passes all the tests.",
        "<p>看看 <code>print the graph of this model</code></p><pre>for node in graph nodes</pre>",
    ],
)
def test_code_chinese_and_nbgrader_labels_are_not_english_sentences(text):
    prose = html_prose(text) if text.startswith("<") else printed_prose(text)
    assert not english_sentences(prose), english_sentences(prose)


def test_the_chinese_readme_names_every_label_left_in_english():
    readme = CHINESE_README.read_text(encoding="utf-8")
    assert [label for label in UNTRANSLATED_LABELS if label not in readme] == []


def test_printed_code_library_messages_and_reprs_are_not_the_course_s_english():
    printed = (
        "def forward(self, x):\n    _assert = torch._assert(eq, 'x has been specialized to have"
        " value True');  eq = None\n    return x\n\n"
        "torch.fx.proxy.TraceError: symbolically traced variables cannot be used as inputs\n"
        "call_function  sigmoid  <built-in method sigmoid of type object at 0x7f>\n"
        "要的是 relu，得到的是： tensor([1.])"
    )
    assert english_sentences(printed_prose(printed)) == []
    for course_line in ("Note: the graph has three nodes", "the graph has three nodes"):
        assert english_sentences(printed_prose(printed + "\n" + course_line)), course_line


def test_a_traceback_is_read_without_its_source_lines():
    traceback = (
        "\x1b[31mAssertionError\x1b[39m                            Traceback (most recent call"
        ' last)\nCell \x1b[32mIn[14]\x1b[39m, line 3\n----> 3 check_spelling("x.sigmoid()",'
        " tanh of the input here)\n\x1b[31mAssertionError\x1b[39m: x.sigmoid()：应为 tanh"
    )
    assert english_sentences(traceback_prose(traceback)) == []
    assert english_sentences(traceback_prose(traceback + ", not the original sigmoid node"))
