"""The pieces every HTML report section is made of: numbers for people, intervals, tables
with captions and figures with a caption (or a sentence saying why there is none). The
common sections (html.py) and the kinds' own sections (report/kinds/<kind>.py) use them."""
from html import escape
from typing import Any

from .inputs import to_float

Report = dict[str, Any]


def num(x: Any, digits: int = 3) -> str:
    """A number for people: 3 decimals for floats, plain ints, an en dash for missing. A
    value that 3 decimals would show as 0.000 without being 0 is shown in scientific
    notation, and 0 as 0: a page never prints "0.000".

    >>> num(0.5), num(3), num(None), num(True), num(0.0), num(0.0002), num(-0.0002)
    ('0.500', '3', '–', 'yes', '0', '2.0e-04', '-2.0e-04')
    """
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if x == 0:
            return "0"
        if abs(x) < 0.5 * 10 ** -digits:
            return f"{x:.1e}"
        return f"{x:.{digits}f}"
    return escape(str(x))


class Num(str):
    """A table cell already formatted as a number (right-aligned like one)."""


def pval(p: Any) -> "Num":
    """A p-value for people: 3 decimals, "< 0.001" below 0.001 (never "0.000").

    >>> pval(0.0312), pval(0.0004), pval(0.0), pval(None)
    ('0.031', '< 0.001', '< 0.001', '–')
    """
    if p is None:
        return Num("–")
    return Num("< 0.001" if p < 0.001 else f"{p:.3f}")


def flag(holds: Any) -> str:
    """A paradox flag: yes / no / not resolved (null: the interval holds 0 or there is none)."""
    return "not resolved" if holds is None else ("yes" if holds else "no")


def interval(ci: list[float | None] | None) -> str:
    """[lo, hi] as text, an en dash when there is none."""
    if not ci or ci[0] is None or ci[1] is None:
        return "–"
    return f"[{num(ci[0])}, {num(ci[1])}]"


def table(headers: list[str], rows: list[Any], caption: str | None = None, cls: str = "") -> str:
    """An HTML table; cells that are numbers (or None) are right-aligned and formatted."""
    out = [f'<table class="{cls}">' if cls else "<table>"]
    if caption:
        out.append(f"<caption>{escape(caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{escape(str(h))}</th>" for h in headers) + "</tr></thead><tbody>")
    for row in rows:
        cells = []
        for cell in row:
            if cell is None or isinstance(cell, int | float):
                cells.append(f'<td class="num">{num(cell)}</td>')
            elif isinstance(cell, Num):
                cells.append(f'<td class="num">{escape(str(cell))}</td>')
            else:
                cells.append(f"<td>{escape(str(cell))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def figure(fig_id: str, svg: str | None, caption: str, alt: str | None = None) -> str:
    """A figure with its caption; `alt`: a text alternative for screen readers (the SVG
    becomes role="img" with that aria-label)."""
    if svg is None:
        return f'<p id="{fig_id}" class="no-figure">No figure: nothing to show yet. {escape(caption)}</p>'
    if alt is not None:
        svg = svg.replace("<svg", f'<svg role="img" aria-label="{escape(alt)}"', 1)
    return f'<figure id="{fig_id}">{svg}<figcaption>{escape(caption)}</figcaption></figure>'


def rating_counts(value_counts: dict[str, dict[str, int]], questions: list[str]) -> dict[str, int]:
    """Pool the counts of rating questions, keyed by the rating in ascending order."""
    pooled: dict[float, int] = {}
    for q in questions:
        for value, n in value_counts.get(q, {}).items():
            x = to_float([value])[0]
            if x == x:
                pooled[x] = pooled.get(x, 0) + n
    return {f"{k:g}": pooled[k] for k in sorted(pooled)}
