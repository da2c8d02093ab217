"""Small matplotlib charts for the chapters, so that their cells show FX rather than plotting."""

from __future__ import annotations


def horizontal_bars(
    values: dict[str, float],
    xlabel: str,
    title: str,
    spans: dict[str, tuple[float, float]] | None = None,
    label_format: str = "{:,.0f}",
):
    """One bar per entry, top to bottom in dict order, each labelled with its value.

    `spans` (optional) draws a whisker per bar from a low to a high value, such as the 25th and
    75th percentile of repeated timings. Returns the matplotlib Figure.
    """
    import matplotlib.pyplot as plt

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
    plt.close(fig)  # the notebook shows the returned figure once, not twice
    return fig
