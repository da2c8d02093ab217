"""fxcourse.graphs draws an SVG with Graphviz, and falls back to text when `dot` is missing."""

from __future__ import annotations

import re
import shutil

import pytest
import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp

from fxcourse import graphs


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


def test_shapes_appear_once_a_pass_recorded_them(traced):
    ShapeProp(traced).propagate(torch.randn(2, 4))
    assert "float32[2, 4]" in _texts(graphs.graph_svg(traced))


def test_collapse_draws_a_submodule_as_one_box_and_within_zooms_in(traced):
    overview = _texts(graphs.graph_svg(traced, collapse=1))
    assert "first" in overview and "Block · 4 nodes" in overview
    assert "first_linear" not in overview
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
