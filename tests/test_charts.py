"""fxcourse.charts: the bar charts the chapters draw, and what a screen reader says of them."""

from __future__ import annotations

import base64
import html
import re

import matplotlib

matplotlib.use("Agg")

from fxcourse.charts import Chart, horizontal_bars  # noqa: E402
from fxcourse.messages import speaking  # noqa: E402


def test_bars_keep_dict_order_values_and_labels():
    chart = horizontal_bars({"conv": 2048, "relu": 2048, "getitem_1": 16}, "bytes", "sizes")
    ax = chart.figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["conv", "relu", "getitem_1"]
    assert [bar.get_width() for bar in ax.patches] == [2048, 2048, 16]
    assert [t.get_text() for t in ax.texts] == ["2,048", "2,048", "16"]
    assert ax.get_title() == "sizes" and ax.get_xlabel() == "bytes"


def test_spans_draw_whiskers_inside_the_axes():
    spans = {"fast": (0.9, 1.2), "slow": (2.5, 3.5)}
    chart = horizontal_bars({"fast": 1.0, "slow": 3.0}, "ms", "t", spans, label_format="{:.1f}")
    ax = chart.figure.axes[0]
    assert ax.get_xlim()[1] >= 3.5
    (whiskers,) = ax.containers[0].lines[2]  # the ErrorbarContainer's bar lines
    ends = [(seg[0][0], seg[1][0]) for seg in whiskers.get_segments()]
    assert [tuple(sorted(e)) for e in ends] == [(0.9, 1.2), (2.5, 3.5)]
    assert [t.get_text() for t in ax.texts] == ["1.0", "3.0"]


def test_the_text_alternative_lists_what_the_chart_plots():
    """Title, axis and every bar with the value printed beside it, in the chart's order."""
    values = {"conv": 2048.0, "relu": 1024.0, "getitem_1": 16.0}
    chart = horizontal_bars(values, "bytes (batch of 2)", "Tensors computed")
    assert chart.alt == (
        "Bar chart, Tensors computed, 3 bars; bytes (batch of 2): "
        "conv 2,048; relu 1,024; getitem_1 16."
    )
    spans = {"fast": (0.9, 1.2), "slow": (2.5, 3.5)}
    timed = horizontal_bars({"fast": 1.0, "slow": 3.0}, "ms", "t", spans, label_format="{:.1f}")
    assert "fast 1.0 (whisker from 0.9 to 1.2); slow 3.0 (whisker from 2.5 to 3.5)." in timed.alt
    assert repr(timed) == timed.alt  # a console, or a text-only export, reads the same


def test_the_chart_is_a_picture_with_its_text_alternative():
    chart = horizontal_bars({"a": 1.0, "b": 2.0}, "x", "<title & more>")
    page = chart._repr_html_()
    assert page.count("<img") == 1 and f'alt="{html.escape(chart.alt)}"' in page
    assert "&lt;title &amp; more&gt;" in page  # the title is text, never markup
    png = base64.b64decode(re.search(r"base64,([^\"]+)", page).group(1))
    assert png.startswith(b"\x89PNG") and png == chart._repr_png_()
    assert 'width="600"' in page  # the figure's 6 inches, at 100 CSS px per inch


def test_the_text_alternative_is_in_the_learners_language():
    with speaking("zh"):
        chart = horizontal_bars({"fast": 1.0}, "ms", "t", {"fast": (0.5, 2.0)}, "{:.1f}")
    assert chart.alt == "条形图：t，共 1 条；ms：fast 1.0（须线从 0.5 到 2.0）。"
    assert isinstance(chart, Chart)


def test_a_figure_drawn_elsewhere_is_shown_once_with_its_text_alternative():
    """chapter 4's benchmark chart (bench_fusion.plot_result) in a notebook: shown as a Chart
    that lists each variant's ratios, and closed, so the inline backend does not show it again
    named by its file; in a script (no IPython) the figure stays the script's to save."""
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from fxcourse.bench_fusion import BenchResult, plot_result
    from fxcourse.timing import quartiles

    times = {"unfused": [1.0, 1.1, 1.0], "chapter fuser": [0.8, 0.9, 0.85], "BN erased": [0.7] * 3}
    result = BenchResult("cpu", 1, 64, 1, "thread", times)
    script_ax = plot_result(result)
    assert plt.fignum_exists(script_ax.figure.number)
    plt.close(script_ax.figure)
    InteractiveShell.instance()
    try:
        with capture_output() as shown:
            ax = plot_result(result)
    finally:
        InteractiveShell.clear_instance()
    assert not plt.fignum_exists(ax.figure.number)
    (output,) = shown.outputs
    page = output.data["text/html"]
    assert 'class="fxcourse-chart"' in page
    assert "relative to unfused in the same round, over 3 rounds" in page
    low, median, high = quartiles([0.8 / 1.0, 0.9 / 1.1, 0.85 / 1.0])
    fuser = f"chapter fuser: median {median:.2f}, middle half {low:.2f} to {high:.2f}; BN erased"
    assert fuser in page and median == 0.9 / 1.1


def test_a_chinese_chart_draws_every_glyph_and_carries_its_words():
    """A chart in Chinese is drawn with a font that has its characters (env/setup.sh installs
    it; matplotlib's own font has none: each would be an empty box, with a warning), and its
    PNG carries the words it draws, for the checks that read no pixels."""
    import warnings

    from fxcourse.charts import drawn_text

    with speaking("zh"), warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph ... missing from font(s) DejaVu Sans"
        chart = horizontal_bars({"未融合": 2.0, "fused": 1.0}, "微秒", "每次调用的耗时")
        png = chart._repr_png_()
    assert {"未融合", "fused", "微秒", "每次调用的耗时", "2", "1"} <= set(drawn_text(chart.figure))
    assert "每次调用的耗时".encode() in png  # in its Description text chunk


def test_the_fusion_benchmark_speaks_the_learners_language():
    """Chapter 4's benchmark in Chinese: its table, verdict and chart call each variant by its
    Chinese name, and the table's columns line up although a Chinese character takes two."""
    from fxcourse.bench_fusion import BenchResult, format_result, shown
    from fxcourse.timing import columns

    base = [1.0, 1.1, 1.0, 1.05, 0.98]
    times = {"unfused": base, "chapter fuser": [t * 0.9 for t in base]}
    times |= {"torch fuse": [t * 0.91 for t in base], "BN erased": [t * 0.88 for t in base]}
    with speaking("zh"):
        text = format_result(BenchResult("cpu", 1, 64, 1, "thread", times))
        names = [shown(name) for name in times]
    assert not re.search(r"chapter fuser|BN erased|unfused", text), text
    rows = text.splitlines()[2:6]  # after the run's line and the column headings
    assert [row.split()[0] for row in rows] == [name.split()[0] for name in names], rows
    assert len({columns(row.split("（")[0]) for row in rows}) == 1, rows  # numbers end alike
