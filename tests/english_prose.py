"""What a Chinese reader reads that is English prose: the detector shared by the browser tests in
each translation (test_browser.py) and the site's scan of every executed Chinese chapter
(test_site_english.py); its own tests are in test_english_prose.py.

A run of four or more English words is a sentence; code, printed Python source, library messages
quoted as "ClassName: message", reprs and schemas are not the course's prose.
"""

from __future__ import annotations

import html.parser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# English a Chinese learner may meet, each named in the Chinese README: nbgrader's interface has
# no Chinese (its Validate dialog), and Python prints the header of every traceback in English.
UNTRANSLATED_LABELS = (
    "Validation Results",
    "The following cell failed:",
    "Success! Your notebook passes all the tests.",
    "Traceback (most recent call last)",
)
# Names of a paper and of a documentation page's section that chapter 1's reading list cites.
CITED_NAMES = (
    "torch.fx: Practical Program Capture and Transformation for Deep Learning in Python",
    "Limitations of Symbolic Tracing",
)
ALLOWED_ENGLISH = UNTRANSLATED_LABELS + CITED_NAMES
CHINESE_README = ROOT / "env" / "student-edition" / "README.zh.md"
ENGLISH_WORD = r"[A-Za-z]+(?:'[A-Za-z]+)?"
ENGLISH_SENTENCE = re.compile(rf"\b{ENGLISH_WORD}(?:,? {ENGLISH_WORD}){{3,}}")
FENCED_CODE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
LINK_TARGET = re.compile(r"\]\([^)]*\)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# A traceback's quoted source: "File ...", "Cell In[3], line 2", "----> 2 check(...)", "  3 x = 1".
TRACEBACK_SOURCE = re.compile(r"^\s*(File |Cell In\[|-+> ?\d|\d+ |\^)")
# What code prints that is not the course's to translate: Python source (`print(gm.code)`: a def
# or class line and its indented body), a library's exception or warning quoted as
# "ClassName: message" (a CamelCase class name: TraceError, FutureWarning), an object's repr.
PRINTED_CODE_START = re.compile(r"^(@|(async )?def \w+|class \w+)")
# A printed definition goes on through indented lines, blank ones and a signature's closing ")".
CODE_GOES_ON = ("", " ", ")", "]", "}", "@")
LIBRARY_MESSAGE = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)*[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+: ")
OBJECT_REPR = re.compile(r"<[^<>\n]*>")
# An operator's schema as torch prints it: "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor"
OPERATOR_SCHEMA = re.compile(r"^\s*\w+::[\w.]+\(.*\) -> ")


def english_sentences(text: str) -> list[str]:
    """The English sentences in `text` that are not one of ALLOWED_ENGLISH."""
    for allowed in ALLOWED_ENGLISH:
        text = text.replace(allowed, " ")
    return [match.group() for match in ENGLISH_SENTENCE.finditer(text)]


def markdown_prose(source: str) -> str:
    for code in (FENCED_CODE, CODE_SPAN, LINK_TARGET):
        source = code.sub(" ", source)
    return re.sub(r"<[^>]+>", " ", source)


class _ProseOfHtml(html.parser.HTMLParser):
    """The text of an HTML fragment outside <code>, <pre>, <script> and <style>."""

    CODE = {"code", "pre", "script", "style"}

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.parts = 0, []

    def handle_starttag(self, tag, attrs):
        self.depth += tag in self.CODE

    def handle_endtag(self, tag):
        self.depth -= tag in self.CODE and self.depth > 0

    def handle_data(self, data):
        if not self.depth:
            self.parts.append(data)


def html_prose(fragment: str) -> str:
    parser = _ProseOfHtml()
    parser.feed(fragment)
    return " ".join(parser.parts)


def traceback_prose(text: str) -> str:
    """A traceback without the source lines it quotes (the message and the header stay)."""
    lines = ANSI.sub("", text).splitlines()
    return "\n".join(line for line in lines if not TRACEBACK_SOURCE.match(line))


def printed_prose(text: str) -> str:
    """Printed text without the Python source, library messages and reprs in it."""
    kept, in_code = [], False
    for line in text.splitlines():
        in_code = bool(PRINTED_CODE_START.match(line)) or (in_code and line[:1] in CODE_GOES_ON)
        if not in_code and not LIBRARY_MESSAGE.match(line) and not OPERATOR_SCHEMA.match(line):
            kept.append(OBJECT_REPR.sub(" ", line))
    return "\n".join(kept)


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def output_prose(output: dict) -> str:
    kind = output["output_type"]
    if kind == "stream":
        return printed_prose(_joined(output.get("text")))
    if kind == "error":
        return traceback_prose("\n".join(output["traceback"]))
    data = output.get("data", {})
    if "text/html" in data:
        return html_prose(_joined(data["text/html"]))
    if "text/markdown" in data:
        return markdown_prose(_joined(data["text/markdown"]))
    return printed_prose(_joined(data.get("text/plain")))


def learner_reads(cells: list[dict]) -> list[tuple[str, str]]:
    """(where, text) of everything the learner reads in a notebook, code left out."""
    found = []
    for cell in cells:
        where = f"cell {cell['index']}"
        if cell["type"] == "markdown":
            found.append((f"{where} (markdown)", markdown_prose(cell["source"])))
        for output in cell.get("outputs") or []:
            found.append((f"{where} ({output['output_type']})", output_prose(output)))
    return found


def english_found(read: list[tuple[str, str]]) -> list[str]:
    return [f"{where}: {s!r}" for where, text in read for s in english_sentences(text)]
