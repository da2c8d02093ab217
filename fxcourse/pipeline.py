"""A picture of PyTorch 2's capture and compile pipeline, marking the stages that are FX graphs.

pipeline_picture()    an SVG (Graphviz), or a text outline when `dot` is missing
"""

from __future__ import annotations

from fxcourse.graphs import MISSING_DOT_HINT, GraphPicture, GraphText, dot_available

FX_COLOUR, STEP_COLOUR = "#fde9c9", "#dbe9f6"
# (key, label, is the stage's result an FX graph?)
STAGES = [
    ("code", "your model\n(Python code)", False),
    ("dynamo", "TorchDynamo\nreads bytecode,\nadds guards, breaks graphs", False),
    ("torch_graph", "FX graph\ntorch-level ops", True),
    ("aot", "AOTAutograd\nforward + backward", False),
    ("aten_graphs", "FX graphs\nATen ops", True),
    ("inductor", "Inductor\nC++ / Triton kernels", False),
]
SIDE_ROUTES = [
    # (from, key, label, is FX, edge label)
    ("code", "export", "torch.export.export\nExportedProgram:\nATen FX graph, signature", True, ""),
    ("code", "make_fx", "make_fx\nATen FX graph", True, ""),
    ("torch_graph", "backend", "your backend(gm,\nexample_inputs)", False, "or"),
]


def pipeline_dot():
    """The pipeline as a graphviz.Digraph: the torch.compile path left to right, with export,
    make_fx and a custom backend as side routes."""
    import graphviz

    legend = "orange: an FX GraphModule you can read and change"
    layout = {"rankdir": "LR", "fontname": "Helvetica", "fontsize": "10", "label": legend}
    dot = graphviz.Digraph("pt2", graph_attr=layout)
    dot.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="11")
    dot.attr("edge", color="#6b7280", arrowsize="0.7", fontname="Helvetica", fontsize="10")
    for key, label, is_fx in STAGES:
        dot.node(key, label, fillcolor=FX_COLOUR if is_fx else STEP_COLOUR)
    for (left, *_), (right, *_) in zip(STAGES, STAGES[1:], strict=False):
        dot.edge(left, right)
    for source, key, label, is_fx, edge_label in SIDE_ROUTES:
        dot.node(key, label, fillcolor=FX_COLOUR if is_fx else STEP_COLOUR)
        dot.edge(source, key, label=edge_label, style="dashed")
    return dot


def pipeline_text() -> str:
    main = " -> ".join(label.replace("\n", " ") for _, label, _ in STAGES)
    sides = [f"  {src} -> {label.replace(chr(10), ' ')}" for src, _, label, _, _ in SIDE_ROUTES]
    return "\n".join([main, "side routes:", *sides])


def pipeline_picture():
    """Something Jupyter displays: the pipeline as SVG, or as text plus a hint without `dot`."""
    if not dot_available():
        return GraphText(pipeline_text(), MISSING_DOT_HINT)
    return GraphPicture(pipeline_dot().pipe(format="svg").decode("utf-8"), pipeline_text())
