"""A picture of PyTorch 2's capture and compile pipeline, marking the stages that are FX graphs.

pipeline_picture()    an SVG (Graphviz), or a text outline when `dot` is missing
"""

from __future__ import annotations

import re

from fxcourse.graphs import GraphPicture, GraphText, alt_text, dot_available, listed
from fxcourse.messages import _

FX_COLOUR, STEP_COLOUR = "#fde9c9", "#dbe9f6"


def stages() -> list[tuple[str, str, bool]]:
    """(key, label, is the stage's result an FX graph?), in the language of fxcourse's messages."""
    return [
        ("code", _("your model\n(Python code)"), False),
        ("dynamo", _("TorchDynamo\nreads bytecode,\nadds guards, breaks graphs"), False),
        ("torch_graph", _("FX graph\ntorch-level ops"), True),
        ("aot", _("AOTAutograd\nforward + backward"), False),
        ("aten_graphs", _("FX graphs\nATen ops"), True),
        ("inductor", _("Inductor\nC++ / Triton kernels"), False),
    ]


def side_routes() -> list[tuple[str, str, str, bool, str]]:
    """(from, key, label, is FX, edge label): export, make_fx and a backend of your own."""
    export = _("torch.export.export\nExportedProgram:\nATen FX graph, signature")
    return [
        ("code", "export", export, True, ""),
        ("code", "make_fx", _("make_fx\nATen FX graph"), True, ""),
        ("torch_graph", "backend", _("your backend(gm,\nexample_inputs)"), False, _("or")),
    ]


def legend() -> str:
    return _("orange: an FX GraphModule you can read and change")


def pipeline_dot():
    """The pipeline as a graphviz.Digraph: the torch.compile path left to right, with export,
    make_fx and a custom backend as side routes."""
    import graphviz

    layout = {"rankdir": "LR", "fontname": "Helvetica", "fontsize": "10", "label": legend()}
    dot = graphviz.Digraph("pt2", graph_attr=layout)
    dot.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="11")
    dot.attr("edge", color="#6b7280", arrowsize="0.7", fontname="Helvetica", fontsize="10")
    main = stages()
    for key, label, is_fx in main:
        dot.node(key, label, fillcolor=FX_COLOUR if is_fx else STEP_COLOUR)
    for (left, *_rest), (right, *_more) in zip(main, main[1:], strict=False):
        dot.edge(left, right)
    for source, key, label, is_fx, edge_label in side_routes():
        dot.node(key, label, fillcolor=FX_COLOUR if is_fx else STEP_COLOUR)
        dot.edge(source, key, label=edge_label, style="dashed")
    return dot


# Ideographs, CJK punctuation and fullwidth forms (courseware/i18n/vocabulary.py's CJK too).
CJK = r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]"
BREAK_BETWEEN_CJK = re.compile(rf"(?<={CJK})\n(?={CJK})")


def pipeline_text() -> str:
    main = " -> ".join(_one_line(label) for _key, label, _fx in stages())
    sides = [f"  {src} -> {_one_line(label)}" for src, _k, label, _fx, _e in side_routes()]
    return "\n".join([main, _("side routes:"), *sides])


def _one_line(label: str) -> str:
    """A label's lines joined: by nothing between two CJK characters (Chinese has no spaces), by
    a space everywhere else: an accented letter beside the break is a word's, not Chinese."""
    return BREAK_BETWEEN_CJK.sub("", label).replace("\n", " ")


def _spoken(label: str) -> str:
    """A box's label as one line: "TorchDynamo (reads bytecode, ...)"."""
    head, _newline, rest = label.partition("\n")
    if not rest or head.count("(") != head.count(")"):
        return _one_line(label)
    detail = _one_line(rest).strip("()（）")
    return _("{name} ({detail})").format(name=head, detail=detail)


def pipeline_alt() -> str:
    """The picture's text alternative: each stage and where it leads, then the orange ones (the
    stages whose result is an FX graph)."""
    boxes = {key: _spoken(label) for key, label, _fx in stages()}
    orange = [boxes[key] for key, _label, is_fx in stages() if is_fx]
    leads: dict[str, list[str]] = {key: [] for key in boxes}
    main = list(boxes)
    for left, right in zip(main, main[1:], strict=False):
        leads[left].append(boxes[right])
    for source, key, label, is_fx, _edge in side_routes():
        boxes[key], leads[key] = _spoken(label), []
        leads[source].append(_("the side route {stage}").format(stage=boxes[key]))
        orange += [boxes[key]] if is_fx else []
    sentences = [  # a stage that leads nowhere was named where an arrow leads to it
        _("{stage} leads to {next}").format(stage=label, next=listed(leads[key]))
        for key, label in boxes.items()
        if leads[key]
    ]
    sentences.append(_("orange: {stages}").format(stages=listed(orange)))
    title = _("PyTorch 2's capture and compile pipeline ({legend})").format(legend=legend())
    return alt_text(title, sentences)


def pipeline_picture():
    """Something Jupyter displays: the pipeline as SVG, or as text plus a hint without `dot`."""
    if not dot_available():
        return GraphText(pipeline_text())
    svg = pipeline_dot().pipe(format="svg").decode("utf-8")
    return GraphPicture(svg, pipeline_text(), pipeline_alt())
