"""What a learner wrote, made safe to show in the instructor's browser (the formgrader's views and
the feedback HTML are pages of the instructor's Jupyter server: a script in them would act with the
instructor's session).

LearnerHTML runs in nbconvert's HTMLExporter before any page is rendered (grader/nbgrader_config.py
puts it in HTMLExporter.preprocessors). Markdown is rendered to HTML first, because markdown
itself makes `javascript:` links that a filter of its source would not see; the HTML is then
cleaned by bleach (nbconvert's SanitizeHTML) with an allow-list: plain markup, tables, links to
http(s)/mailto, images from http(s) and data:image URLs. No <script>, <style>, <iframe>, <svg>,
event handler or `javascript:` URL survives; SVG output is shown as an <img> (a browser runs no
script of an SVG loaded as an image); JavaScript and widget outputs are dropped. An output's
metadata keeps only numeric image sizes (nbconvert's templates write width and height into the
page unquoted: `"width": "1 onerror=..."` would be a handler). A markdown cell's pasted images
(attachments) are shown; a link to an attachment the cell lacks is an empty image, not an error
that stops the whole page.

FeedbackOnly (GenerateFeedback's post_convert_hook) removes from each feedback folder what nbgrader
did not make from a notebook (it copies a submission's other files there, a learner's .html too).
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bleach.sanitizer import ALLOWED_TAGS, Cleaner
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors.sanitize import SanitizeHTML

TAGS = sorted(
    {*ALLOWED_TAGS, "p", "div", "span", "pre", "br", "hr", "img", "sub", "sup", "del", "s"}
    | {"h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"}
    | {"details", "summary", "dl", "dt", "dd", "figure", "figcaption", "caption"}
)
PLAIN_ATTRIBUTES = {"class", "title", "alt", "width", "height", "colspan", "rowspan", "align"}
IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml)[;,]", re.IGNORECASE)
WEB = re.compile(r"(https?:|mailto:|#|[^:/?#]*(?:[/?#]|$))", re.IGNORECASE)


IMAGE_TYPES = ("image/svg+xml", "image/png", "image/jpeg", "image/gif")
SIZE = re.compile(r"\d{1,5}(\.\d{1,3})?(px|%)?")


class LearnerMarkdown(IPythonRenderer):
    """nbconvert's renderer, with a cell's image attachments only: a link to an attachment the
    cell lacks is an empty image (nbconvert's raises, and the whole page would fail)."""

    def _embed_image_or_attachment(self, src: str) -> str:
        if src.startswith("attachment:") and src[len("attachment:") :] not in self.attachments:
            return ""
        return super()._embed_image_or_attachment(src)


def markdown2html(source: str, attachments=None) -> str:
    images = {}
    for name, bundle in (attachments if isinstance(attachments, dict) else {}).items():
        if isinstance(bundle, dict):
            kept = {t: v for t, v in bundle.items() if t in IMAGE_TYPES and isinstance(v, str)}
            images.update({name: kept} if kept else {})
    renderer = LearnerMarkdown(escape=False, attachments=images)
    return MarkdownWithMath(renderer=renderer).render(source)


def shown_metadata(metadata) -> dict:
    """An output's metadata as the templates read it: image width and height (numbers only:
    nbconvert writes them into the page unquoted) and `unconfined`; nothing else."""
    kept: dict = {}
    for scope, values in [(None, metadata), *((t, metadata.get(t)) for t in IMAGE_TYPES)]:
        if not isinstance(values, dict):
            continue
        sizes = {
            key: values[key]
            for key in ("width", "height")
            if type(values.get(key)) in (int, float) or SIZE.fullmatch(str(values.get(key)))
        }
        if values.get("unconfined") is True:
            sizes["unconfined"] = True
        if scope is None:
            kept.update(sizes)
        elif sizes:
            kept[scope] = sizes
    return kept


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
            cell.source = clean(markdown2html(cell.source, cell.get("attachments")))
            cell.pop("attachments", None)  # attachment: images no longer resolve; never scripts
            return cell, resources
        if cell.cell_type == "code":
            for output in cell.outputs:
                if "metadata" in output:
                    output["metadata"] = shown_metadata(output["metadata"])
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


# Files of a feedback folder that nbgrader writes itself (release-feedback reads them).
FEEDBACK_KEEPS = frozenset({"timestamp.txt", "submission_secret.txt"})


@dataclass(frozen=True)
class FeedbackOnly:
    """GenerateFeedback's post_convert_hook (grader/nbgrader_config.py): a feedback folder keeps
    only the pages nbgrader made from the graded notebooks. nbgrader copies a submission's other
    files there too, and a learner's own .html (or .svg, .htm) would be handed out uncleaned."""

    autograded: Path
    feedback: Path

    def __call__(self, assignment: str, student: str, notebooks: list[str]) -> None:
        # assignment and student are nbgrader's patterns ("*"): the notebooks' folder names them
        for folder in sorted({Path(notebook).parent for notebook in notebooks}):
            pages = {f"{Path(notebook).stem}.html" for notebook in notebooks}
            target = self.feedback / folder.relative_to(self.autograded)
            if removed := keep_only(target, FEEDBACK_KEEPS | pages):
                print(f"feedback: removed {', '.join(removed)} from {target}: not feedback")
            for page in pages & {path.name for path in target.glob("*.html")}:
                readable(target / page)


# nbgrader's feedback page: no language, and links (#337ab7 on grey, no underline) that fail
# WCAG 2.1 AA's contrast (axe-core: html-has-lang, color-contrast, link-in-text-block).
READABLE_STYLE = (
    "<style>a,a:visited{color:#1f5f99;text-decoration:underline}"
    ".panel-primary>.panel-heading a,.panel-primary>.panel-heading a:visited{color:#fff!important}"
    ".panel-primary>.panel-heading{background-color:#245b8a}"
    # pygments' keywords (`is`) and comments are a shade too light on the cells' grey
    ".highlight .ow{color:#7f1fbf}.highlight .c,.highlight .c1,.highlight .cm{color:#2f6464}"
    ".highlight .si{color:#8b3f5c}"
    "</style>"
)


def readable(page: Path) -> None:
    """Give a feedback page its language and links a reader can tell apart (WCAG 2.1 AA)."""
    text = page.read_text(encoding="utf-8")
    if READABLE_STYLE in text:
        return
    text = text.replace("<html>", '<html lang="en">', 1)
    text = text.replace("</head>", READABLE_STYLE + "</head>", 1)
    page.write_text(text, encoding="utf-8")


def keep_only(folder: Path, names: Iterable[str]) -> list[str]:
    """Remove everything in folder but the regular files called `names`; the names removed."""
    removed = []
    for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
        if entry.name in names and entry.is_file(follow_symlinks=False):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
        removed.append(entry.name)
    return removed
