"""What a learner wrote, made safe to show in the instructor's browser (the formgrader's views and
the feedback HTML are pages of the instructor's Jupyter server: a script in them would act with the
instructor's session).

LearnerHTML runs in nbconvert's HTMLExporter before any page is rendered (grader/nbgrader_config.py
puts it in HTMLExporter.preprocessors). Markdown is rendered to HTML first, because markdown
itself makes `javascript:` links that a filter of its source would not see; the HTML is then
cleaned by bleach (nbconvert's SanitizeHTML) with an allow-list: plain markup, tables, links to
http(s)/mailto, images from http(s) and data:image URLs. No <script>, <style>, <iframe>, <svg>,
event handler or `javascript:` URL survives; SVG output is shown as an <img> (a browser runs no
script of an SVG loaded as an image); JavaScript and widget outputs are dropped.
"""

from __future__ import annotations

import base64
import re

from bleach.sanitizer import ALLOWED_TAGS, Cleaner
from nbconvert.filters.markdown import markdown2html
from nbconvert.preprocessors.sanitize import SanitizeHTML

TAGS = sorted(
    {*ALLOWED_TAGS, "p", "div", "span", "pre", "br", "hr", "img", "sub", "sup", "del", "s"}
    | {"h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"}
    | {"details", "summary", "dl", "dt", "dd", "figure", "figcaption", "caption"}
)
PLAIN_ATTRIBUTES = {"class", "title", "alt", "width", "height", "colspan", "rowspan", "align"}
IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml)[;,]", re.IGNORECASE)
WEB = re.compile(r"(https?:|mailto:|#|[^:/?#]*(?:[/?#]|$))", re.IGNORECASE)


def allowed_attribute(tag: str, name: str, value: str) -> bool:
    if name in PLAIN_ATTRIBUTES:
        return True
    if tag == "img" and name == "src":
        return bool(IMAGE_DATA.match(value) or WEB.match(value))
    return tag == "a" and name == "href" and bool(WEB.match(value))


CLEANER = Cleaner(
    tags=TAGS,
    attributes=allowed_attribute,
    protocols=["http", "https", "mailto", "data"],
    strip_comments=True,
)


def clean(html: str) -> str:
    """Allowed markup only, as one line inside a <div>: the templates render markdown cells
    through markdown again, and markdown reads HTML on one line as one untouched block (a blank
    line would let it make links of the text after it)."""
    return "<div>" + CLEANER.clean(html).replace("\r", "").replace("\n", "&#10;") + "</div>"


class LearnerHTML(SanitizeHTML):
    """SanitizeHTML with the allow-list above, markdown rendered before it is cleaned."""

    safe_output_keys = {"metadata", "text/plain", "image/png", "image/jpeg", "image/gif"}

    def sanitize_html_tags(self, html_str: str) -> str:
        return clean(html_str)

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "markdown":
            cell.source = clean(markdown2html(cell.source))
            cell.pop("attachments", None)  # attachment: images no longer resolve; never scripts
            return cell, resources
        if cell.cell_type == "code":
            for output in cell.outputs:
                if "data" in output:
                    output["data"] = shown_data(output["data"])
        return super().preprocess_cell(cell, resources, cell_index)


def shown_data(data: dict) -> dict:
    """Markdown and SVG outputs as HTML, cleaned later: markdown rendered, SVG as an image."""
    data = dict(data)
    if "text/markdown" in data:
        data.setdefault("text/html", markdown2html(data.pop("text/markdown")))
    if "image/svg+xml" in data:
        svg = data.pop("image/svg+xml")
        svg = svg if isinstance(svg, str) else "".join(svg)
        encoded = base64.b64encode(svg.encode()).decode()
        data.setdefault("text/html", f'<img src="data:image/svg+xml;base64,{encoded}" alt="SVG">')
    return data
