"""fxcourse.charts: the bar charts the chapters draw."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from fxcourse.charts import horizontal_bars  # noqa: E402


def test_bars_keep_dict_order_values_and_labels():
    fig = horizontal_bars({"conv": 2048, "relu": 2048, "getitem_1": 16}, "bytes", "sizes")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["conv", "relu", "getitem_1"]
    assert [bar.get_width() for bar in ax.patches] == [2048, 2048, 16]
    assert [t.get_text() for t in ax.texts] == ["2,048", "2,048", "16"]
    assert ax.get_title() == "sizes" and ax.get_xlabel() == "bytes"


def test_spans_draw_whiskers_inside_the_axes():
    spans = {"fast": (0.9, 1.2), "slow": (2.5, 3.5)}
    fig = horizontal_bars({"fast": 1.0, "slow": 3.0}, "ms", "t", spans, label_format="{:.1f}")
    ax = fig.axes[0]
    assert ax.get_xlim()[1] >= 3.5
    (whiskers,) = ax.containers[0].lines[2]  # the ErrorbarContainer's bar lines
    ends = [(seg[0][0], seg[1][0]) for seg in whiskers.get_segments()]
    assert [tuple(sorted(e)) for e in ends] == [(0.9, 1.2), (2.5, 3.5)]
    assert [t.get_text() for t in ax.texts] == ["1.0", "3.0"]
