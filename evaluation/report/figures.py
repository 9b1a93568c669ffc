"""The report's figures as inline SVG (matplotlib, Agg backend; no files, no CDN).

Each function returns an SVG string, or None when there is nothing to draw.

Every text on a figure comes from the study (candidate ids, metric, aspect, evaluator and
annotator names), so matplotlib must draw it literally: by default it reads `$...$` as
TeX math, and one `$\\x$` in a name raised ValueError, a 500 on the dashboard and the
HTML report until the data was removed. Figures are drawn with `text.parse_math` off
(and usetex off), and labels are shortened and stripped of control characters
(`plain_label`); the tables beside the figures show the full names.
"""
import functools
import io
import re
import unicodedata
from collections.abc import Callable
from typing import Any, TypeVar

BLUE, GREY, ORANGE = "#3b6ea8", "#8a8a8a", "#d9822b"
MAX_LABEL = 40  # characters of a name shown under a bar or in a legend
MAX_AXIS_LABEL = 80  # characters of an axis title (it may embed a question name)
LITERAL_TEXT: dict[Any, Any] = {"text.parse_math": False, "text.usetex": False}


def plain_label(value: Any, limit: int = MAX_LABEL) -> str:
    """A name as a figure shows it: text, no control or format characters (newlines,
    zero-width marks), at most `limit` characters (an ellipsis marks a cut)."""
    text = "".join(ch if unicodedata.category(ch)[0] != "C" else " " for ch in str(value))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


Draw = TypeVar("Draw", bound=Callable[..., Any])


@functools.cache
def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, imported on the first figure (a heavy import
    that a web process not drawing reports never pays: docs/architecture.md, "Heavy
    imports")."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _literal_text(draw: Draw) -> Draw:
    """Run a figure function with every text drawn literally (no mathtext, no TeX)."""

    @functools.wraps(draw)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with pyplot().rc_context(LITERAL_TEXT):
            return draw(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _svg(fig: Any, name: str) -> str:
    """Serialize a figure to an inline <svg> (no XML prolog; ids salted per figure so that
    several SVGs in one page never share an id). `name` may carry a question id from the
    study: only [A-Za-z0-9_-] of it goes into the id attributes."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    plt = pyplot()
    with plt.rc_context({"svg.hashsalt": name, "svg.fonttype": "none", **LITERAL_TEXT}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    return re.sub(r'id="([^"]+)"', lambda m: f'id="{name}-{m.group(1)}"', text).replace(
        'url(#', f'url(#{name}-').replace('xlink:href="#', f'xlink:href="#{name}-')


def _figure(n_bars: int, height: float = 3.0) -> Any:
    width = min(10.0, max(4.0, 0.55 * n_bars + 2.5))
    return pyplot().subplots(figsize=(width, height))


@_literal_text
def bars(name: str, labels: list[Any], values: list[Any], ylabel: str, lo: list[Any] | None = None,
         hi: list[Any] | None = None, ylim: tuple[float, float] | None = None, reference: float | None = None,
         colors: list[str] | None = None) -> str | None:
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
    if lo is not None and hi is not None:
        for x, v, a, b in zip(xs, heights, lo, hi):
            if a is not None and b is not None:
                ax.errorbar([x], [v], yerr=[[max(v - a, 0)], [max(b - v, 0)]], fmt="none", ecolor="black", capsize=4)
    if reference is not None:
        ax.axhline(reference, color=ORANGE, linestyle="--", linewidth=1)
    ax.set_xlim(-0.5 - 0.5 * (len(labels) < 3), len(labels) - 0.5 + 0.5 * (len(labels) < 3))
    ax.set_xticks(list(xs))
    ax.set_xticklabels([plain_label(label) for label in labels], rotation=30 if len(labels) > 4 else 0,
                       ha="right" if len(labels) > 4 else "center")
    ax.set_ylabel(plain_label(ylabel, MAX_AXIS_LABEL))
    if ylim:
        ax.set_ylim(*ylim)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig, name)


@_literal_text
@_literal_text
def histogram(name: str, counts: dict[str, int], xlabel: str) -> str | None:
    """Bars of counts per value: counts = {value label: count}, values in the given order."""
    if not counts:
        return None
    fig, ax = _figure(len(counts), height=2.6)
    labels = list(counts)
    ax.bar(range(len(labels)), [counts[k] for k in labels], color=BLUE, width=0.7)
    ax.set_xticks(list(range(len(labels))))
    ax.set_xticklabels([plain_label(label) for label in labels])
    ax.set_xlabel(plain_label(xlabel, MAX_AXIS_LABEL))
    ax.set_ylabel("judgments")
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig, name)


@_literal_text
def forest(name: str, labels: list[Any], values: list[Any], lo: list[Any], hi: list[Any], xlabel: str,
           reference: float | None = 0.0) -> str | None:
    """A forest plot: one row per label (first on top), a dot at the value and a line from lo
    to hi (none where an end is missing); `reference` draws a dashed vertical line."""
    if not labels:
        return None
    fig, ax = pyplot().subplots(figsize=(6.5, max(1.6, 0.45 * len(labels) + 0.9)))
    ys = list(range(len(labels)))[::-1]
    for y, v, a, b in zip(ys, values, lo, hi):
        if a is not None and b is not None:
            ax.plot([a, b], [y, y], color="black", linewidth=1.5)
        if v is not None:
            ax.plot([v], [y], "o", color=BLUE, markersize=6)
    if reference is not None:
        ax.axvline(reference, color=ORANGE, linestyle="--", linewidth=1)
    ax.set_yticks(ys)
    ax.set_yticklabels([plain_label(label) for label in labels])
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_xlabel(plain_label(xlabel, MAX_AXIS_LABEL))
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig, name)


@_literal_text
def heatmap(name: str, labels: list[Any], matrix: list[list[Any]], colorbar: str) -> str | None:
    """A square heat map (rows: labels, columns: the same labels) with each cell's value
    printed in it; None cells (the diagonal) are blank. Values are shares in [0, 1]."""
    if not labels:
        return None
    import numpy as np

    data = np.array([[np.nan if v is None else float(v) for v in row] for row in matrix])
    size = min(9.0, 1.2 + 0.8 * len(labels))
    fig, ax = pyplot().subplots(figsize=(size + 1.2, size))
    image = ax.imshow(np.ma.masked_invalid(data), cmap="RdBu", vmin=0.0, vmax=1.0)
    for i in range(len(labels)):
        for j in range(len(labels)):
            if not np.isnan(data[i, j]):
                ax.text(j, i, f"{data[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(data[i, j] - 0.5) > 0.3 else "black")
    short = [plain_label(label) for label in labels]
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(short, rotation=30 if len(labels) > 3 else 0, ha="right" if len(labels) > 3 else "center")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(short)
    ax.set_xlabel("opponent (column)")
    ax.set_ylabel("system (row)")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04).set_label(plain_label(colorbar, MAX_AXIS_LABEL))
    return _svg(fig, name)
