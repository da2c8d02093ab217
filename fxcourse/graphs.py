"""Show a torch.fx GraphModule as an inline SVG picture, or as text when Graphviz is missing."""

from __future__ import annotations

import shutil

import torch.fx

MISSING_DOT_HINT = (
    "Graph picture unavailable: Graphviz's `dot` binary is not on PATH "
    "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz). Showing text instead."
)


class GraphText:
    """The text form of a graph, shown in a notebook (or printed) when no picture can be drawn."""

    def __init__(self, text: str, hint: str):
        self.text = text
        self.hint = hint

    def __repr__(self) -> str:
        return f"{self.hint}\n{self.text}"


def graph_svg(gm: torch.fx.GraphModule, name: str = "graph") -> str:
    """Render `gm` with torch's FxGraphDrawer and Graphviz; returns the SVG document as text."""
    from torch.fx.passes.graph_drawer import FxGraphDrawer

    drawer = FxGraphDrawer(gm, name)
    return drawer.get_dot_graph().create_svg().decode("utf-8")


def dot_available() -> bool:
    return shutil.which("dot") is not None


def show_graph(gm: torch.fx.GraphModule, name: str = "graph"):
    """Return something Jupyter displays: an SVG picture of `gm`, or its text graph plus a hint."""
    if not dot_available():
        return GraphText(str(gm.graph), MISSING_DOT_HINT)
    from IPython.display import SVG

    return SVG(graph_svg(gm, name))
