"""Draw how a GraphModule, its Graph and its Nodes point at each other (chapter 2).

    show_ir_links(gm)

Every arrow is read off the live objects when the picture is drawn (nothing is hard-coded), so
the picture shows the links this very module has: `gm.graph`, `graph.owning_module`, the node
list (`graph.nodes`, then `node.next`), `node.graph`, `node.users` (each node's `args` are the
same edges, read the other way) and, for a call_module node, the submodule its target names.
"""

from __future__ import annotations

import html
from typing import NamedTuple

import torch
import torch.fx

from fxcourse.graphs import OP_COLOURS, GraphPicture, GraphText, alt_text, dot_available, listed
from fxcourse.messages import _

DARK, GREY, BLUE, RED = "#1f2937", "#6b7280", "#2563eb", "#b91c1c"
STYLES = {  # link kind -> (colour, line style, whether it shapes the layout)
    ".graph": (DARK, "solid", True),
    ".owning_module": (GREY, "dashed", False),
    ".nodes": (DARK, "solid", True),
    ".next": (DARK, "bold", True),
    "node.graph": (GREY, "dotted", False),
    ".users": (BLUE, "solid", False),
    ".target": (RED, "dashed", True),
    "submodule": (RED, "solid", True),
}


class Link(NamedTuple):
    source: str  # "gm", "graph", "node <name>" or "module <path>"
    target: str
    kind: str  # a key of STYLES
    label: str


def ir_links(gm: torch.fx.GraphModule) -> list[Link]:
    """Every link the picture draws, read off the objects themselves."""
    graph = gm.graph
    nodes = list(graph.nodes)
    links = [Link("gm", "graph", ".graph", ".graph")]
    if graph.owning_module is gm:
        links.append(Link("graph", "gm", ".owning_module", ".owning_module"))
    if nodes:
        links.append(Link("graph", f"node {nodes[0].name}", ".nodes", ".nodes"))
    for node in nodes:
        here = f"node {node.name}"
        if node.next.op != "root":  # the sentinel that closes the list is not drawn
            links.append(Link(here, f"node {node.next.name}", ".next", ".next"))
        if node.graph is graph:
            links.append(Link(here, "graph", "node.graph", ".graph"))
        links += [Link(here, f"node {user.name}", ".users", ".users") for user in node.users]
        if node.op == "call_module":
            module = f"module {node.target}"
            links.append(Link(here, module, ".target", f'.target "{node.target}"'))
            links.append(Link("gm", module, "submodule", f".{node.target}"))
    return list(dict.fromkeys(links))  # a module called twice is still one attribute


def _node_label(node: torch.fx.Node) -> str:
    return f"<<b>{html.escape(node.name)}</b><br/>{node.op}>"


def to_dot(gm: torch.fx.GraphModule, name: str = "ir_links"):
    """The link picture as a graphviz.Digraph."""
    import graphviz

    dot = graphviz.Digraph(name, graph_attr={"rankdir": "LR", "fontname": "Helvetica"})
    dot.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="11")
    dot.attr("edge", fontname="Helvetica", fontsize="9", arrowsize="0.7")
    dot.node("gm", f"<<b>GraphModule</b><br/>class {type(gm).__name__}>", fillcolor="#fde68a")
    dot.node("graph", "<<b>Graph</b>>", fillcolor="#e0e7ff")
    with dot.subgraph(name="cluster_nodes") as row:
        row.attr(label=_("Nodes, in graph order"), style="dashed", color="#9ca3af", fontsize="10")
        for node in gm.graph.nodes:
            row.node(f"node {node.name}", _node_label(node), fillcolor=OP_COLOURS[node.op])
    links = ir_links(gm)
    for link in links:
        if link.kind == "submodule":
            path = link.target.removeprefix("module ")
            kind = type(gm.get_submodule(path)).__name__
            dot.node(link.target, f"<<b>{html.escape(path)}</b><br/>{kind}>", fillcolor="#fee2e2")
    for link in links:
        colour, style, shapes_layout = STYLES[link.kind]
        dot.edge(
            link.source,
            link.target,
            label=link.label,
            color=colour,
            fontcolor=colour,
            style=style,
            constraint=str(shapes_layout).lower(),
        )
    return dot


def links_text(gm: torch.fx.GraphModule) -> str:
    """The links as text, one per line."""
    return "\n".join(f"{link.source} --{link.label}--> {link.target}" for link in ir_links(gm))


def _box_name(gm: torch.fx.GraphModule, box: str) -> str:
    """A box as the picture names it: GraphModule, Graph, a node's name, a submodule's path."""
    kind, _space, name = box.partition(" ")
    if kind == "module":
        return _("the submodule {path}").format(path=name)
    return name or {"gm": "GraphModule", "graph": "Graph"}[kind]


def links_alt(gm: torch.fx.GraphModule, name: str = "ir_links") -> str:
    """The picture's text alternative: object by object, where its links point."""
    links = ir_links(gm)
    targets: dict[str, list[str]] = {}
    for link in links:
        target = _box_name(gm, link.target)
        pointed = _("{target} ({label})").format(target=target, label=link.label)
        targets.setdefault(link.source, []).append(pointed)
    title = _("Links between a GraphModule, its Graph and its Nodes ({name}), {count} arrows")
    sentences = [
        _("{source} points to {targets}").format(
            source=_box_name(gm, source), targets=listed(pointed)
        )
        for source, pointed in targets.items()
    ]
    return alt_text(title.format(name=name, count=len(links)), sentences)


def show_ir_links(gm: torch.fx.GraphModule, name: str = "ir_links"):
    """Something Jupyter displays: the link picture, or the links as text without Graphviz."""
    if not dot_available():
        return GraphText(links_text(gm))
    svg = to_dot(gm, name).pipe(format="svg").decode("utf-8")
    return GraphPicture(svg, links_text(gm), links_alt(gm, name))
