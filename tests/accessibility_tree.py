"""What a screen reader is given on a page open in Playwright's Chromium: the browser's own
accessibility tree (CDP Accessibility.getFullAXTree; Playwright's aria snapshot, computed by
Playwright itself, leaves out the name of a <summary>, the control that folds an answer), each
node with the page element it stands for.

`named_nodes(page)` lists every node of the tree that is not ignored: its role, its computed
name, and for the element it stands for the text a sighted reader sees in it (innerText, pictures
and icons left out), whether it is inside the page's article, and its language (the nearest
lang attribute). The tests (tests/test_site.py) read it: an image's name says what the picture
shows; a control's name is its visible label (WCAG 2.5.3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Chromium's roles (CDP) for what a reader operates, and for pictures.
CONTROL_ROLES = {
    "button",
    "link",
    "DisclosureTriangle",  # <summary>
    "checkbox",
    "radio",
    "switch",
    "tab",
    "menuitem",
    "menuitemradio",
    "combobox",
    "searchbox",
    "textbox",
}
IMAGE_ROLES = {"image", "img", "graphics-document"}
# Icon fonts (Font Awesome) draw with characters of Unicode's private use area.
ICON_CHARACTERS = re.compile("[\ue000-\uf8ff]")

MARK_ELEMENTS = """
() => {
  let i = 0;
  for (const el of document.body.querySelectorAll('*')) {
    el.setAttribute('data-ax-i', String(i++));
    el.setAttribute('data-ax-text', el.innerText === undefined ? '' : el.innerText);
    el.setAttribute('data-ax-article', el.closest('article') ? '1' : '');
    const lang = el.closest('[lang]');
    el.setAttribute('data-ax-lang', lang ? lang.getAttribute('lang') : '');
  }
}
"""


@dataclass(frozen=True)
class Named:
    role: str
    name: str
    visible: str  # the element's visible text (innerText), "" for an icon or a picture
    in_article: bool
    lang: str
    tag: str

    def __str__(self) -> str:
        return f"{self.role} {self.name!r} (<{self.tag}>, visible {self.visible!r})"


def squashed(text: str) -> str:
    """Text compared as a reader meets it: icons, spaces and letter case left out."""
    return re.sub(r"\s+", "", ICON_CHARACTERS.sub("", text)).casefold()


def _elements(node: dict, found: dict[int, dict]) -> None:
    attributes = node.get("attributes") or []
    found[node["backendNodeId"]] = {
        "tag": node.get("localName", ""),
        **dict(zip(attributes[::2], attributes[1::2], strict=True)),
    }
    for child in node.get("children") or []:
        _elements(child, found)


def named_nodes(page) -> list[Named]:
    """Every node of the page's accessibility tree that a screen reader is given."""
    page.evaluate(MARK_ELEMENTS)
    cdp = page.context.new_cdp_session(page)
    try:
        tree = cdp.send("Accessibility.getFullAXTree")["nodes"]
        elements: dict[int, dict] = {}
        _elements(cdp.send("DOM.getDocument", {"depth": -1})["root"], elements)
    finally:
        cdp.detach()
    found = []
    for node in tree:
        element = elements.get(node.get("backendDOMNodeId"))
        if node.get("ignored") or not element or "data-ax-i" not in element:
            continue
        found.append(
            Named(
                role=node.get("role", {}).get("value", ""),
                name=(node.get("name") or {}).get("value", "") or "",
                visible=element.get("data-ax-text", ""),
                in_article=bool(element.get("data-ax-article")),
                lang=element.get("data-ax-lang", ""),
                tag=element["tag"],
            )
        )
    return found


def controls_named_otherwise(nodes: list[Named]) -> list[Named]:
    """Controls whose accessible name is not their visible label (an icon-only control, with
    nothing visible to say, is left to the other checks)."""
    return [
        node
        for node in nodes
        if node.role in CONTROL_ROLES
        and squashed(node.visible)
        and squashed(node.name) != squashed(node.visible)
    ]


FILE_NAME = re.compile(r"(^|/)[\w.-]+\.(png|jpe?g|gif|svg|webp)$|^[0-9a-f]{32,}", re.I)


def images_named_badly(nodes: list[Named]) -> list[Named]:
    """Pictures with no name, a file's name, or "graph picture" alone for a name."""
    return [
        node
        for node in nodes
        if node.role in IMAGE_ROLES
        and (
            not node.name.strip()
            or FILE_NAME.search(node.name.strip())
            or node.name.strip().casefold() == "graph picture"
        )
    ]
