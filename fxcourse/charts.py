"""Small matplotlib charts for the chapters, so that their cells show FX rather than plotting.

A chart is shown as a picture with a text alternative that lists what it plots (its title, its
axis and every bar's value), in the language of fxcourse's messages: a screen reader says what a
sighted reader sees, in the notebook and on the course's website alike.
"""

from __future__ import annotations

import base64
import functools
import html
import io

from fxcourse.graphs import alt_text
from fxcourse.messages import _


class Chart:
    """A matplotlib Figure as Jupyter shows it (a PNG), with its text alternative `alt`; the
    text form (a console, a text-only export) is the text alternative too."""

    DPI = 100  # CSS px per inch of the figure: its size on the page
    SHARPNESS = 2  # pixels per CSS px in the PNG, for high-density screens

    def __init__(self, figure, alt: str):
        self.figure = figure
        self.alt = alt

    @functools.cached_property
    def png(self) -> bytes:
        """The figure drawn once: Jupyter asks for the PNG and for the HTML that holds it."""
        buffer = io.BytesIO()
        drawn = {"Description": " | ".join(drawn_text(self.figure))}  # a PNG tEXt chunk
        self.figure.savefig(buffer, format="png", dpi=self.DPI * self.SHARPNESS, metadata=drawn)
        return buffer.getvalue()

    def _repr_png_(self) -> bytes:
        return self.png

    def _repr_html_(self) -> str:
        source = "data:image/png;base64," + base64.b64encode(self.png).decode()
        width = round(self.figure.get_figwidth() * self.DPI)
        return (
            f'<img class="fxcourse-chart" src="{source}" width="{width}" '
            f'style="max-width:100%;height:auto" alt="{html.escape(self.alt)}">'
        )

    def __repr__(self) -> str:
        return self.alt


def lettering() -> None:
    """matplotlib draws every language's script: the fonts named for scripts its own font lacks
    (fxcourse.languages) follow the family in font.family, glyph by glyph, where they are
    installed (env/setup.sh installs them); without one, matplotlib warns of each missing glyph."""
    import matplotlib
    from matplotlib import font_manager

    from fxcourse.languages import all_languages

    installed = {font.name for font in font_manager.fontManager.ttflist}
    wanted = [x.font_family for x in all_languages() if x.font_family in installed]
    families = [f for f in matplotlib.rcParams["font.family"] if f not in wanted]
    matplotlib.rcParams["font.family"] = [*families, *wanted]


def drawn_text(figure) -> list[str]:
    """Every piece of text drawn in the figure (titles, axis labels, tick labels, notes), so
    that the PNG carries the words it shows: a check can read them without reading pixels."""
    from matplotlib.text import Text

    figure.draw_without_rendering()  # tick labels get their text when the figure is drawn
    texts = (text.get_text() for text in figure.findobj(Text) if text.get_visible())
    return list(dict.fromkeys(text for text in texts if text.strip()))


def shown(figure, alt: str) -> None:
    """In a notebook, show a figure drawn elsewhere as a Chart now, with its text alternative,
    and close it: matplotlib's inline backend would show it again at the cell's end, named only
    by its image file on the website. Elsewhere (a script that saves the figure) do nothing."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is None:
        return
    import matplotlib.pyplot as plt

    display(Chart(figure, alt))
    plt.close(figure)


def bars_alt(
    values: dict[str, float],
    xlabel: str,
    title: str,
    spans: dict[str, tuple[float, float]] | None,
    label_format: str,
) -> str:
    """What a bar chart plots, as a sentence per bar: its name and value (and whisker)."""
    bars = []
    for name, value in values.items():
        shown = label_format.format(value)
        if spans:
            low, high = (label_format.format(end) for end in spans[name])
            bars.append(
                _("{name} {value} (whisker from {low} to {high})").format(
                    name=name, value=shown, low=low, high=high
                )
            )
        else:
            bars.append(f"{name} {shown}")
    heading = _("Bar chart, {title}, {count} bars; {axis}").format(
        title=title, count=len(values), axis=xlabel
    )
    return alt_text(heading, bars)


def horizontal_bars(
    values: dict[str, float],
    xlabel: str,
    title: str,
    spans: dict[str, tuple[float, float]] | None = None,
    label_format: str = "{:,.0f}",
) -> Chart:
    """One bar per entry, top to bottom in dict order, each labelled with its value.

    `spans` (optional) draws a whisker per bar from a low to a high value, such as the 25th and
    75th percentile of repeated timings. Returns a Chart (its matplotlib Figure: `.figure`).
    """
    import matplotlib.pyplot as plt

    lettering()
    names, widths = list(values), list(values.values())
    fig, ax = plt.subplots(figsize=(6, 0.45 * len(names) + 1.1))
    errors = None
    if spans:
        low = [width - spans[name][0] for name, width in zip(names, widths, strict=True)]
        high = [spans[name][1] - width for name, width in zip(names, widths, strict=True)]
        errors = [low, high]
    bars = ax.barh(names, widths, xerr=errors, capsize=3, color="tab:blue")
    ax.bar_label(bars, labels=[label_format.format(w) for w in widths], padding=4)
    ax.set_xlim(0, 1.25 * max(widths + [spans[n][1] for n in names] if spans else widths))
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    plt.close(fig)  # the notebook shows the returned chart once, not twice
    return Chart(fig, bars_alt(values, xlabel, title, spans, label_format))
