"""Best-worst scaling (statistics.md, the best-worst and listwise section; issue 33).

One row per best-worst judgment: the item (the cluster), the annotator, the systems shown
(a tuple of 3-6, or all of the item's candidates) and the systems picked best and worst.

- `bws_scores`: per system, n_shown, n_best, n_worst and the counting score
  bws_score = (n_best - n_worst) / n_shown (Kiritchenko & Mohammad 2017), in [-1, 1];
  ci95: the report's bootstrap over items (2,000 resamples, seed 0; evaluation.bootstrap:
  each resample's score is its drawn items' (best - worst) total over their shown total,
  `ratio_samples`; bias-corrected, expanded percentile), n_clusters = items where the
  system was shown, no interval below 5 of them.
- `implied_comparisons` / `bws_ranking`: each judgment implies "best beat every other
  shown system" and "every other shown system beat worst" (best over worst once, not twice:
  2k - 3 comparisons from a tuple of k); the Bradley-Terry strengths of those comparisons is
  evaluation.bradley_terry.bt_ranking (same model, item bootstrap and rank intervals as the
  pairwise kinds).
- `split_half`: the annotators are shuffled (numpy default_rng(seed 0), one permutation
  per split, 100 splits) and cut into two halves (the first floor(A / 2) and the rest);
  bws_score of every system in each half; r = Pearson correlation of the two halves'
  scores over the systems, corrected by Spearman-Brown to the full set: 2r / (1 + r). The
  value is the mean of the corrected r over the splits where it is defined (every system
  shown in both halves, neither half constant, r > -1), with n_splits, n_annotators and
  n_systems. Null with the reason for fewer than 2 annotators or 3 systems.
"""
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.bootstrap import RESAMPLES, bootstrap_interval, bootstrap_method, interval_refusal, ratio_samples
from evaluation.bradley_terry import Comparisons, bt_ranking

SPLITS = 100


@dataclass(frozen=True)
class BestWorst:
    """One row per judgment: `item`, `annotator` (int codes), `shown[j]` the system codes
    shown (into `systems`), `best`, `worst` the codes picked."""

    systems: list[str]
    item: np.ndarray
    annotator: np.ndarray
    shown: list[Sequence[int]]
    best: np.ndarray
    worst: np.ndarray

    def __len__(self) -> int:
        return len(self.item)


def _flat_shown(bw: BestWorst) -> tuple[np.ndarray, np.ndarray]:
    """(judgment of each shown slot, system of each shown slot)."""
    sizes = np.array([len(s) for s in bw.shown], dtype=np.int64)
    systems = np.concatenate([np.asarray(s, dtype=np.int64) for s in bw.shown]) if len(bw) else np.zeros(0, np.int64)
    return np.repeat(np.arange(len(bw)), sizes), systems


def counts_by(bw: BestWorst, group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shown, best, worst), each (n_groups, S): per group of judgments (group[j] in
    0..n_groups-1) how often each system was shown, picked best, picked worst."""
    s = len(bw.systems)
    judgment, system = _flat_shown(bw)
    shown = np.bincount(group[judgment] * s + system, minlength=n_groups * s).reshape(n_groups, s)
    best = np.bincount(group * s + bw.best, minlength=n_groups * s).reshape(n_groups, s)
    worst = np.bincount(group * s + bw.worst, minlength=n_groups * s).reshape(n_groups, s)
    return shown, best, worst


def bws_scores(bw: BestWorst, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, dict[str, Any]]:
    """{system: {"bws_score", "ci95", "n_shown", "n_best", "n_worst", "n_clusters",
    "ci_method", "ci_reason"?}} (module docstring); bws_score null when never shown."""
    _, item = np.unique(np.asarray(bw.item), return_inverse=True)
    item = item.ravel().astype(np.int64)
    n_items = int(item.max()) + 1 if len(item) else 0
    shown, best, worst = counts_by(bw, item, n_items)
    num, den = (best - worst).T.astype(float), shown.T.astype(float)  # (S, items)
    n_clusters = (shown > 0).sum(axis=0)
    samples = ratio_samples(num, den, resamples, seed) if n_items else np.zeros((0, len(bw.systems)))
    out = {}
    for k, system in enumerate(bw.systems):
        n_shown = int(den[k].sum())
        score = float(num[k].sum()) / n_shown if n_shown else None
        row: dict[str, Any] = {"bws_score": score, "ci95": None, "n_shown": n_shown, "n_best": int(best[:, k].sum()),
                               "n_worst": int(worst[:, k].sum()), "n_clusters": int(n_clusters[k]),
                               "ci_method": bootstrap_method("items", resamples, seed)}
        refusal = interval_refusal(int(n_clusters[k]))
        if refusal is None:
            interval = bootstrap_interval(samples[:, k], score, int(n_clusters[k]))
            row["ci95"], refusal = interval.ci95, interval.reason
        if refusal is not None:
            row["ci_reason"] = refusal if n_shown else "never shown"
        out[system] = row
    return out


def implied_comparisons(bw: BestWorst) -> Comparisons:
    """The comparisons a judgment implies (module docstring), best or the winner first.

    >>> bw = BestWorst(list("abcd"), np.array([0]), np.array([0]), [[0, 1, 2, 3]], np.array([2]), np.array([0]))
    >>> c = implied_comparisons(bw)
    >>> list(zip(c.first.tolist(), c.second.tolist()))
    [(2, 0), (2, 1), (2, 3), (1, 0), (3, 0)]
    """
    judgment, system = _flat_shown(bw)
    best, worst = bw.best[judgment], bw.worst[judgment]
    over = system != best  # best beat each other shown system
    under = (system != best) & (system != worst)  # each other shown system (not best) beat worst
    first = np.concatenate([best[over], system[under]])
    second = np.concatenate([system[over], worst[under]])
    item = np.asarray(bw.item)[np.concatenate([judgment[over], judgment[under]])]
    order = np.argsort(np.concatenate([judgment[over], judgment[under]]), kind="stable")
    return Comparisons(bw.systems, item[order], first[order], second[order], np.ones(len(first)))


def bws_ranking(bw: BestWorst, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """evaluation.bradley_terry.bt_ranking of the implied comparisons, with `detail.implied_pairs`."""
    out = bt_ranking(implied_comparisons(bw), resamples, seed)
    out["detail"]["implied_pairs"] = "best > every other shown; every other shown > worst (best > worst once)"
    return out


def split_half(bw: BestWorst, splits: int = SPLITS, seed: int = 0) -> dict[str, Any]:
    """{"value" (mean Spearman-Brown-corrected r), "n_splits", "n_annotators", "n_systems",
    "correlation", "reason"?} (module docstring).

    >>> bw = BestWorst(list("abc"), np.arange(4), np.array([0, 1, 2, 3]), [[0, 1, 2]] * 4,
    ...                np.array([0, 0, 0, 0]), np.array([2, 2, 2, 1]))
    >>> round(split_half(bw)["value"], 6)  # every split: r = sqrt(3)/2, 2r / (1 + r)
    0.928203
    """
    codes, annotator = np.unique(np.asarray(bw.annotator), return_inverse=True)
    annotator = annotator.ravel().astype(np.int64)
    n_ann, s = len(codes), len(bw.systems)
    out: dict[str, Any] = {"value": None, "n_splits": 0, "n_annotators": n_ann, "n_systems": s,
                           "correlation": "Pearson over systems, Spearman-Brown corrected: 2r / (1 + r)",
                           "splits": splits, "seed": seed}
    if n_ann < 2 or s < 3:
        out["reason"] = "fewer than 2 annotators" if n_ann < 2 else "fewer than 3 systems"
        return out
    shown, best, worst = counts_by(bw, annotator, n_ann)
    net = best - worst
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(splits):
        half = np.zeros(n_ann, dtype=bool)
        half[rng.permutation(n_ann)[: n_ann // 2]] = True
        r = _half_correlation(net, shown, half)
        if r is not None and r > -1:
            values.append(2 * r / (1 + r))
    out["n_splits"] = len(values)
    if not values:
        out["reason"] = "no split has every system shown in both halves and scores that vary"
        return out
    out["value"] = float(np.mean(values))
    return out


def _half_correlation(net: np.ndarray, shown: np.ndarray, half: np.ndarray) -> float | None:
    """Pearson r of the systems' bws_score in the annotators of `half` and in the others."""
    scores = []
    for part in (half, ~half):
        n = shown[part].sum(axis=0)
        if (n == 0).any():
            return None
        scores.append(net[part].sum(axis=0) / n)
    a, b = scores[0] - scores[0].mean(), scores[1] - scores[1].mean()
    den = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum()) / den if den > 0 else None
