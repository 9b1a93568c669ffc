"""Metric-vs-human alignment for pairwise studies (ExPerT Table 1)."""
import itertools
import math

import numpy as np
from scipy.stats import binom

from evaluation.bootstrap import bootstrap_mean_ci

TIE = "tie"


def metric_pick(scores):
    """The candidate with the highest score, "tie" if the top score is shared.

    None when fewer than two candidates have a (finite) score.
    """
    clean = {k: float(v) for k, v in scores.items()
             if v is not None and not (isinstance(v, float) and math.isnan(v))}
    if len(clean) < 2:
        return None
    top = max(clean.values())
    winners = [k for k, v in clean.items() if v == top]
    return winners[0] if len(winners) == 1 else TIE


def _scored_items(majority, picks):
    return [i for i in majority if majority[i] is not None and picks.get(i) is not None]


def metric_alignment(majority, picks, resamples=2000, seed=0):
    """(agree + 0.5 * ties) / n over items with a human majority and a metric pick."""
    items = _scored_items(majority, picks)
    agree = sum(picks[i] == majority[i] for i in items)
    ties = sum(picks[i] == TIE and majority[i] != TIE for i in items)
    n = len(items)
    if n == 0:
        return {"alignment": None, "alignment_strict": None, "agree": 0, "ties": 0,
                "n": 0, "ci95": None}
    credit = np.array([1.0 if picks[i] == majority[i] else 0.5 if picks[i] == TIE else 0.0
                       for i in items])
    ci = bootstrap_mean_ci(credit, resamples, seed)
    return {"alignment": float(credit.mean()), "alignment_strict": agree / n,
            "agree": int(agree), "ties": int(ties), "n": n, "ci95": ci}


def mcnemar_exact(b, c):
    """Two-sided exact McNemar p-value from the two discordant counts."""
    if b + c == 0:
        return 1.0
    return float(min(1.0, 2.0 * binom.cdf(min(b, c), b + c, 0.5)))


def holm(pvalues):
    """Holm step-down adjusted p-values, in the input order."""
    p = np.asarray(pvalues, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()


def compare_metrics(majority, picks_by_metric):
    """Exact McNemar for every metric pair on items where exactly one agrees with the
    majority (a tie counts as not agreeing), with Holm correction over all pairs."""
    rows = []
    for a, b in itertools.combinations(list(picks_by_metric), 2):
        pa, pb = picks_by_metric[a], picks_by_metric[b]
        items = [i for i in _scored_items(majority, pa) if pb.get(i) is not None]
        a_only = sum(pa[i] == majority[i] and pb[i] != majority[i] for i in items)
        b_only = sum(pb[i] == majority[i] and pa[i] != majority[i] for i in items)
        rows.append({"a": a, "b": b, "a_only": a_only, "b_only": b_only,
                     "p_value": mcnemar_exact(a_only, b_only)})
    for row, adjusted in zip(rows, holm([r["p_value"] for r in rows])):
        row["p_holm"] = adjusted
    return rows


def win_rate(majority):
    """{candidate: share of items with a majority whose majority is that candidate}."""
    winners = [v for v in majority.values() if v is not None]
    if not winners:
        return {}
    return {cand: winners.count(cand) / len(winners) for cand in sorted(set(winners), key=str)}
