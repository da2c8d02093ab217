"""fxcourse.ir_links draws the links a GraphModule, its Graph and its Nodes really have."""

from __future__ import annotations

import torch
import torch.fx
from torch import nn

from fxcourse import graphs, ir_links


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)

    def forward(self, x):
        return torch.relu(self.linear(x)) + 1


def _kinds(links, kind):
    return {(link.source, link.target) for link in links if link.kind == kind}


def test_links_are_read_off_the_objects():
    gm = torch.fx.symbolic_trace(Small())
    links = ir_links.ir_links(gm)
    names = [n.name for n in gm.graph.nodes]
    assert names == ["x", "linear", "relu", "add", "output"]
    chain = {(f"node {a}", f"node {b}") for a, b in zip(names, names[1:], strict=False)}
    assert _kinds(links, ".next") == chain
    assert _kinds(links, ".users") == _kinds(links, ".next")  # a chain: each node feeds the next
    assert _kinds(links, "node.graph") == {(f"node {n}", "graph") for n in names}
    assert ("graph", "gm") in _kinds(links, ".owning_module")
    assert _kinds(links, ".target") == {("node linear", "module linear")}


def test_an_edit_to_the_graph_changes_the_links():
    gm = torch.fx.symbolic_trace(Small())
    relu = next(n for n in gm.graph.nodes if n.target is torch.relu)
    with gm.graph.inserting_after(relu):
        neg = gm.graph.call_function(torch.neg, (relu,))
    relu.replace_all_uses_with(neg, delete_user_cb=lambda user: user is not neg)
    users = _kinds(ir_links.ir_links(gm), ".users")
    assert ("node relu", "node neg") in users and ("node neg", "node add") in users
    assert ("node relu", "node add") not in users


def test_picture_has_every_node_and_falls_back_to_text(monkeypatch):
    gm = torch.fx.symbolic_trace(Small())
    picture = ir_links.show_ir_links(gm)
    assert "max-width:100%" in picture._repr_html_()
    svg = picture.svg
    for node in gm.graph.nodes:
        assert f">{node.name}</text>" in svg
    monkeypatch.setenv("PATH", "/nonexistent")
    text = ir_links.show_ir_links(gm)
    assert isinstance(text, graphs.GraphText)
    assert 'node linear --.target "linear"--> module linear' in repr(text)


def test_a_module_called_twice_is_one_attribute_with_two_target_links():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = nn.ReLU()

        def forward(self, x):
            return self.act(self.act(x) - 1)

    links = ir_links.ir_links(torch.fx.symbolic_trace(Twice()))
    assert _kinds(links, "submodule") == {("gm", "module act")}
    assert _kinds(links, ".target") == {("node act", "module act"), ("node act_1", "module act")}
