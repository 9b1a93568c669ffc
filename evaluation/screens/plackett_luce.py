"""Plackett-Luce strengths from listwise rank orders (statistics.md, the best-worst and listwise
section; issue 33), with the item bootstrap and rank intervals of evaluation.bradley_terry.

An order lists an item's outputs best first as groups of systems; a group of two or more
is a tie. Each order is a sequence of Luce choices, "system c is picked first from the
set A" with a weight w, and the log-likelihood of strengths theta (log scale) is

    sum over choices  w * (theta_c - log sum_{a in A} e^theta_a)

(a choice from a set of one says nothing and is left out). Without ties, position j of a
order is one choice (weight 1) of its system from the systems at positions >= j: the
Plackett-Luce likelihood, the one `choix.opt_rankings` maximises.

Ties: Luce's rule for tied ranks, as this project applies it. A tied group G (g systems)
with the set B of systems ranked below it counts as every order of G at once, each with
weight 1/g!, the log-likelihoods averaged (the listwise form of the pairwise rule "a tie is
two half comparisons": for g = 2 at the bottom, half a choice of each from the pair). In
closed form: for every subset T of G (t = |T| >= 1) and every c in T, the choice of c from
T + B with weight 1 / (t * C(g, t)) (T is the part of G not yet placed, uniform over the
t-subsets; c is placed next, uniform over T). A group of 8 gives 2^8 subsets, not 8!.

Sufficient statistics (per item, summed over its strengthss): the weight of each choice cell
(set A, system c picked from it), from which won[c] (choice weight of c), n[A] (choice
weight from A) and beats[c, a] (weight of c picked from a set holding a) follow.
The maximum exists and is unique exactly when the graph c -> a (beats[c, a] > 0) is
strongly connected (Hunter 2004), else the strengths is null with
evaluation.bradley_terry.undefined_reason. Newton's method as evaluation.bradley_terry.fit_batch: the
Hessian is sum_A n[A] (diag p_A - p_A p_A^T), p_A the choice probabilities in A; the
all-ones direction is pinned (mean 0); a step that lowers the likelihood is halved; until
no strength moves by 1e-12.

Intervals: evaluation.bradley_terry's item bootstrap (steps 1-5 of its docstring) with these
statistics in place of the win matrix: items with equal statistics are one profile,
resample r sums draw_counts(mult, 2000, seed 0)[r] times the profiles, a resample whose
beats graph is not strongly connected is dropped and counted.

Kendall's W: per item with >= 2 rankings (all of the same outputs, n >= 2), ranks R_ij
(tied outputs share their mean position), W = 12 S / (m^2 (n^3 - n) - m sum_j T_j) with
S = sum_i (R_i - m (n + 1) / 2)^2, R_i the rank sum of output i over the m rankings and
T_j = sum over the tied groups of order j of (t^3 - t) (Kendall's tie correction; 0
without ties). An item where every order is one tie (denominator 0) has no W and is
counted in `n_items_undefined`. Reported: the mean over items with its n and the report's
bootstrap interval over items.
"""
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from itertools import combinations
from typing import Any

import numpy as np

from evaluation.bootstrap import bootstrap_method, clustered_mean
from evaluation.bradley_terry import (
    MAX_STEPS,
    RANK_METHOD,
    RESAMPLES,
    STEP_TOL,
    Comparisons,
    distinct_rows,
    halved_step,
    reach,
    resampled_sums,
    strength_table,
    undefined_reason,
)
from evaluation.vocabulary import RANKED

MODEL = ("Plackett-Luce maximum likelihood (log strengths, mean 0; a tied group counts as all its orders, "
         "each with weight 1/g!)")
Order = Sequence[Sequence[int]]  # one order: groups of system codes, best first


@dataclass(frozen=True)
class Rankings:
    """One row per order judgment: `item` (int cluster code), `orders[j]` its groups of
    system codes (into `systems`), best first; a group of two or more is a tie. Rankings
    without ties, all of one length, may come as an int array (J, k) instead (no Python
    loop over them)."""

    systems: list[str]
    item: np.ndarray
    orders: list[Order] | np.ndarray

    def __len__(self) -> int:
        return len(self.item)

    def groups(self) -> list[Order]:
        """`orders` as lists of groups."""
        if isinstance(self.orders, np.ndarray):
            return [[[c] for c in row] for row in self.orders.tolist()]
        return self.orders


def choice_template(group_sizes: tuple[int, ...]) -> list[tuple[tuple[int, ...], int, int, int]]:
    """The Luce choices of an order shape (its group sizes, best first) over positions:
    (positions of the set, position picked, weight numerator, weight denominator), sets of
    one left out (module docstring).

    >>> choice_template((1, 1, 1))
    [((0, 1, 2), 0, 1, 1), ((1, 2), 1, 1, 1)]
    >>> choice_template((2,))
    [((0, 1), 0, 1, 2), ((0, 1), 1, 1, 2)]
    """
    out = []
    start = 0
    total = sum(group_sizes)
    for g in group_sizes:
        group = tuple(range(start, start + g))
        below = tuple(range(start + g, total))
        for t in range(g, 0, -1):
            for part in combinations(group, t):
                if t + len(below) < 2:
                    continue
                for c in part:
                    out.append((part + below, c, 1, t * math.comb(g, t)))
        start += g
    return out


@dataclass(frozen=True)
class ChoiceStats:
    """Per item (rows in item-code order) the weight, times `scale`, of each Luce choice
    cell (a set, the system picked from it): `table` (items, cells) int; `cell_set`,
    `cell_chosen` (cells,); `sets` (M, S) bool membership. `stats` turns summed rows into
    the model's statistics."""

    table: np.ndarray
    cell_set: np.ndarray
    cell_chosen: np.ndarray
    sets: np.ndarray
    scale: int
    items: np.ndarray  # the item code of each row

    def stats(self, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(won (B, S), n per set (B, M), beats (B, S, S)) of cell sums (B, cells), divided
        by `scale`: won[c] = sum over c's cells, n[A] = sum over A's cells, beats[c, a] =
        sum over c's cells whose set holds a (a != c)."""
        m, s = self.sets.shape
        cells = len(self.cell_set)
        to_won = np.zeros((cells, s))
        to_won[np.arange(cells), self.cell_chosen] = 1.0
        to_n = np.zeros((cells, m))
        to_n[np.arange(cells), self.cell_set] = 1.0
        to_beats = (to_won[:, :, None] * self.sets[self.cell_set][:, None, :]).reshape(cells, s * s)
        to_beats[:, np.arange(s) * (s + 1)] = 0.0  # no system beats itself
        x = sums / self.scale
        return x @ to_won, x @ to_n, (x @ to_beats).reshape(-1, s, s)


def choice_stats(r: Rankings) -> ChoiceStats:
    """The items' choice cells (module docstring), built per order shape with NumPy (one
    template of choices per shape)."""
    s = len(r.systems)
    placed_of: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}  # shape: (judgments, placed systems)
    if isinstance(r.orders, np.ndarray):
        placed_of[(1,) * r.orders.shape[1]] = (np.arange(len(r.orders)), r.orders.astype(np.int64))
    else:
        shapes: dict[tuple[int, ...], list[int]] = {}
        for j, order in enumerate(r.orders):
            shapes.setdefault(tuple(len(g) for g in order), []).append(j)
        for shape, members in shapes.items():
            placed = [[c for g in r.orders[j] for c in g] for j in members]
            placed_of[shape] = (np.asarray(members), np.array(placed, dtype=np.int64))
    templates = {shape: choice_template(shape) for shape in placed_of}
    scale = math.lcm(1, *[den for t in templates.values() for *_, den in t])
    items, item_row = np.unique(np.asarray(r.item, dtype=np.int64), return_inverse=True)
    item_row = item_row.ravel()
    rows, keys, chosen, weights = [], [], [], []
    for shape, (judgments, systems) in placed_of.items():
        row = item_row[judgments]
        for positions, picked, num, den in templates[shape]:
            rows.append(row)
            keys.append(_set_keys(systems[:, list(positions)], s))
            chosen.append(systems[:, picked])
            weights.append(np.full(len(row), num * (scale // den), dtype=np.int64))
    if not rows:
        return ChoiceStats(np.zeros((len(items), 0), np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                           np.zeros((0, s), bool), scale, items)
    set_keys, set_code = np.unique(np.concatenate(keys), return_inverse=True)
    sets = np.array([[(int(k) >> a) & 1 for a in range(s)] for k in set_keys], dtype=bool).reshape(-1, s)
    cell_keys, cell = np.unique(set_code.ravel().astype(np.int64) * s + np.concatenate(chosen), return_inverse=True)
    width = len(cell_keys)
    table = np.bincount(np.concatenate(rows) * width + cell.ravel(), weights=np.concatenate(weights),
                        minlength=len(items) * width).reshape(len(items), width)
    return ChoiceStats(np.rint(table).astype(np.int64), cell_keys // s, cell_keys % s, sets, scale, items)


def _set_keys(members: np.ndarray, s: int) -> np.ndarray:
    """The bit mask of each row's set of systems: int64 up to 62 systems, Python ints beyond."""
    if s <= 62:
        return np.left_shift(np.int64(1), members).sum(axis=1)
    return np.array([sum(1 << int(a) for a in row) for row in members], dtype=object)


def _choice_probabilities(theta: np.ndarray, sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p (B, M, S): the probability that each system is picked from each set, 0 outside
    it; log sum_{a in A} e^theta_a (B, M))."""
    inside = np.where(sets[None], theta[:, None, :], -np.inf)
    top = inside.max(axis=2, keepdims=True)
    e = np.exp(inside - top)
    z = e.sum(axis=2, keepdims=True)
    return e / z, (np.log(z) + top)[:, :, 0]


def _loglik(theta: np.ndarray, won: np.ndarray, n: np.ndarray, sets: np.ndarray) -> np.ndarray:
    return np.asarray((won * theta).sum(axis=1) - (n * _choice_probabilities(theta, sets)[1]).sum(axis=1))


def _loglik_rows(won: np.ndarray, n: np.ndarray, sets: np.ndarray, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return _loglik(theta, won[rows], n[rows], sets)


def fit_batch(won: np.ndarray, n: np.ndarray, sets: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Plackett-Luce strengths (B, S) of B statistics (won (B, S), n (B, M) over `sets`
    (M, S)), each with a strongly connected beats graph, by Newton's method from `start`
    with step halving (module docstring)."""
    b, s = won.shape
    theta = start - start.mean(axis=1, keepdims=True)
    ll = _loglik(theta, won, n, sets)
    active = np.arange(b)
    pin = np.full((s, s), 1.0 / s)
    idx = np.arange(s)
    for _ in range(MAX_STEPS):
        if not len(active):
            break
        th, wa, na = theta[active], won[active], n[active]
        p, _ = _choice_probabilities(th, sets)
        expected = np.einsum("bm,bms->bs", na, p)
        grad = wa - expected
        hess = -np.einsum("bm,bms,bmt->bst", na, p, p)
        hess[:, idx, idx] += expected
        step = np.linalg.solve(hess + pin, grad[:, :, None])[:, :, 0]
        step -= step.mean(axis=1, keepdims=True)
        new, new_ll, scale = halved_step(th, step, ll[active], partial(_loglik_rows, wa, na, sets))
        theta[active], ll[active] = new, new_ll
        moved = np.abs(scale[:, None] * step).max(axis=1)
        active = active[moved > STEP_TOL]
    return np.asarray(theta - theta.mean(axis=1, keepdims=True))


def strengths(r: Rankings) -> np.ndarray | None:
    """Plackett-Luce strengths (log scale, mean 0) of all rankings, None when the maximum
    does not exist.

    >>> theta = strengths(Rankings(["x", "y"], np.arange(4), [[[0], [1]]] * 3 + [[[1], [0]]]))
    >>> [round(float(t), 6) for t in theta]  # +-log(3)/2, as Bradley-Terry's 3-1
    [0.549306, -0.549306]
    """
    cs = choice_stats(r)
    s = len(r.systems)
    won, n, beats = cs.stats(cs.table.sum(axis=0, keepdims=True))
    if undefined_reason(beats[0], r.systems) is not None:
        return None
    return fit_batch(won, n, cs.sets, np.zeros((1, s)))[0]


def plackett_luce(r: Rankings, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """{RANKED: {system: {"strength", "ci95", "rank", "rank_ci95", "ci_method",
    "n_clusters", "dropped_resamples", "ci_reason"?}} or None, "reason"?, "detail": {...}}:
    the listwise kind's report entry (module docstring; the shape of the pairwise kinds')."""
    cs = choice_stats(r)
    s = len(r.systems)
    won, n, beats = cs.stats(cs.table.sum(axis=0, keepdims=True))
    n_clusters = len(cs.items)
    detail: dict[str, Any] = {"model": MODEL, "n_rankings": len(r), "n_clusters": n_clusters,
                              "resamples": resamples, "seed": seed,
                              "ci_method": bootstrap_method("items", resamples, seed), "rank_ci_method": RANK_METHOD}
    reason = undefined_reason(beats[0], r.systems)
    if reason is not None:
        return {RANKED: None, "reason": reason, "detail": detail}
    theta = fit_batch(won, n, cs.sets, np.zeros((1, s)))[0]

    def draw() -> np.ndarray:
        mult, profiles = distinct_rows(cs.table)
        won_r, n_r, beats_r = cs.stats(resampled_sums(mult, profiles, resamples, seed))
        defined = reach(beats_r > 0).all(axis=(1, 2))
        out = np.full((resamples, s), np.nan)
        if defined.any():
            out[defined] = fit_batch(won_r[defined], n_r[defined], cs.sets,
                                     np.broadcast_to(theta, (int(defined.sum()), s)).copy())
        return out

    return strength_table(r.systems, theta, n_clusters, draw, resamples, detail)


def implied_comparisons(r: Rankings) -> Comparisons:
    """Every pair of systems in each order as one comparison (the higher one wins; the
    same group is a tie, credit 0.5): the pairwise `systems` table of the listwise kind.

    >>> c = implied_comparisons(Rankings(["x", "y", "z"], np.array([7]), [[[2], [0, 1]]]))
    >>> c.first.tolist(), c.second.tolist(), c.credit.tolist()
    ([2, 2, 0], [0, 1, 1], [1.0, 1.0, 0.5])
    """
    item, first, second, credit = [], [], [], []
    for it, order in zip(np.asarray(r.item).tolist(), r.groups()):
        placed = [(c, g) for g, group in enumerate(order) for c in group]
        for (a, ga), (b, gb) in combinations(placed, 2):
            item.append(it)
            first.append(a)
            second.append(b)
            credit.append(0.5 if ga == gb else 1.0)
    return Comparisons(r.systems, np.array(item, dtype=np.int64), np.array(first, dtype=np.int64),
                       np.array(second, dtype=np.int64), np.array(credit, dtype=float))


def midranks(order: Order) -> tuple[dict[int, float], int]:
    """({system: rank}, sum over tied groups of t^3 - t) of one order: a tied group
    shares the mean of its positions (1 = best).

    >>> midranks([[3], [0, 2], [1]])
    ({3: 1.0, 0: 2.5, 2: 2.5, 1: 4.0}, 6)
    """
    ranks: dict[int, float] = {}
    ties, start = 0, 1
    for group in order:
        g = len(group)
        for c in group:
            ranks[int(c)] = start + (g - 1) / 2
        ties += g**3 - g
        start += g
    return ranks, ties



def kendall_w_per_item(by_item: dict[int, list[Any]]) -> tuple[list[float], list[int], int, int]:
    """(W of each item with >= 2 orders, those items, the orders they hold, items whose W is
    undefined) over `by_item` {item: its orders}, in the dict's order."""
    values: list[float] = []
    labels: list[int] = []
    n_rankings = undefined = 0
    for it, orders in by_item.items():
        if len(orders) < 2:
            continue
        w = kendall_w_of_item(orders)
        if w is None:
            undefined += 1
            continue
        values.append(w)
        labels.append(it)
        n_rankings += len(orders)
    return values, labels, n_rankings, undefined

def kendall_w_of_item(orders: Sequence[Order]) -> float | None:
    """Kendall's W (tie-corrected) of m >= 2 rankings of the same n >= 2 outputs; None when
    its denominator is 0 (every order one tie).

    >>> kendall_w_of_item([[[0], [1], [2]], [[0], [1], [2]]])
    1.0
    >>> kendall_w_of_item([[[0], [1], [2]], [[2], [1], [0]]])
    0.0
    """
    parsed = [midranks(o) for o in orders]
    outputs = sorted(parsed[0][0])
    if any(sorted(ranks) != outputs for ranks, _ in parsed):
        raise ValueError("Kendall's W needs every order of an item to rank the same outputs")
    m, k = len(parsed), len(outputs)
    if m < 2 or k < 2:
        raise ValueError("Kendall's W needs at least 2 rankings of at least 2 outputs")
    sums = np.array([sum(ranks[c] for ranks, _ in parsed) for c in outputs])
    spread = float(((sums - m * (k + 1) / 2) ** 2).sum())
    den = m * m * (k**3 - k) - m * sum(t for _, t in parsed)
    return None if den == 0 else 12 * spread / den


def kendall_w(r: Rankings, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """{"value" (mean W over items with >= 2 rankings), "n" (those items), "n_rankings",
    "n_items_undefined", "tie_corrected", "ci95", "ci_method", "ci_reason"?}: W per item
    (`kendall_w_of_item`), its mean with the report's bootstrap interval over items."""
    by_item: dict[int, list[Order]] = {}
    for it, order in zip(np.asarray(r.item).tolist(), r.groups()):
        by_item.setdefault(int(it), []).append(order)
    ties = any(len(g) > 1 for o in r.groups() for g in o)
    values, labels, n_rankings, undefined = kendall_w_per_item(by_item)
    out: dict[str, Any] = {"value": None, "n": len(values), "n_rankings": n_rankings,
                           "n_items_undefined": undefined, "tie_corrected": ties, "ci95": None,
                           "ci_method": bootstrap_method("items", resamples, seed)}
    if not values:
        out["reason"] = "no item has 2 or more rankings with a defined W"
        return out
    mean, interval = clustered_mean(values, labels, resamples, seed)
    out["value"], out["ci95"] = mean, interval.ci95
    if interval.ci95 is None:
        out["ci_reason"] = interval.reason
    return out
