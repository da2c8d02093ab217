"""Draw a torch.fx graph as a picture (Graphviz), or show its text when Graphviz is missing.

    show_graph(gm)                    every node: name, what it runs, shape when known
    show_graph(gm, collapse=1)        an overview: the nodes of each top-level submodule as one box
    show_graph(gm, within="layer1.0") a zoom: only the nodes inside that submodule
    show_graph(gm, around=["linear_1"]) a zoom: only the nodes up to `hops` (default 2) arrows
                                      away from the named nodes (for graphs without submodules)

A zoom carries the whole graph too, one click away under the picture.

One box per FX node (parameters are not drawn: they are read by their call_module or get_attr
node), coloured by opcode; each arrow goes from a node to a node that uses its value. Pictures
are SVG, shrunk to the width of a notebook's output area when wider.
"""

from __future__ import annotations

import base64
import html
import operator
import re
import shutil
from collections.abc import Iterable

import torch
import torch.fx

from fxcourse.messages import _, listing


def missing_dot_hint() -> str:
    return _(
        "Graph picture unavailable: Graphviz's `dot` binary is not on PATH "
        "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz). "
        "Showing text instead."
    )


OP_COLOURS = {
    "placeholder": "#dbeafe",
    "get_attr": "#fef3c7",
    "call_function": "#dcfce7",
    "call_method": "#ede9fe",
    "call_module": "#fee2e2",
    "output": "#e5e7eb",
}


class GraphText:
    """The text form of a graph, shown in a notebook (or printed) when no picture can be drawn."""

    def __init__(self, text: str, hint: str | None = None):
        self.text = text
        self.hint = hint or missing_dot_hint()

    def __repr__(self) -> str:
        return f"{self.hint}\n{self.text}"


class GraphPicture:
    """A Graphviz SVG shown at most as wide as the output area; a picture that had to shrink can
    be opened at full size, in a scrollable box, with one click. Its text form is the graph's;
    its text alternative (`alt`, what a screen reader says) tells what the picture shows, boxes
    and arrows, in the language of fxcourse's messages (picture_alt, described)."""

    SHRUNK_FROM_PX = 800  # wider pictures get the full-size view as well

    def __init__(self, svg: str, text: str, alt: str, whole: GraphPicture | None = None):
        self.svg = svg
        self.text = text
        self.alt = alt
        self.whole = whole  # for a zoom: the picture of the whole graph

    def natural_width(self) -> int:
        match = re.search(r'<svg width="([\d.]+)pt"', self.svg)
        return round(float(match.group(1)) * 4 / 3) if match else 0  # pt -> CSS px

    def _repr_html_(self) -> str:
        source = "data:image/svg+xml;base64," + base64.b64encode(self.svg.encode()).decode()
        width = self.natural_width()
        fitted = (
            f'<img class="fxcourse-graph" src="{source}" width="{width}" '
            f'style="max-width:100%;height:auto" alt="{html.escape(self.alt)}">'
        )
        if self.whole is not None:
            whole = self.whole._full_size(self.whole.natural_width())
            summary = html.escape(_("Show the whole graph (scroll)"))
            return f"{fitted}<details><summary>{summary}</summary>{whole}</details>"
        if width <= self.SHRUNK_FROM_PX:
            return fitted
        summary = html.escape(_("Show at full size ({width} px wide; scroll)").format(width=width))
        return f"{fitted}<details><summary>{summary}</summary>{self._full_size(width)}</details>"

    def _full_size(self, width: int) -> str:
        source = "data:image/svg+xml;base64," + base64.b64encode(self.svg.encode()).decode()
        alt = html.escape(self.alt)
        full = f'<img src="{source}" width="{width}" style="max-width:none" alt="{alt}">'
        return f'<div style="overflow:auto;max-height:80vh">{full}</div>'

    def __repr__(self) -> str:
        return self.text


def module_path(node: torch.fx.Node) -> str:
    """The qualified name of the submodule a node belongs to ("" for the root module)."""
    stack = node.meta.get("nn_module_stack")
    if stack:
        return str(list(stack.values())[-1][0])
    if node.op == "call_module":
        return str(node.target)
    if node.op == "get_attr":
        return str(node.target).rpartition(".")[0]
    return ""


def _inside(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".")


def _target_text(gm: torch.fx.GraphModule, node: torch.fx.Node) -> str:
    if node.op == "call_module":
        return f"{node.target}: {type(gm.get_submodule(node.target)).__name__}"
    if node.op == "call_method":
        return f".{node.target}()"
    if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
        return str(node.target)  # an ATen operator, e.g. aten.addmm.default
    if node.op == "call_function":
        module = getattr(node.target, "__module__", None) or ""
        name = getattr(node.target, "__name__", str(node.target))
        short = {"_operator": "operator", "torch._C._nn": "F", "torch.nn.functional": "F"}
        prefix = short.get(module, module.split(".")[0])
        return f"{prefix}.{name}" if prefix else name
    if node.op == "get_attr":
        return str(node.target)
    return node.op


def _shape_text(node: torch.fx.Node) -> str:
    value = node.meta.get("val", node.meta.get("tensor_meta"))
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return ""
    return f"{str(dtype).removeprefix('torch.')}[{', '.join(str(s) for s in shape)}]"


def node_label(gm: torch.fx.GraphModule, node: torch.fx.Node) -> str:
    """Graphviz HTML label: the node's name in bold, then its opcode and target, then its shape
    when a pass (ShapeProp, export) recorded one."""
    lines = [f"<b>{'<br/>'.join(html.escape(part) for part in _wrapped(node.name, '_'))}</b>"]
    if node.op not in ("placeholder", "output"):
        what = _wrapped(f"{node.op} {_target_text(gm, node)}", " .", width=34)
        lines.append("<br/>".join(html.escape(part) for part in what))
    else:
        lines.append(node.op)
    if shape := _shape_text(node):
        lines.append(f'<font point-size="9">{html.escape(shape)}</font>')
    return "<" + "<br/>".join(lines) + ">"


def _wrapped(text: str, breaks: str, width: int = 22) -> list[str]:
    """A long name (Dynamo's lifted parameters, quantized_decomposed's operators) cut after the
    characters in `breaks` into lines of about `width` characters, so that one name does not
    make the picture wide."""
    lines = [""]
    cut = re.escape(breaks)
    for part in re.findall(rf"[^{cut}]*[{cut}]|[^{cut}]+", text):
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return lines


def _near(gm: torch.fx.GraphModule, names: Iterable[str], hops: int) -> set[torch.fx.Node]:
    """The named nodes and every node up to `hops` arrows away from them, either way."""
    by_name = {node.name: node for node in gm.graph.nodes}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise ValueError(f"around={unknown}: no such node; the graph has {sorted(by_name)}")
    reached = {by_name[name] for name in names}
    for _hop in range(hops):
        reached |= {n for node in reached for n in (*node.all_input_nodes, *node.users)}
    return reached


def _groups(gm: torch.fx.GraphModule, collapse: int | None) -> dict[torch.fx.Node, str]:
    """Node -> the box it is drawn in: its own name, or a submodule path cut to `collapse` parts."""
    boxes = {}
    for node in gm.graph.nodes:
        path = module_path(node)
        if collapse and path:
            boxes[node] = "/" + ".".join(path.split(".")[:collapse])
        else:
            boxes[node] = node.name
    return boxes


def to_dot(
    gm: torch.fx.GraphModule,
    name: str = "graph",
    collapse: int | None = None,
    within: str | None = None,
    rankdir: str = "TB",
    around: Iterable[str] | None = None,
    hops: int = 2,
):
    """The graph as a graphviz.Digraph (see the module docstring for collapse and within)."""
    import graphviz

    dot = graphviz.Digraph(name, graph_attr={"rankdir": rankdir, "fontname": "Helvetica"})
    dot.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="11")
    dot.attr("edge", color="#6b7280", arrowsize="0.7")
    nodes, boxes, members = _drawn(gm, collapse, within, around, hops)
    for box, inside in members.items():
        if len(inside) == 1 and not box.startswith("/"):
            node = inside[0]
            dot.node(box, node_label(gm, node), fillcolor=OP_COLOURS[node.op])
        else:
            owner = box.lstrip("/")
            kind = _module_class_name(inside, owner)
            count = f"{len(inside)} node{'s' * (len(inside) != 1)}"
            label = f"<<b>{html.escape(owner)}</b><br/>{kind} · {count}>"
            dot.node(box, label, fillcolor="#f3f4f6", style="filled,bold", shape="box3d")
    _add_edges(dot, nodes, boxes)
    return dot


def _drawn(gm: torch.fx.GraphModule, collapse=None, within=None, around=None, hops: int = 2):
    """(the nodes drawn, node -> its box, box -> its nodes), in graph order."""
    nodes = [n for n in gm.graph.nodes if within is None or _inside(module_path(n), within)]
    if around is not None:
        near = _near(gm, around, hops)
        nodes = [n for n in nodes if n in near]
    boxes = _groups(gm, collapse)
    members: dict[str, list[torch.fx.Node]] = {}
    for node in nodes:
        members.setdefault(boxes[node], []).append(node)
    return nodes, boxes, members


ALT_BOXES = 40  # a text alternative describes this many boxes, then says how many more
# A translation's messages join words with spaces; Chinese sets none beside its punctuation or
# between two of its characters.
FULL_WIDTH_PUNCTUATION = "，。；：、（）"


def picture_alt(gm: torch.fx.GraphModule, name: str = "graph", **options) -> str:
    """The picture's text alternative, in the language of fxcourse's messages: box by box in
    graph order, what it is (a node's name, opcode, target and shape, or a submodule's box with
    its class and node count) and which boxes it feeds (the arrows drawn)."""
    nodes, boxes, members = _drawn(
        gm,
        options.get("collapse"),
        options.get("within"),
        options.get("around"),
        options.get("hops", 2),
    )
    arrows = _arrows(nodes, boxes)
    texts = {box: _box_alt(gm, box, inside) for box, inside in members.items()}
    for source, _target, node in arrows:  # an input from outside a zoom, drawn "from <name>"
        if source not in texts:
            texts = {source: _("{name} (from outside this part)").format(name=node.name), **texts}
    feeds: dict[str, list[str]] = {box: [] for box in texts}
    for source, target, _node in arrows:
        feeds[source].append(target.lstrip("/"))
    sentences = [
        _("{box} feeds {boxes}").format(box=text, boxes=listed(feeds[box])) if feeds[box] else text
        for box, text in texts.items()
    ]
    if options.get("within") is not None or options.get("around") is not None:
        title = _("Graph picture of part of {name}, {boxes} boxes and {arrows} arrows")
    else:
        title = _("Graph picture of {name}, {boxes} boxes and {arrows} arrows")
    return alt_text(title.format(name=name, boxes=len(texts), arrows=len(arrows)), sentences)


def _box_alt(gm: torch.fx.GraphModule, box: str, inside: list[torch.fx.Node]) -> str:
    """One box as its text alternative says it: what the picture writes in it."""
    if len(inside) > 1 or box.startswith("/"):
        owner = box.lstrip("/")
        kind = _module_class_name(inside, owner)
        if len(inside) == 1:
            return _("{path} ({kind}, 1 node)").format(path=owner, kind=kind)
        return _("{path} ({kind}, {count} nodes)").format(path=owner, kind=kind, count=len(inside))
    node = inside[0]
    what = node.op
    if node.op == "get_attr":
        kind = _attribute_kind(gm, str(node.target))
        what = _("get_attr {target}: {kind}").format(target=node.target, kind=kind)
    elif node.op not in ("placeholder", "output"):
        what = f"{node.op} {_target_text(gm, node)}"
    if shape := _shape_text(node):
        what = _("{what}, {shape}").format(what=what, shape=shape)
    return _("{name} ({what})").format(name=node.name, what=what)


def _attribute_kind(gm: torch.fx.GraphModule, target: str) -> str:
    """What a get_attr node reads: a parameter, a buffer, a tensor constant, a submodule."""
    try:
        value = operator.attrgetter(target)(gm)
    except AttributeError:
        return _("an attribute the module no longer has")
    if isinstance(value, torch.nn.Parameter):
        return _("a parameter")
    if isinstance(value, torch.Tensor):
        buffers = {name for name, _buffer in gm.named_buffers()}
        return _("a buffer") if target in buffers else _("a tensor constant")
    if isinstance(value, torch.nn.Module):
        return _("a submodule ({kind})").format(kind=type(value).__name__)
    return type(value).__name__


def listed(items: Iterable[str]) -> str:
    """Items as a list in a sentence of the current language ("a, b and c", "a、b 和 c")."""
    items = list(items)
    if len(items) < 2:
        return "".join(items)
    return _("{items} and {last}").format(items=listing(items[:-1]), last=items[-1])


def alt_text(title: str, sentences: list[str], limit: int = ALT_BOXES) -> str:
    """A picture's text alternative: its title, then one short sentence per box (the first
    `limit` of them, then how many more)."""
    more = len(sentences) - limit
    shown = sentences[:limit] + ([_("and {count} more").format(count=more)] if more > 0 else [])
    text = _("{title}: {boxes}.").format(title=title, boxes=_("; ").join(shown))
    text = re.sub(f" *([{FULL_WIDTH_PUNCTUATION}]) *", r"\1", text)
    return re.sub(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])", "", text)


def _module_class_name(nodes: list[torch.fx.Node], path: str) -> str:
    """The class of the submodule at `path`, as the tracer recorded it (a GraphModule keeps only
    plain containers for the submodules it traced through)."""
    for node in nodes:
        for entry_path, kind in (node.meta.get("nn_module_stack") or {}).values():
            if entry_path == path:
                return getattr(kind, "__name__", str(kind).rpartition(".")[2])
    return "module"


def _arrows(nodes: Iterable[torch.fx.Node], boxes: dict[torch.fx.Node, str]):
    """The arrows drawn, once each and in graph order: (source box, target box, source node)."""
    found = {}
    for node in nodes:
        for source in node.all_input_nodes:
            edge = (boxes[source], boxes[node])
            if edge[0] != edge[1] and edge not in found:
                found[edge] = source
    return [(*edge, source) for edge, source in found.items()]


def _add_edges(dot, nodes: list[torch.fx.Node], boxes: dict[torch.fx.Node, str]) -> None:
    drawn = set(boxes[n] for n in nodes)
    for source_box, target_box, source in _arrows(nodes, boxes):
        if source_box not in drawn:  # an input from outside a zoomed-in part
            dot.node(source_box, f"from {source.name}", shape="plaintext", fontcolor="#6b7280")
            drawn.add(source_box)
        dot.edge(source_box, target_box)


def graph_svg(gm: torch.fx.GraphModule, name: str = "graph", **options) -> str:
    """Render `gm` with Graphviz's dot; returns the SVG document."""
    return to_dot(gm, name, **options).pipe(format="svg").decode("utf-8")


def dot_available() -> bool:
    return shutil.which("dot") is not None


def show_graph(gm: torch.fx.GraphModule, name: str = "graph", **options):
    """Something Jupyter displays: an SVG picture of `gm`, or its text graph plus a hint.

    Options: collapse=N draws each submodule N levels deep as one box; within="path" draws only
    the nodes inside that submodule; around=[names] (with hops=N) only the nodes near those;
    rankdir="LR" lays the graph out left to right. A zoom (within, around) can show the whole
    graph with one click.
    """
    if not dot_available():
        return GraphText(str(gm.graph))
    whole = None
    if options.get("within") is not None or options.get("around") is not None:
        rest = {k: v for k, v in options.items() if k not in ("within", "around", "hops")}
        whole_alt = picture_alt(gm, name, **rest)
        whole = GraphPicture(graph_svg(gm, name, **rest), str(gm.graph), whole_alt)
    alt = picture_alt(gm, name, **options)
    return GraphPicture(graph_svg(gm, name, **options), str(gm.graph), alt, whole)
