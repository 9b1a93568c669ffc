"""The report's figures as inline SVG (matplotlib, Agg backend; no files, no CDN).

Each function returns an SVG string, or None when there is nothing to draw.
"""
import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BLUE, GREY, ORANGE = "#3b6ea8", "#8a8a8a", "#d9822b"


def _svg(fig, name):
    """Serialize a figure to an inline <svg> (no XML prolog; ids salted per figure so that
    several SVGs in one page never share an id)."""
    with matplotlib.rc_context({"svg.hashsalt": name, "svg.fonttype": "none"}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    return re.sub(r'id="([^"]+)"', lambda m: f'id="{name}-{m.group(1)}"', text).replace(
        'url(#', f'url(#{name}-').replace('xlink:href="#', f'xlink:href="#{name}-')


def _figure(n_bars, height=3.0):
    width = min(10.0, max(4.0, 0.55 * n_bars + 2.5))
    return plt.subplots(figsize=(width, height))


def bars(name, labels, values, ylabel, lo=None, hi=None, ylim=None, reference=None, colors=None):
    """A bar chart; with `lo`/`hi`, whiskers from lo to hi; `reference` draws a dashed line."""
    if not labels:
        return None
    fig, ax = _figure(len(labels))
    heights = [0.0 if v is None else v for v in values]
    xs = range(len(labels))
    ax.bar(xs, heights, color=colors or BLUE, width=0.6)
    for x, v in zip(xs, values):
        if v is None:
            ax.text(x, 0, "n/a", ha="center", va="bottom", fontsize=8, color=GREY)
    if lo is not None:
        for x, v, a, b in zip(xs, heights, lo, hi):
            if a is not None and b is not None:
                ax.errorbar([x], [v], yerr=[[max(v - a, 0)], [max(b - v, 0)]], fmt="none", ecolor="black", capsize=4)
    if reference is not None:
        ax.axhline(reference, color=ORANGE, linestyle="--", linewidth=1)
    ax.set_xlim(-0.5 - 0.5 * (len(labels) < 3), len(labels) - 0.5 + 0.5 * (len(labels) < 3))
    ax.set_xticks(list(xs))
    ax.set_xticklabels([str(label) for label in labels], rotation=30 if len(labels) > 4 else 0, ha="right" if len(labels) > 4 else "center")
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig, name)


def grouped_bars(name, groups, series, ylabel, ylim=None):
    """Bars grouped by `groups` with one bar per series: series = {label: [value per group]}."""
    if not groups or not series:
        return None
    fig, ax = _figure(len(groups) * len(series))
    width = 0.8 / len(series)
    for k, (label, values) in enumerate(series.items()):
        xs = [g + (k - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, [0.0 if v is None else v for v in values], width=width, label=str(label))
    ax.set_xticks(list(range(len(groups))))
    ax.set_xticklabels([str(g) for g in groups], rotation=30 if len(groups) > 4 else 0)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig, name)


def histogram(name, counts, xlabel):
    """Bars of counts per value: counts = {value label: count}, values in the given order."""
    if not counts:
        return None
    fig, ax = _figure(len(counts), height=2.6)
    labels = list(counts)
    ax.bar(range(len(labels)), [counts[k] for k in labels], color=BLUE, width=0.7)
    ax.set_xticks(list(range(len(labels))))
    ax.set_xticklabels(labels)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("judgments")
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig, name)
