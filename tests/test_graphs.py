"""fxcourse.graphs draws an SVG with Graphviz, and falls back to text when `dot` is missing."""

from __future__ import annotations

import html
import re
import shutil

import nbformat
import pytest
import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp

from fxcourse import graphs
from fxcourse.messages import speaking


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.norm = torch.nn.LayerNorm(4)

    def forward(self, x):
        return self.norm(torch.relu(self.linear(x)) + x)


class TwoBlocks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = Block(), Block()

    def forward(self, x):
        return self.second(self.first(x)).sum(dim=-1)


@pytest.fixture
def traced() -> torch.fx.GraphModule:
    return torch.fx.symbolic_trace(TwoBlocks())


def _texts(svg: str) -> list[str]:
    return [re.sub(r"&#45;", "-", t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def test_picture_is_an_svg_with_one_box_per_node(traced):
    assert shutil.which("dot"), "Graphviz `dot` is required by the test suite (env/setup.sh test)"
    picture = graphs.show_graph(traced, "two_blocks")
    svg = picture.svg
    assert repr(picture) == str(traced.graph)
    texts = _texts(svg)
    for node in traced.graph.nodes:
        assert node.name in texts
    assert "call_module first.linear: Linear" in texts
    assert "call_method .sum()" in texts and "call_function operator.add" in texts
    assert svg.count('class="node"') == len(traced.graph.nodes)


def test_html_fits_the_output_width_and_offers_full_size_when_shrunk(traced):
    small = graphs.show_graph(traced)
    html = small._repr_html_()
    assert html.count("<img") == 1 and "max-width:100%" in html
    assert f'width="{small.natural_width()}"' in html
    wide = graphs.show_graph(traced, rankdir="LR")
    wide.svg = wide.svg.replace('<svg width="', '<svg width="2', 1)  # some 2000+ pt wide
    html = wide._repr_html_()
    assert wide.natural_width() > graphs.GraphPicture.SHRUNK_FROM_PX
    assert html.count("<img") == 2 and "<details>" in html and "overflow:auto" in html


def test_aten_operators_are_named_as_aten(traced):
    exported = torch.export.export(TwoBlocks(), (torch.randn(2, 4),))
    texts = _texts(graphs.graph_svg(exported.graph_module))
    assert "call_function aten.linear.default" in texts
    assert "float32[2, 4]" in texts  # export records each node's value in meta["val"]


def test_shapes_appear_once_a_pass_recorded_them(traced):
    ShapeProp(traced).propagate(torch.randn(2, 4))
    assert "float32[2, 4]" in _texts(graphs.graph_svg(traced))


def test_collapse_draws_a_submodule_as_one_box_and_within_zooms_in(traced):
    overview = _texts(graphs.graph_svg(traced, collapse=1))
    assert "first" in overview and "Block · 4 nodes" in overview
    assert "first_linear" not in overview
    one_deeper = _texts(graphs.graph_svg(traced, collapse=2))
    assert "Linear · 1 node" in one_deeper and "Linear · 1 nodes" not in one_deeper
    zoom = graphs.graph_svg(traced, within="second")
    assert "second_linear" in _texts(zoom) and "first_linear" not in _texts(zoom)
    assert "from first_norm" in _texts(zoom)  # the zoomed part's input, from outside


def test_without_dot_shows_text_and_one_line_hint(traced, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    shown = graphs.show_graph(traced)
    assert isinstance(shown, graphs.GraphText)
    hint, *graph_lines = repr(shown).splitlines()
    assert "dot" in hint and "apt-get install graphviz" in hint
    assert "\n".join(graph_lines) == str(traced.graph)


def test_around_zooms_on_named_nodes_and_a_zoom_offers_the_whole_graph(traced):
    zoom = graphs.show_graph(traced, around=["relu_1"], hops=1)  # relu_1: the second block's
    texts = _texts(zoom.svg)
    assert {"second_linear", "relu_1", "add_1"} <= set(texts) and "first_linear" not in texts
    assert "second_norm" not in texts  # two arrows away
    assert "from first_norm" in texts  # an input from outside the zoom
    assert "first_linear" in _texts(zoom.whole.svg)
    html = zoom._repr_html_()
    assert html.count("<img") == 2 and "Show the whole graph" in html
    assert graphs.show_graph(traced).whole is None
    with pytest.raises(ValueError, match="no_such_node"):
        graphs.graph_svg(traced, around=["no_such_node"])


def test_long_names_wrap_so_a_picture_stays_narrow():
    lifted = "L_self_modules_linear_parameters_weight_"
    assert "".join(graphs._wrapped(lifted, "_")) == lifted
    assert all(len(line) <= 22 for line in graphs._wrapped(lifted, "_"))
    op = "call_function quantized_decomposed.dequantize_per_channel.default"
    assert graphs._wrapped(op, " .", width=34) == [
        "call_function ",
        "quantized_decomposed.",
        "dequantize_per_channel.default",
    ]


def test_unreadable_graph_finder_flags_a_picture_fitted_too_small(traced):
    from notebook_runner import unreadable_graphs

    def notebook_showing(picture):
        output = nbformat.v4.new_output("display_data", {"text/html": picture._repr_html_()})
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[output])])

    narrow = graphs.show_graph(traced)
    assert unreadable_graphs(notebook_showing(narrow)) == []
    wide = graphs.show_graph(traced)
    wide.svg = wide.svg.replace('<svg width="', '<svg width="2', 1)  # some 2000+ pt wide
    assert unreadable_graphs(notebook_showing(wide))[0].startswith("cell 0: ")


def drawn_arrows(dot) -> set[tuple[str, str]]:
    """The arrows of a Graphviz picture, read off its source: (from box, to box)."""
    return set(re.findall(r'^\s*"?([^"\s]+)"?\s*->\s*"?([^"\s\[]+)"?', dot.source, re.M))


def spoken_arrows(alt: str) -> set[tuple[str, str]]:
    """The arrows a text alternative names: "a (...) feeds b, c and d" -> (a, b), (a, c), (a, d)."""
    found = set()
    for sentence in alt.partition(": ")[2].rstrip(".").split("; "):
        box, feeds, targets = sentence.partition(" feeds ")
        if feeds:
            source = box.split(" (")[0]
            found |= {(source, t) for t in re.split(r", | and ", targets)}
    return found


@pytest.mark.parametrize(
    "options",
    [{}, {"collapse": 1}, {"within": "second"}, {"around": ["relu_1"], "hops": 1}],
    ids=["whole", "collapsed", "within", "around"],
)
def test_a_pictures_text_alternative_says_which_box_feeds_which(traced, options):
    """A screen reader hears every arrow the picture draws, and no other."""
    picture = graphs.show_graph(traced, "two_blocks", **options)
    dot = graphs.to_dot(traced, "two_blocks", **options)
    arrows = {(a.lstrip("/"), b.lstrip("/")) for a, b in drawn_arrows(dot)}
    assert arrows and spoken_arrows(picture.alt) == arrows
    assert f"{len(arrows)} arrows" in picture.alt
    assert f'alt="{html.escape(picture.alt)}"' in picture._repr_html_()


def test_a_pictures_text_alternative_names_its_boxes_in_graph_order(traced):
    picture = graphs.show_graph(traced, "two_blocks")
    names = [node.name for node in traced.graph.nodes]
    alt = picture.alt
    assert alt.startswith(f"Graph picture of two_blocks, {len(names)} boxes and ")
    positions = [alt.index(f"; {name} (") for name in names[1:]]
    assert positions == sorted(positions)  # in graph order
    assert "first_linear (call_module first.linear: Linear) feeds relu;" in alt
    assert "sum_1 (call_method .sum()) feeds output; output (output)." in alt
    overview = graphs.show_graph(traced, "two_blocks", collapse=1).alt
    assert "first (Block, 4 nodes) feeds second;" in overview
    zoom = graphs.show_graph(traced, "two_blocks", around=["relu_1"], hops=1)
    assert zoom.alt.startswith("Graph picture of part of two_blocks")
    assert "first_norm (from outside this part) feeds second_linear and add_1;" in zoom.alt
    assert zoom.whole.alt == alt and "first_linear" not in zoom.alt
    ShapeProp(traced).propagate(torch.randn(2, 4))
    shaped = graphs.show_graph(traced, "two_blocks").alt
    assert "first_linear (call_module first.linear: Linear, float32[2, 4]) feeds relu" in shaped


class Attributes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(4))
        self.register_buffer("shift", torch.zeros(4))
        self.table = torch.arange(4.0)

    def forward(self, x):
        return x * self.scale + self.shift + self.table


def test_a_get_attr_box_says_what_it_reads():
    gm = torch.fx.symbolic_trace(Attributes())  # it keeps `table` as a buffer
    gm.table = gm._buffers.pop("table")  # as torch.export's graph modules keep constants
    alt = graphs.show_graph(gm, "attributes").alt
    assert "scale (get_attr scale: a parameter) feeds mul" in alt
    assert "shift (get_attr shift: a buffer) feeds add" in alt
    assert "table (get_attr table: a tensor constant) feeds add_1" in alt


def test_a_chinese_learner_hears_the_picture_in_chinese(traced):
    """The text alternative and the picture's controls follow fxcourse's language (a Chinese
    chapter's language cell): code and names stay as they are, the sentence around them does not."""
    with speaking("zh"):
        zoom = graphs.show_graph(traced, "two_blocks", around=["relu_1"], hops=1)
        html_text = zoom._repr_html_()
        attributes = graphs.show_graph(torch.fx.symbolic_trace(Attributes()), "attributes").alt
    assert zoom.alt.startswith("two_blocks 局部的图示，4 个框、4 条箭头：")
    assert "first_norm（来自这部分之外）输出给 second_linear 和 add_1；" in zoom.alt
    assert "显示整张图" in html_text and "Show the whole graph" not in html_text
    assert "scale（get_attr scale：一个参数）输出给 mul" in attributes
    for alt in (zoom.alt, attributes):  # four English words in a row: a sentence
        assert not re.search(r"[A-Za-z]+(?:,? [A-Za-z]+){3}", alt), alt


def test_no_picture_is_left_without_a_text_alternative(traced):
    with pytest.raises(TypeError):
        graphs.GraphPicture(graphs.graph_svg(traced), str(traced.graph))  # alt is required
