"""Strengths of several systems from pairwise judgments (statistics.md, the Bradley–Terry section).

Input: one row per comparison, i.e. per non-gold judgment of a choice question: the item
(the cluster), the two systems shown (codes into `systems`) and the first one's credit
(1 = it won, 0 = the other won, 0.5 = tie: half a win each).

- `human_rows`: per system, judgment-level n, wins, ties, win rate (wins + ties/2)/n and
  its Wilson interval over the n comparisons (none from fewer than 5 items).
- `win_matrix`: W[a, b] = times a beat b (ties 0.5) = `pairwise_wins`.
- `bradley_terry`: strengths theta (log scale, mean 0) maximising
  sum_{a != b} W[a, b] log(e^theta_a / (e^theta_a + e^theta_b)), i.e. a tie is two half
  comparisons, one won by each side. Newton's method on that concave log-likelihood
  (Hessian: the weighted Laplacian N p (1 - p), N = W + W^T; step solved with the
  all-ones direction pinned to keep the mean at 0; a step that lowers the likelihood is
  halved), from theta = 0, until no strength moves by 1e-12. The maximum exists and is
  unique exactly when the "beat or tied" graph (a -> b when W[a, b] > 0) is strongly
  connected; else the strengths is null with the reason (a disconnected comparison graph, or
  a group of systems that never lost to the rest: infinite strengths).
- `bt_ranking`: the strengths with a bootstrap over ITEMS. Procedure (reproduced naively in
  tests/evaluation/test_ranking.py):
  1. clusters = the items with at least one comparison, in input order; an item's
     *profile* is how often each (system pair, outcome) occurs in it; profiles are
     numbered in order of their first item, and mult[p] counts the items with profile p;
  2. resample r (r = 0..1999) holds counts[r] = evaluation.rank_bootstrap.draw_counts(
     mult, 2000, seed=0)[r]: how often each profile is drawn when the C clusters are
     drawn C times with replacement (Multinomial(C, mult / C): the item bootstrap; drawn
     and summed a chunk of rows at a time, `reduce_draws`: the same rows);
  3. W_r = sum_p counts[r, p] * W(profile p); a resample whose beat-or-tied graph is not
     strongly connected (a system not drawn, or never losing) has no finite strengths: it
     is dropped and counted in `dropped_resamples`; otherwise theta_r = bradley_terry(W_r)
     (Newton from the full-data strengths, which changes nothing but the speed);
  4. ci95 of each strength: evaluation.bootstrap.bootstrap_interval (bias-corrected,
     expanded percentile) of the kept theta_r[a] around the estimate; null from fewer
     than 5 items or when over 10% of the resamples were dropped (with the reason);
  5. rank (1 = strongest) = 1 + the number of systems with a strength higher by over
     1e-9; rank_ci95 = [2.5th percentile (numpy method "lower"), 97.5th percentile
     (method "higher")] of the kept resamples' ranks, under the same refusals.
- `intransitivity`: circular triads d in the majority tournament (a -> b when
  W[a, b] > W[b, a]; equal wins, or never compared, is no edge) and the
  Kendall-Babington Smith zeta = 1 - 24 d / (n^3 - n) (odd n) or 1 - 24 d / (n^3 - 4n)
  (even n); null for n < 3.
"""
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from evaluation.alignment import wilson_ci
from evaluation.bootstrap import bootstrap_interval, bootstrap_method, interval_refusal
from evaluation.vocabulary import RANKED

RESAMPLES = 2000
STEP_TOL = 1e-12  # Newton stops when no strength moves by more
RANK_TOL = 1e-9  # strengths closer than this share a rank
MAX_STEPS = 200
WILSON_JUDGMENTS = ("Wilson score interval over the n comparisons (judgments); judgments cluster in items "
                    "(n_clusters), which this interval does not model")
RANK_METHOD = "percentile (2.5th lower, 97.5th higher) of the ranks in the same item-bootstrap resamples"
MODEL = ("Bradley-Terry maximum likelihood (log strengths, mean 0; a tie = two half comparisons, one won by "
         "each side)")


@dataclass(frozen=True)
class Comparisons:
    """One row per comparison: `item` (int cluster code, any order), `first`, `second`
    (int codes into `systems`), `credit` of the first system (1, 0.5 or 0)."""

    systems: list[str]
    item: np.ndarray
    first: np.ndarray
    second: np.ndarray
    credit: np.ndarray

    def __len__(self) -> int:
        return len(self.item)


def win_matrix(c: Comparisons) -> np.ndarray:
    """W[a, b] = times a beat b, a tie counting 0.5 for each side (float (S, S)).

    >>> c = Comparisons(["x", "y"], np.array([0, 1]), np.array([0, 1]), np.array([1, 0]), np.array([1.0, 0.5]))
    >>> win_matrix(c).tolist()
    [[0.0, 1.5], [0.5, 0.0]]
    """
    s = len(c.systems)
    return (np.bincount(c.first * s + c.second, weights=c.credit, minlength=s * s)
            + np.bincount(c.second * s + c.first, weights=1.0 - c.credit, minlength=s * s)).reshape(s, s)


def human_rows(c: Comparisons) -> list[dict[str, Any]]:
    """Per system (in `systems` order): {"n", "wins", "ties", "win_rate", "ci95", "ci_method",
    "n_clusters" (items where it was compared), "ci_reason"?}; a tie is half a win."""
    s = len(c.systems)
    sides = np.concatenate([c.first, c.second])
    credit = np.concatenate([c.credit, 1.0 - c.credit])
    tie = np.concatenate([c.credit == 0.5] * 2)
    n = np.bincount(sides, minlength=s)
    wins = np.bincount(sides[credit == 1.0], minlength=s)
    ties = np.bincount(sides[tie], minlength=s)
    items = np.concatenate([c.item, c.item]).astype(np.int64)
    seen = np.zeros((int(items.max()) + 1 if len(items) else 0) * s, dtype=bool)  # (item, system) pairs
    seen[items * s + sides] = True
    n_items = seen.reshape(-1, s).sum(axis=0) if s else np.zeros(0, np.int64)
    out = []
    for k in range(s):
        total = int(n[k])
        x = float(wins[k] + ties[k] / 2)
        refusal = interval_refusal(int(n_items[k]))
        row: dict[str, Any] = {"n": total, "wins": int(wins[k]), "ties": int(ties[k]),
                               "win_rate": x / total if total else None,
                               "ci95": wilson_ci(x, total) if refusal is None and total else None,
                               "ci_method": WILSON_JUDGMENTS, "n_clusters": int(n_items[k])}
        if row["ci95"] is None:
            row["ci_reason"] = refusal or "no comparisons"
        out.append(row)
    return out


def reach(beats: np.ndarray) -> np.ndarray:
    """Transitive closure (with self-loops) of boolean adjacency matrices (..., S, S)."""
    s = beats.shape[-1]
    r = beats | np.eye(s, dtype=bool)
    for _ in range(max(1, int(np.ceil(np.log2(max(s, 2)))))):
        r = (r.astype(np.int32) @ r.astype(np.int32)) > 0
    return r


def undefined_reason(w: np.ndarray, systems: list[str]) -> str | None:
    """Why W has no finite maximum-likelihood strengths, or None when it has."""
    s = len(systems)
    if s < 2:
        return "fewer than 2 systems compared"
    if not w.any():
        return "no judgment compares two systems"
    linked = reach((w + w.T) > 0)
    if not linked.all():
        groups = sorted({tuple(np.flatnonzero(linked[a]).tolist()) for a in range(s)})
        names = "; ".join("{" + ", ".join(systems[k] for k in g) + "}" for g in groups)
        return f"the comparison graph is not connected: no judgment links these groups of systems: {names}"
    r = reach(w > 0)
    if not r.all():
        top = next(a for a in range(s) if all(r[a, b] or not r[b, a] for b in range(s)))
        group = [systems[b] for b in range(s) if r[top, b] and r[b, top]]
        return ("no finite maximum-likelihood strengths: " + ", ".join(group)
                + " never lost to (nor tied with) any other system, so their strengths grow without bound")
    return None


def _loglik(theta: np.ndarray, w: np.ndarray) -> np.ndarray:
    d = theta[:, :, None] - theta[:, None, :]
    return -(w * np.logaddexp(0.0, -d)).sum(axis=(1, 2))


def _loglik_rows(w: np.ndarray, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return _loglik(theta, w[rows])


def halved_step(th: np.ndarray, step: np.ndarray, ll: np.ndarray,
                loglik: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One damped Newton step of a batch of fits (B, S): `th + step`, each row's step halved
    (up to 60 times) while it lowers that row's log-likelihood below `ll` (B,).
    `loglik(theta_rows, row_indices)` is the model's log-likelihood of those rows. Returns
    (new strengths, their log-likelihoods, the scale each step kept). Shared by every
    strength model fitted by Newton's method (Bradley-Terry here, Plackett-Luce)."""
    scale = np.ones(len(th))
    new = th + step
    new_ll = loglik(new, np.arange(len(th)))
    for _ in range(60):  # halve the steps that lowered the likelihood
        worse = new_ll < ll - 1e-12 * np.abs(ll)
        if not worse.any():
            break
        scale[worse] /= 2
        new[worse] = th[worse] + scale[worse, None] * step[worse]
        new_ll[worse] = loglik(new[worse], np.flatnonzero(worse))
    return new, new_ll, scale


def fit_batch(w: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Bradley-Terry strengths (B, S) of B win matrices (B, S, S), each strongly connected,
    by Newton's method from `start` (B, S) with step halving (module docstring)."""
    from scipy.special import expit  # heavy: docs/architecture.md, "Heavy imports"

    b, s, _ = w.shape
    n = w + w.transpose(0, 2, 1)
    won = w.sum(axis=2)
    theta = start - start.mean(axis=1, keepdims=True)
    ll = _loglik(theta, w)
    active = np.arange(b)
    pin = np.full((s, s), 1.0 / s)
    for _ in range(MAX_STEPS):
        if not len(active):
            break
        th, wa, na = theta[active], w[active], n[active]
        p = expit(th[:, :, None] - th[:, None, :])
        grad = won[active] - (na * p).sum(axis=2)
        q = na * p * (1.0 - p)
        lap = -q
        idx = np.arange(s)
        lap[:, idx, idx] = q.sum(axis=2)
        step = np.linalg.solve(lap + pin, grad[:, :, None])[:, :, 0]
        step -= step.mean(axis=1, keepdims=True)
        new, new_ll, scale = halved_step(th, step, ll[active], partial(_loglik_rows, wa))
        theta[active], ll[active] = new, new_ll
        moved = np.abs(scale[:, None] * step).max(axis=1)
        active = active[moved > STEP_TOL]
    return theta - theta.mean(axis=1, keepdims=True)


def bradley_terry(w: np.ndarray) -> np.ndarray | None:
    """Strengths (log scale, mean 0) of one win matrix, None when the maximum does not
    exist (`undefined_reason`).

    >>> theta = bradley_terry(np.array([[0.0, 3.0], [1.0, 0.0]]))
    >>> [round(float(t), 6) for t in theta]  # +-log(3)/2
    [0.549306, -0.549306]
    """
    if undefined_reason(w, [str(k) for k in range(len(w))]) is not None:
        return None
    return fit_batch(w[None], np.zeros((1, len(w))))[0]


def ranks_of(theta: np.ndarray) -> np.ndarray:
    """Rank of each strength along the last axis: 1 + systems stronger by over RANK_TOL."""
    return 1 + (theta[..., None, :] > theta[..., :, None] + RANK_TOL).sum(axis=-1)


def item_profiles(c: Comparisons) -> tuple[np.ndarray, np.ndarray]:
    """(mult (P,), W of each profile (P, S, S)): the items' distinct (system pair, outcome)
    counts, numbered in order of their first item (module docstring, step 1)."""
    s = len(c.systems)
    lo, hi = np.minimum(c.first, c.second), np.maximum(c.first, c.second)
    lo_credit = np.where(c.first == lo, c.credit, 1.0 - c.credit)
    outcome = np.where(lo_credit == 1.0, 0, np.where(lo_credit == 0.0, 2, 1))
    cell_codes, cell = np.unique((lo * s + hi) * 3 + outcome, return_inverse=True)
    item_codes, item = np.unique(c.item, return_inverse=True)
    n_cells = len(cell_codes)
    table = np.bincount(item.ravel() * n_cells + cell.ravel(), minlength=len(item_codes) * n_cells
                        ).reshape(len(item_codes), n_cells)
    mult, profiles = distinct_rows(table)
    pair, out = cell_codes // 3, cell_codes % 3
    a, b = pair // s, pair % s
    credit_lo = np.array([1.0, 0.5, 0.0])[out]
    to_w = np.zeros((n_cells, s * s))
    to_w[np.arange(n_cells), a * s + b] += credit_lo
    to_w[np.arange(n_cells), b * s + a] += 1.0 - credit_lo
    return mult, (profiles @ to_w).reshape(-1, s, s)


def distinct_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mult (P,), the distinct rows (P, D) as floats) of an integer table (C, D), numbered
    in order of their first row: the items' profiles (module docstring, step 1).

    >>> mult, rows = distinct_rows(np.array([[1, 0], [0, 2], [1, 0]]))
    >>> mult.tolist(), rows.tolist()
    ([2, 1], [[1.0, 0.0], [0.0, 2.0]])
    """
    keys = table @ np.random.default_rng(12345).integers(1, 2**62, table.shape[1])  # wraps mod 2^64: a row hash
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if not (table[first][inverse] == table).all():  # a hash collision: sort the rows themselves
        _, first, inverse = np.unique(table, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
    order = np.argsort(first, kind="stable")  # profiles in order of their first row
    renumber = np.empty_like(order)
    renumber[order] = np.arange(len(order))
    return np.bincount(renumber[inverse], minlength=len(order)), table[first[order]].astype(float)


def resampled_sums(mult: np.ndarray, profiles: np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """(resamples, D): sum_p counts[r, p] * profiles[p] with counts = the item bootstrap's
    `rank_bootstrap.draw_counts(mult, resamples, seed)` (module docstring, steps 2-3),
    the profiles as sparse rows, summed a chunk of resamples at a time in compiled code."""
    from evaluation.rank_bootstrap import reduce_draws, weighted_profiles  # numba: "Heavy imports"

    d = profiles.shape[1]
    nonzero = profiles != 0
    indptr = np.r_[0, np.cumsum(nonzero.sum(axis=1))].astype(np.int64)
    columns, values = np.nonzero(nonzero)[1].astype(np.int64), profiles[nonzero]

    def weigh(counts: np.ndarray) -> np.ndarray:
        out = np.zeros((len(counts), d))
        weighted_profiles(counts, indptr, columns, values, out)
        return out

    return reduce_draws(mult, resamples, weigh, seed)


def resample_strengths(c: Comparisons, theta: np.ndarray, resamples: int = RESAMPLES,
                       seed: int = 0) -> np.ndarray:
    """Strengths of each resample (R, S), NaN rows where dropped: steps 1-3 of the module
    docstring."""
    s = len(c.systems)
    mult, profile_w = item_profiles(c)
    w = resampled_sums(mult, profile_w.reshape(len(mult), s * s), resamples, seed).reshape(resamples, s, s)
    defined = reach(w > 0).all(axis=(1, 2))
    out = np.full((resamples, s), np.nan)
    if defined.any():
        out[defined] = fit_batch(w[defined], np.broadcast_to(theta, (int(defined.sum()), s)).copy())
    return out


def bt_ranking(c: Comparisons, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """{RANKED: {system: {"strength", "ci95", "rank", "rank_ci95", "ci_method",
    "n_clusters", "dropped_resamples", "ci_reason"?}} or None, "reason"?, "detail": {...}}
    (module docstring)."""
    w = win_matrix(c)
    reason = undefined_reason(w, c.systems)
    n_clusters = int(len(np.unique(c.item)))
    detail: dict[str, Any] = {"model": MODEL, "n_comparisons": int(len(c)), "n_clusters": n_clusters,
                              "resamples": resamples, "seed": seed,
                              "ci_method": bootstrap_method("items", resamples, seed), "rank_ci_method": RANK_METHOD}
    if reason is not None:
        return {RANKED: None, "reason": reason, "detail": detail}
    theta = fit_batch(w[None], np.zeros((1, len(w))))[0]
    return strength_table(c.systems, theta, n_clusters, lambda: resample_strengths(c, theta, resamples, seed),
                          resamples, detail)


def strength_table(systems: list[str], theta: np.ndarray, n_clusters: int, draw: Callable[[], np.ndarray],
                   resamples: int, detail: dict[str, Any]) -> dict[str, Any]:
    """{RANKED: {system: entry}, "detail": detail} from fitted strengths `theta` and
    `draw()`, the (resamples, S) strengths of the item resamples (NaN rows dropped), called
    only when an interval may be given: steps 4-5 of the module docstring. Every model
    fitted to items' judgments (Bradley-Terry, Plackett-Luce) reports its strengths so."""
    rank = ranks_of(theta)
    refusal = interval_refusal(n_clusters)
    samples, dropped = np.full((0, len(theta)), np.nan), 0
    kept = np.zeros(0, dtype=bool)
    if refusal is None:
        samples = draw()
        kept = ~np.isnan(samples[:, 0])
        dropped = int(resamples - kept.sum())
        refusal = interval_refusal(n_clusters, dropped, resamples)
    detail["dropped_resamples"] = dropped
    if refusal is not None:
        detail["ci_reason"] = refusal
    sample_ranks = ranks_of(samples[kept]) if refusal is None else None
    out = {}
    for k, system in enumerate(systems):
        entry: dict[str, Any] = {"strength": float(theta[k]), "ci95": None, "rank": int(rank[k]), "rank_ci95": None,
                                 "ci_method": detail["ci_method"], "n_clusters": n_clusters,
                                 "dropped_resamples": dropped}
        if sample_ranks is not None:
            interval = bootstrap_interval(samples[:, k], float(theta[k]), n_clusters)
            entry["ci95"] = interval.ci95
            if interval.ci95 is None:
                entry["ci_reason"] = interval.reason
            entry["rank_ci95"] = [int(np.percentile(sample_ranks[:, k], 2.5, method="lower")),
                                  int(np.percentile(sample_ranks[:, k], 97.5, method="higher"))]
        else:
            entry["ci_reason"] = refusal
        out[system] = entry
    return {RANKED: out, "detail": detail}


def circular_triads(w: np.ndarray) -> tuple[int, list[list[int]]]:
    """(d, the cyclic triads as [a, b, c] with a -> b -> c -> a) of the majority tournament
    a -> b when W[a, b] > W[b, a] (equal wins: no edge).

    >>> beats = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], float)
    >>> circular_triads(beats)
    (1, [[0, 1, 2]])
    """
    s = len(w)
    edge = w > w.T
    cycles = []
    for a in range(s):
        for b in range(a + 1, s):
            for c in range(b + 1, s):
                if edge[a, b] and edge[b, c] and edge[c, a]:
                    cycles.append([a, b, c])
                elif edge[a, c] and edge[c, b] and edge[b, a]:
                    cycles.append([a, c, b])
    return len(cycles), cycles


def intransitivity(w: np.ndarray, systems: list[str]) -> dict[str, Any]:
    """{"circular_triads", "zeta", "n_systems", "cycles" (system ids), "undecided_pairs"
    (pairs with equal wins, never compared included)}; d and zeta null (with "reason") for
    n < 3 or when no judgment compares two systems."""
    s = len(systems)
    iu = np.triu_indices(s, 1)
    undecided = int(np.count_nonzero(w[iu] == w.T[iu]))
    if s < 3 or not w.any():
        return {"circular_triads": None, "zeta": None, "n_systems": s, "cycles": [], "undecided_pairs": undecided,
                "reason": "fewer than 3 systems" if s < 3 else "no comparisons"}
    d, cycles = circular_triads(w)
    zeta = 1 - 24 * d / (s**3 - s) if s % 2 else 1 - 24 * d / (s**3 - 4 * s)
    return {"circular_triads": d, "zeta": float(zeta), "n_systems": s,
            "cycles": [[systems[k] for k in cycle] for cycle in cycles], "undecided_pairs": undecided}


def pairwise_wins(w: np.ndarray, systems: list[str]) -> dict[str, dict[str, float]]:
    """{a: {b: W[a, b]}} over every ordered pair of distinct systems."""
    return {a: {b: float(w[i, j]) for j, b in enumerate(systems) if j != i} for i, a in enumerate(systems)}


def pairwise_n(w: np.ndarray, systems: list[str]) -> dict[str, dict[str, int]]:
    """{a: {b: comparisons of a with b}} (the n of each `pairwise_wins` value)."""
    n = w + w.T
    return {a: {b: int(round(n[i, j])) for j, b in enumerate(systems) if j != i} for i, a in enumerate(systems)}
