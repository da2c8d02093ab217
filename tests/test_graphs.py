"""fxcourse.graphs draws an SVG with Graphviz, and falls back to text when `dot` is missing."""

from __future__ import annotations

import shutil

import pytest
import torch
import torch.fx
from IPython.display import SVG

from fxcourse import graphs


class TwoLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.linear(x)) + 1


@pytest.fixture
def traced() -> torch.fx.GraphModule:
    return torch.fx.symbolic_trace(TwoLayer())


def test_picture_is_an_svg_naming_the_nodes(traced):
    assert shutil.which("dot"), "Graphviz `dot` is required by the test suite (env/setup.sh test)"
    picture = graphs.show_graph(traced, "two_layer")
    assert isinstance(picture, SVG)
    assert "<svg" in picture.data
    for node in traced.graph.nodes:
        assert node.name in picture.data


def test_without_dot_shows_text_and_one_line_hint(traced, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    shown = graphs.show_graph(traced)
    assert isinstance(shown, graphs.GraphText)
    hint, *graph_lines = repr(shown).splitlines()
    assert "dot" in hint and "apt-get install graphviz" in hint
    assert "\n".join(graph_lines) == str(traced.graph)
