"""Metric-vs-human alignment for pairwise studies (ExPerT Table 1; statistics.md).

Items whose human majority is `tie` are left out of alignment, McNemar and win rate (the
report counts them in `tie_majority`). Intervals are 95% Wilson score intervals over items
(one majority per item: independent units): a percentile bootstrap of a proportion
undercovers at pilot sizes and gives [1, 1] when every item agrees. No interval from
fewer than 5 items (statistics.md, "Clustered data").
"""
import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.bootstrap import Z975, interval_refusal
from evaluation.vocabulary import TIE

Z95 = Z975
WILSON = "Wilson score interval over items"


def metric_pick(scores: Mapping[Any, Any]) -> Any:
    """The candidate with the highest score, "tie" if the top score is shared.

    None when fewer than two candidates have a (finite) score.

    >>> metric_pick({"a": 0.3, "b": 0.1}), metric_pick({"a": 1, "b": 1}), metric_pick({"a": 1})
    ('a', 'tie', None)
    """
    clean = {k: float(v) for k, v in scores.items()
             if v is not None and not (isinstance(v, float) and math.isnan(v))}
    if len(clean) < 2:
        return None
    top = max(clean.values())
    winners = [k for k, v in clean.items() if v == top]
    return winners[0] if len(winners) == 1 else TIE


def wilson_ci(successes: float, n: int, z: float = Z95) -> list[float] | None:
    """Wilson score interval of a proportion successes / n; None for n = 0. Half
    successes are allowed (alignment's half credits).

    >>> [round(v, 4) for v in wilson_ci(12, 12)]
    [0.7575, 1.0]
    """
    if n <= 0:
        return None
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def _column(values: Any) -> np.ndarray:
    """A 1-d object array of `values` (elementwise comparisons run in C, not in a loop)."""
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def _aligned(majority: Mapping[Any, Any], picks: Mapping[Any, Any]) -> np.ndarray:
    """The picks of majority's units, in majority's order (None where there is none)."""
    return _column([picks.get(i) for i in majority])


@dataclass(frozen=True)
class Marks:
    """A metric's picks against the majority, per unit: `scored` (a candidate majority and
    a pick), `agree` (pick equals the majority), `tie` (pick is a tie). Computed once per
    metric, shared by alignment and every McNemar pair."""

    scored: np.ndarray
    agree: np.ndarray
    tie: np.ndarray


def decided(labels: np.ndarray) -> np.ndarray:
    """Mask of units whose majority is a candidate (not None, not tie)."""
    return (labels != None) & (labels != TIE)  # noqa: E711 (elementwise)


def marks(labels: np.ndarray, pick: np.ndarray, has_majority: np.ndarray | None = None) -> Marks:
    """Marks of aligned object arrays (majority label and pick per unit, None where there
    is none); `has_majority`: decided(labels), if already known."""
    has_majority = decided(labels) if has_majority is None else has_majority
    return Marks(has_majority & (pick != None), pick == labels, pick == TIE)  # noqa: E711 (elementwise)


def metric_alignment(majority: Mapping[Any, Any], picks: Mapping[Any, Any]) -> dict[str, Any]:
    """(agree + 0.5 * ties) / n over items with a candidate majority and a metric pick.

    >>> a = metric_alignment({"i1": "x", "i2": "y", "i3": "tie"}, {"i1": "x", "i2": "tie", "i3": "x"})
    >>> a["alignment"], a["agree"], a["ties"], a["n"]
    (0.75, 1, 1, 2)
    """
    return alignment_of(marks(_column(majority.values()), _aligned(majority, picks)))


def alignment_of(m: Marks) -> dict[str, Any]:
    """`metric_alignment` from a metric's marks (callers holding arrays over items)."""
    agree = int(np.count_nonzero(m.scored & m.agree))
    ties = int(np.count_nonzero(m.scored & m.tie))
    n = int(np.count_nonzero(m.scored))
    keys = {"ci_method": WILSON, "n_clusters": n}
    refusal = interval_refusal(n)
    if refusal is not None:
        keys["ci_reason"] = refusal
    if n == 0:
        return {"alignment": None, "alignment_strict": None, "agree": 0, "ties": 0, "n": 0,
                "ci95": None, "ci95_strict": None, **keys}
    return {"alignment": (agree + 0.5 * ties) / n, "alignment_strict": agree / n,
            "agree": int(agree), "ties": int(ties), "n": n,
            "ci95": wilson_ci(agree + 0.5 * ties, n) if refusal is None else None,
            "ci95_strict": wilson_ci(agree, n) if refusal is None else None, **keys}


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the two discordant counts.

    >>> mcnemar_exact(0, 5)
    0.0625
    """
    from scipy.stats import binom

    if b + c == 0:
        return 1.0
    return float(min(1.0, 2.0 * binom.cdf(min(b, c), b + c, 0.5)))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return [float(v) for v in out]


def compare_metrics(majority: Mapping[Any, Any],
                    picks_by_metric: Mapping[str, Mapping[Any, Any]]) -> list[dict[str, Any]]:
    """Exact McNemar for every metric pair on items where exactly one agrees with the
    majority (a tie counts as not agreeing), with Holm correction over all pairs."""
    labels = _column(majority.values())
    has_majority = decided(labels)
    return compare_marks({name: marks(labels, _aligned(majority, by_item), has_majority)
                          for name, by_item in picks_by_metric.items()})


def compare_marks(by_metric: Mapping[str, Marks]) -> list[dict[str, Any]]:
    """`compare_metrics` from each metric's marks."""
    rows: list[dict[str, Any]] = []
    for a, b in itertools.combinations(list(by_metric), 2):
        ma, mb = by_metric[a], by_metric[b]
        both = ma.scored & mb.scored
        a_only = int(np.count_nonzero(both & ma.agree & ~mb.agree))
        b_only = int(np.count_nonzero(both & mb.agree & ~ma.agree))
        rows.append({"a": a, "b": b, "a_only": a_only, "b_only": b_only, "n": int(np.count_nonzero(both)),
                     "p_value": mcnemar_exact(a_only, b_only)})
    for row, adjusted in zip(rows, holm([r["p_value"] for r in rows])):
        row["p_holm"] = adjusted
    return rows


def win_rate(majority: Mapping[Any, Any]) -> dict[Any, float]:
    """{candidate: share of the items with a candidate majority won by that candidate}.

    >>> win_rate({"i1": "x", "i2": "x", "i3": "y", "i4": None, "i5": "tie"})
    {'x': 0.6666666666666666, 'y': 0.3333333333333333}
    """
    return win_rate_of(_column(majority.values()))


def win_rate_of(labels: np.ndarray) -> dict[Any, float]:
    """`win_rate` of an object array of majority labels (None where there is none)."""
    winners = Counter(labels[decided(labels)].tolist())
    total = sum(winners.values())
    return {cand: winners[cand] / total for cand in sorted(winners, key=str)}
