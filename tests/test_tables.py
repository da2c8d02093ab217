"""fxcourse.tables compares captures of one model; fxcourse.pipeline draws the PT2 pipeline."""

from __future__ import annotations

import shutil

import pytest
import torch
from torch import nn

from fxcourse import pipeline, tables


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        return self.linear(x).relu()


def test_markdown_and_text_forms_of_a_table():
    table = tables.markdown_table(["capture", "nodes"], [["`trace`", 3], ["export", 12]])
    assert table._repr_markdown_().splitlines() == [
        "| capture | nodes |",
        "| --- | --- |",
        "| `trace` | 3 |",
        "| export | 12 |",
    ]
    assert repr(table).splitlines() == ["capture  nodes", "trace    3", "export   12"]
    with pytest.raises(ValueError, match="has 1 cells, the header 2"):
        tables.markdown_table(["a", "b"], [["only one"]])


def test_graph_summary_counts_nodes_and_names_how_weights_arrive():
    model = Small()
    traced = torch.fx.symbolic_trace(model)
    exported = torch.export.export(model, (torch.randn(2, 3),)).graph_module
    summary = tables.graph_summary({"trace": traced, "export": exported}, user_inputs=1)
    trace_row, export_row = summary.rows
    # placeholder, get_attr, call_function, call_method, call_module, output
    assert trace_row[1:7] == ["1", "0", "0", "1", "1", "1"]
    assert trace_row[7:] == ["modules + tensor methods", "inside `call_module` submodules", "1"]
    assert export_row[1:7] == ["3", "0", "2", "0", "0", "1"]
    assert export_row[7:] == ["ATen ops", "2 extra placeholders", "1"]


def test_returned_values_counts_the_items_of_a_tuple():
    def two(x):
        return x + 1, x * 2

    assert tables.returned_values(torch.fx.symbolic_trace(two)) == 2


def test_pipeline_picture_is_an_svg_naming_every_stage():
    assert shutil.which("dot"), "Graphviz `dot` is required by the test suite (env/setup.sh test)"
    picture = pipeline.pipeline_picture()
    assert picture.svg.lstrip().startswith("<?xml") and "<svg" in picture.svg
    assert "<img" in picture._repr_html_()
    for word in ("TorchDynamo", "AOTAutograd", "Inductor", "torch.export.export", "make_fx"):
        assert word in picture.svg and word in repr(picture)


def test_pipeline_without_graphviz_is_text_with_a_hint(monkeypatch):
    monkeypatch.setattr(pipeline, "dot_available", lambda: False)
    shown = repr(pipeline.pipeline_picture())
    assert "Graphviz" in shown and "TorchDynamo" in shown and "make_fx" in shown


def test_a_label_drops_its_line_break_only_between_two_cjk_characters():
    assert pipeline._one_line("你的模型\n（Python 代码）") == "你的模型（Python 代码）"
    assert pipeline._one_line("读取字节码，\n添加守卫") == "读取字节码，添加守卫"
    assert pipeline._one_line("TorchDynamo\n读取字节码") == "TorchDynamo 读取字节码"
    assert pipeline._one_line("FX 图\ntorch 层面的算子") == "FX 图 torch 层面的算子"
    assert pipeline._one_line("graphe réécrit\nétape suivante") == "graphe réécrit étape suivante"
    assert pipeline._one_line("Größe\nändern") == "Größe ändern"
    assert pipeline._one_line("FX graph\ntorch-level ops") == "FX graph torch-level ops"
