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

bleach (html5lib) takes time that grows with the square of the nesting (30,000 nested <div>s:
a minute), and mistune and bleach both grow with the size: markup over a size, tag or depth
bound is shown as escaped text, with a note (`tangled`), and each notebook has a time limit:
once it is spent, its remaining cells are shown as text, their outputs as plain text and images.

FeedbackOnly (GenerateFeedback's post_convert_hook) removes from each feedback folder what nbgrader
did not make from a notebook (it copies a submission's other files there, a learner's .html too).
"""

from __future__ import annotations

import base64
import html as html_text
import os
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bleach.sanitizer import ALLOWED_TAGS, Cleaner
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors.sanitize import SanitizeHTML

from grader.safegrade.data import clean_text
from grader.safegrade.grading_limits import LIMITS

TAGS = sorted(
    {*ALLOWED_TAGS, "p", "div", "span", "pre", "br", "hr", "img", "sub", "sup", "del", "s"}
    | {"h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"}
    | {"details", "summary", "dl", "dt", "dd", "figure", "figcaption", "caption"}
)
PLAIN_ATTRIBUTES = {"class", "title", "alt", "width", "height", "colspan", "rowspan", "align"}
IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml)[;,]", re.IGNORECASE)
WEB = re.compile(r"(https?:|mailto:|#|[^:/?#]*(?:[/?#]|$))", re.IGNORECASE)


IMAGE_TYPES = ("image/svg+xml", "image/png", "image/jpeg", "image/gif")
PLAIN_OUTPUTS = ("text/plain", "image/png", "image/jpeg", "image/gif")  # no markup to clean
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


def clean(html: str, source: str | None = None) -> str:
    """Allowed markup only, as one line inside a <div>: the templates render markdown cells
    through markdown again, and markdown reads HTML on one line as one untouched block (a blank
    line would let it make links of the text after it). Markup too big or too deeply nested to
    clean in bounded time is shown as text instead (the source it came from, if given)."""
    if (why := tangled(html)) is not None:
        return as_text(source if source is not None else html, why)
    return one_line("<div>" + CLEANER.clean(html) + "</div>")


def one_line(html: str) -> str:
    return html.replace("\r", "").replace("\n", "&#10;")


TAG = re.compile(r"<(/?)([A-Za-z][^\s/>]*)[^>]*?(/?)>")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
VOID |= {"param", "track", "wbr"}


def tangled(html: str) -> str | None:
    """Why cleaning this markup could take long (its size, its tags, their nesting), or None."""
    if len(html) > LIMITS.learner_html_chars:
        return f"it is {len(html)} characters long (at most {LIMITS.learner_html_chars})"
    tags = depth = 0
    for tag in TAG.finditer(html):
        tags += 1
        if tags > LIMITS.learner_html_tags:
            return f"it has over {LIMITS.learner_html_tags} tags"
        closing, name, self_closing = tag.groups()
        if self_closing or name.lower() in VOID:
            continue
        depth = max(0, depth - 1) if closing else depth + 1
        if depth > LIMITS.learner_html_depth:
            return f"its tags nest over {LIMITS.learner_html_depth} deep"
    return None


def as_text(text: str, why: str) -> str:
    """The learner's text, escaped, in a <pre> (its first learner_html_text_chars characters),
    after a note saying why it is shown so."""
    note = f"<p><em>Shown as text: {html_text.escape(why)}.</em></p>"
    shown = clean_text(text, LIMITS.learner_html_text_chars)
    return one_line(f"<div>{note}<pre>{html_text.escape(shown)}</pre></div>")


class LearnerHTML(SanitizeHTML):
    """SanitizeHTML with the allow-list above, markdown rendered before it is cleaned; each
    notebook within a time limit and a budget of characters shown (nbconvert's own passes over
    the page, markdown and BeautifulSoup, take time with its size)."""

    safe_output_keys = {"metadata", "text/plain", "image/png", "image/jpeg", "image/gif"}
    deadline, left = float("inf"), None  # set per notebook by preprocess

    def sanitize_html_tags(self, html_str: str) -> str:
        return clean(html_str)

    def preprocess(self, nb, resources):
        self.deadline = time.monotonic() + LIMITS.learner_html_time
        self.left = LIMITS.learner_html_notebook_chars
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        late = time.monotonic() > self.deadline
        if cell.cell_type == "markdown":
            shown = as_text(cell.source, OUT_OF_TIME) if late else markdown_cell(cell)
            cell.source = self.markup(shown)
            cell.pop("attachments", None)  # attachment: images no longer resolve; never scripts
            return cell, resources
        if cell.cell_type == "code":
            cell.source = self.text(cell.source)
            for output in cell.outputs:
                if "metadata" in output:
                    output["metadata"] = shown_metadata(output["metadata"])
                if "data" in output:
                    shown = plain_data(output["data"]) if late else shown_data(output["data"])
                    output["data"] = shown
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        for output in cell.get("outputs", []):
            self.charge_output(output)
        return cell, resources

    def text(self, text: str) -> str:
        """Plain text, cut to what is left of the notebook's characters (counted as the page
        holds them, escaped), with a note."""
        if self.left is None:
            return text
        kept = text[: self.left]
        while (cost := escaped_length(kept)) > self.left:
            kept = kept[: len(kept) // 2]
        self.left -= cost
        if len(kept) == len(text):
            return text
        self.left = 0
        return kept + f"\n[not shown: {NOT_SHOWN}]"

    def markup(self, html: str) -> str:
        """Cleaned markup, or a note when it is over what is left of the notebook's characters."""
        if self.left is None or len(html) <= self.left:
            return self.text(html)
        self.left = 0
        return f"<div><p><em>Not shown: {NOT_SHOWN}.</em></p></div>"

    def charge_output(self, output) -> None:
        if "text" in output:
            output["text"] = self.text(output["text"])
        if "traceback" in output:
            output["traceback"] = [self.text(line) for line in output["traceback"]]
        for key, value in output.get("data", {}).items():
            if isinstance(value, str):
                output["data"][key] = self.markup(value) if key == "text/html" else self.text(value)


def escaped_length(text: str) -> int:
    return len(text) + 3 * sum(map(text.count, "<>&")) + 4 * text.count('"')


OUT_OF_TIME = f"cleaning this notebook's markup took over {LIMITS.learner_html_time:g} s"
NOT_SHOWN = f"this notebook's cells passed {LIMITS.learner_html_notebook_chars} characters"


def markdown_cell(cell) -> str:
    """A markdown cell rendered and cleaned; as text when too long to render in bounded time."""
    if len(cell.source) > LIMITS.learner_html_chars:
        return as_text(cell.source, f"it is {len(cell.source)} characters long")
    return clean(markdown2html(cell.source, cell.get("attachments")), cell.source)


def plain_data(data: dict) -> dict:
    """An output's plain text and images only (no markup to clean)."""
    return {key: value for key, value in data.items() if key in PLAIN_OUTPUTS}


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
