"""Inter-annotator agreement over long-format judgments (unit, coder, value).

Krippendorff's alpha is computed from the coincidence matrix over the distinct values
present, without ever building it densely: for nominal, interval and ordinal data the
disagreement sums have closed forms over per-unit sums, and ratio data sums only the
value pairs that occur within units plus a blocked pass over distinct values for the
expected term. Memory is linear in the judgments (ratio: plus one block of values).
"""
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.tabulate import Counts, factorize, tabulate, top_three

LEVELS = ("nominal", "ordinal", "interval", "ratio")
Column = Sequence[Any] | np.ndarray  # one long-format column: units, coders or values
# `counts` (every statistic here): tabulate() of the same columns at the statistic's level, when
# the caller has it already; a report tabulates each question once for all its statistics.


IDENTICAL = "all pairable values are identical (no expected disagreement)"


@dataclass(frozen=True)
class AlphaResult:
    """value: alpha or None; reason: why None; n_units / n_values: pairable units and
    the values in them (Krippendorff's n)."""

    value: float | None
    reason: str | None
    n_units: int
    n_values: int


def _numeric(level: str) -> bool:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    return level != "nominal"


def krippendorff_alpha(units: Column, coders: Column, values: Column, level: str = "nominal",
                       counts: Counts | None = None) -> AlphaResult:
    """Krippendorff's alpha at `level`; undefined cases give value None with a reason.

    Alpha is undefined exactly when every pairable value is the same value (compared as
    values, so the answer does not depend on the scale of the numbers).

    >>> krippendorff_alpha([1, 1, 2, 2], ["a", "b", "a", "b"], ["x", "x", "x", "y"]).value
    0.0
    >>> krippendorff_alpha([1, 1], ["a", "b"], [5, 5]).reason
    'all pairable values are identical (no expected disagreement)'
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    c = counts if counts is not None else tabulate(units, coders, values, numeric=level != "nominal")
    pairable_units = c.m >= 2
    keep = pairable_units[c.unit]
    unit, value, count = c.unit[keep], c.value[keep], c.count[keep].astype(float)
    n_units = int(pairable_units.sum())
    n = float(count.sum())
    if n_units == 0:
        return AlphaResult(None, "no unit has two or more values", 0, 0)
    if value.min() == value.max():
        return AlphaResult(None, IDENTICAL, n_units, int(n))
    m = c.m[unit].astype(float)  # per triple: values in its unit
    n_c = np.bincount(value, weights=count, minlength=len(c.value_labels))
    if level == "nominal":
        sq = np.bincount(unit, weights=count**2, minlength=len(c.m))[unit]
        first = np.r_[True, unit[1:] != unit[:-1]]  # one term per unit
        observed = float(np.sum(((m**2 - sq) / (m - 1))[first]))
        expected = n**2 - float(np.sum(n_c**2))
    elif level == "ratio":
        x = c.value_labels.astype(float)
        if np.any(x < 0):
            raise ValueError("ratio level needs non-negative values")
        observed = _within_unit_sum(unit, value, count, m, x)
        expected = _ratio_expected(n_c, x)
    else:
        # ordinal: delta_ck = distance of midranks in the pooled values; interval: the values
        # mapped onto [0, 1] (alpha is unchanged by an affine map; no square of a difference
        # under- or overflows, e.g. at 1e-300)
        x = np.cumsum(n_c) - n_c / 2.0 if level == "ordinal" else unit_scale(c.value_labels.astype(float))
        observed = _interval_observed(unit, value, count, m, x, len(c.m))
        mean = float(n_c @ x) / n
        expected = 2.0 * n * float(n_c @ (x - mean) ** 2)
    if not expected > 0:  # distinct values whose distances all vanish in floating point
        return AlphaResult(None, "no expected disagreement in floating point", n_units, int(n))
    alpha = 1.0 - (n - 1.0) * observed / expected
    return AlphaResult(float(alpha), None, n_units, int(n))


def unit_scale(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values mapped onto [0, 1] (first -> 0, last -> 1).

    >>> unit_scale(np.array([2.0, 3.0, 6.0])).tolist()
    [0.0, 0.25, 1.0]
    """
    if len(x) < 2 or x[-1] == x[0]:
        return x
    return (x - x[0]) / (x[-1] - x[0])


def _interval_observed(unit: np.ndarray, value: np.ndarray, count: np.ndarray, m: np.ndarray, x: np.ndarray,
                       n_all_units: int) -> float:
    """sum_u 1/(m_u-1) sum_ck n_uc n_uk (x_c-x_k)^2 = sum_u 2 m_u/(m_u-1) sum_c n_uc (x_c-mean_u)^2."""
    s1 = np.bincount(unit, weights=count * x[value], minlength=n_all_units)
    mu = s1[unit] / m
    dev = np.bincount(unit, weights=count * (x[value] - mu) ** 2, minlength=n_all_units)
    mm = np.bincount(unit, weights=count, minlength=n_all_units)
    has = mm >= 2
    return float(np.sum(2.0 * mm[has] / (mm[has] - 1.0) * dev[has]))


def _ratio_delta2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = a + b
    return np.where(s > 0, ((a - b) / np.where(s > 0, s, 1.0)) ** 2, 0.0)


def _within_unit_sum(unit: np.ndarray, value: np.ndarray, count: np.ndarray, m: np.ndarray,
                     x: np.ndarray) -> float:
    """Ratio observed term from the (value, value) pairs that co-occur in a unit."""
    left, right = within_unit_pairs(unit)
    d2 = _ratio_delta2(x[value[left]], x[value[right]])
    return float(np.sum(count[left] * count[right] * d2 / (m[left] - 1.0)))


def _ratio_expected(n_c: np.ndarray, x: np.ndarray, block: int = 1024) -> float:
    total = 0.0
    for lo in range(0, len(x), block):
        d2 = _ratio_delta2(x[lo:lo + block, None], x[None, :])
        total += float(n_c[lo:lo + block] @ d2 @ n_c)
    return total


def within_unit_pairs(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j), i != j, of entries sharing a group; `group` must be sorted.

    >>> [a.tolist() for a in within_unit_pairs(np.array([0, 0, 1]))]
    [[0, 1], [1, 0]]
    """
    size = len(group)
    if size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.r_[0, np.flatnonzero(group[1:] != group[:-1]) + 1]
    runs = np.diff(np.r_[starts, size])
    run_of = np.repeat(runs, runs)
    start_of = np.repeat(starts, runs)
    left = np.repeat(np.arange(size), run_of)
    offset = np.arange(len(left)) - np.repeat(np.cumsum(run_of) - run_of, run_of)
    right = np.repeat(start_of, run_of) + offset
    keep = left != right
    return left[keep], right[keep]


def within_unit_pairs_once(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j), i < j, of entries sharing a group (`group` sorted): each
    unordered pair once, found by offset, half the rows of `within_unit_pairs`.

    >>> [a.tolist() for a in within_unit_pairs_once(np.array([0, 0, 0, 1]))]
    [[0, 1, 0], [1, 2, 2]]
    """
    lefts, rights = [], []
    left = np.arange(len(group))
    offset = 1
    while len(left):
        left = left[left + offset < len(group)]
        left = left[group[left + offset] == group[left]]
        lefts.append(left)
        rights.append(left + offset)
        offset += 1
    return np.concatenate(lefts).astype(np.int64), np.concatenate(rights).astype(np.int64)


def fleiss_kappa(units: Column, coders: Column, values: Column,
                 level: str = "nominal", counts: Counts | None = None) -> tuple[float | None, int]:
    """(kappa, n_units): Fleiss' kappa generalised to a varying number of ratings per unit
    (Gwet 2014; irrCAC's fleiss.kappa.raw), n_units = units with >= 2 ratings.

    With r_ik ratings of category k on unit i and r_i = sum_k r_ik: pi_k = mean over units
    with r_i >= 1 of r_ik / r_i; P_e = sum_k pi_k^2; P_a = mean over units with r_i >= 2
    of sum_k r_ik (r_ik - 1) / (r_i (r_i - 1)); kappa = (P_a - P_e) / (1 - P_e). Equals
    Fleiss (1971) when every unit has the same number of ratings. kappa is None when no
    unit has 2 ratings or only one category occurs (P_e = 1). At a numeric `level` the
    values are compared as numbers ("1" and "1.0" are one category).

    >>> fleiss_kappa([1, 1, 2, 2, 3], ["a", "b", "a", "b", "a"], ["x", "x", "y", "y", "x"])
    (1.0, 2)
    """
    c = counts if counts is not None else tabulate(units, coders, values, numeric=_numeric(level))
    r = c.m.astype(float)
    pairable = c.m >= 2
    n_units = int(pairable.sum())
    if n_units == 0:
        return None, 0
    count = c.count.astype(float)
    pi = np.bincount(c.value, weights=count / r[c.unit], minlength=len(c.value_labels)) / len(c.m)
    p_e = float(np.sum(pi**2))
    if len(c.value_labels) < 2:
        return None, n_units
    agree = np.bincount(c.unit, weights=count * (count - 1.0), minlength=len(c.m))
    p_a = float(np.mean(agree[pairable] / (r[pairable] * (r[pairable] - 1.0))))
    return float((p_a - p_e) / (1.0 - p_e)), n_units


def percent_agreement(units: Column, coders: Column, values: Column, level: str = "nominal",
                      counts: Counts | None = None) -> float | None:
    """Mean over pairable units of the share of agreeing ordered coder pairs (values
    compared as numbers at a numeric `level`).

    >>> percent_agreement([1, 1, 1, 2, 2], list("xyzxy"), list("aabaa"))
    0.6666666666666666
    """
    c = counts if counts is not None else tabulate(units, coders, values, numeric=_numeric(level))
    count = c.count.astype(float)
    agree = np.bincount(c.unit, weights=count * (count - 1.0), minlength=len(c.m))
    m = c.m.astype(float)
    has = m >= 2
    if not has.any():
        return None
    return float(np.mean(agree[has] / (m[has] * (m[has] - 1.0))))


def cohen_kappa(a_values: Column, b_values: Column) -> float | None:
    """Cohen's kappa of two paired label sequences; None if empty or P_e = 1.

    >>> cohen_kappa(["y", "y", "n", "n"], ["y", "n", "n", "n"])
    0.5
    """
    a, b = list(a_values), list(b_values)
    if len(a) != len(b):
        raise ValueError(f"paired sequences differ in length ({len(a)} vs {len(b)})")
    if not a:
        return None
    _, codes = factorize(np.asarray(a + b))
    ca, cb = codes[: len(a)], codes[len(a):]
    return _kappa_by_group(np.zeros(len(a), np.int64), ca, cb, 1, int(codes.max()) + 1)[0]


def _kappa_by_group(group: np.ndarray, va: np.ndarray, vb: np.ndarray, n_groups: int,
                    n_vals: int) -> list[float | None]:
    """Cohen's kappa per group id, vectorized; None where undefined."""
    n = np.bincount(group, minlength=n_groups).astype(float)
    agree = np.bincount(group, weights=(va == vb), minlength=n_groups)
    if n_groups * n_vals <= 8 * len(group) + 4096:  # dense counts; integer sums, exact either way
        ra = np.bincount(group * n_vals + va, minlength=n_groups * n_vals)
        rb = np.bincount(group * n_vals + vb, minlength=n_groups * n_vals)
        p_e = (ra * rb).reshape(n_groups, n_vals).sum(axis=1).astype(float)
    else:
        rk, rc = np.unique(group * n_vals + va, return_counts=True)
        ck, cc = np.unique(group * n_vals + vb, return_counts=True)
        shared, ri, ci = np.intersect1d(rk, ck, assume_unique=True, return_indices=True)
        p_e = np.bincount(shared // n_vals, weights=rc[ri] * cc[ci], minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        pe = p_e / n**2
        kappa = (agree / n - pe) / (1.0 - pe)
    defined = (n > 0) & ~np.isclose(pe, 1.0)
    return [float(k) if ok else None for k, ok in zip(kappa.tolist(), defined.tolist())]


def quadratic_kappa(a_values: Column, b_values: Column) -> float | None:
    """Quadratic-weighted Cohen's kappa of paired ratings, weights (i - j)^2 over the
    positions of the sorted distinct ratings of both sequences (as sklearn's
    cohen_kappa_score(weights="quadratic")); None if empty or nothing can disagree.

    >>> quadratic_kappa([1, 2, 3, 4], [1, 2, 4, 3])
    0.8
    """
    a, b = np.asarray(a_values, dtype=float), np.asarray(b_values, dtype=float)
    if len(a) != len(b):
        raise ValueError(f"paired sequences differ in length ({len(a)} vs {len(b)})")
    if not len(a):
        return None
    labels, codes = np.unique(np.r_[a, b], return_inverse=True)
    k = len(labels)
    observed = np.bincount(codes[: len(a)] * k + codes[len(a):], minlength=k * k).reshape(k, k).astype(float)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / len(a)
    weights = (np.arange(k)[:, None] - np.arange(k)[None, :]) ** 2.0
    den = float(np.sum(weights * expected))
    return None if den == 0 else float(1.0 - np.sum(weights * observed) / den)


def pairwise_cohen_kappa(units: Column, coders: Column, values: Column, min_shared: int = 10,
                         weights: str | None = None, counts: Counts | None = None, with_n: bool = False
                         ) -> dict[tuple[Any, Any], Any]:
    """{(coder_a, coder_b): kappa|None} for coder pairs (a < b) sharing >= min_shared units:
    unweighted (choices), or weights="quadratic" (rating scales, `quadratic_kappa`). With
    `with_n`, {(a, b): (kappa, shared units)}."""
    if weights not in (None, "quadratic"):
        raise ValueError(f"weights must be None or 'quadratic', got {weights!r}")
    c = counts if counts is not None else tabulate(units, coders, values, numeric=weights is not None)
    order = np.argsort(c.j_unit, kind="stable")
    first, second = within_unit_pairs_once(c.j_unit[order])
    first, second = order[first], order[second]
    swap = c.j_coder[first] > c.j_coder[second]  # the lower coder code on the left
    left, right = np.where(swap, second, first), np.where(swap, first, second)
    n_coders = len(c.coder_labels)
    pair = c.j_coder[left].astype(np.int64) * n_coders + c.j_coder[right]
    pair_ids, group = factorize(pair)
    shared = np.bincount(group, minlength=len(pair_ids))
    if weights is None:
        kappas = _kappa_by_group(group.ravel(), c.j_value[left], c.j_value[right],
                                 len(pair_ids), max(len(c.value_labels), 1))
    else:
        x = c.value_labels.astype(float)
        group = group.ravel()
        kappas = [quadratic_kappa(x[c.j_value[left][group == g]], x[c.j_value[right][group == g]]) if s >= min_shared
                  else None for g, s in enumerate(shared.tolist())]
    labels = c.coder_labels.tolist()
    return {
        (labels[p // n_coders], labels[p % n_coders]): (k, int(s)) if with_n else k
        for p, k, s in zip(pair_ids.tolist(), kappas, shared)
        if s >= min_shared
    }


def leave_one_out_agreement(units: Column, coders: Column, values: Column, counts: Counts | None = None,
                            with_n: bool = False) -> dict[Any, Any]:
    """{coder: share of their judgments equal to the other coders' strict majority}; with
    `with_n`, {coder: (share, units counted)}.

    Only units where the other coders have a strict majority count; None if there are none.

    >>> leave_one_out_agreement([1, 1, 1], ["x", "y", "z"], ["a", "a", "b"])
    {'x': None, 'y': None, 'z': 0.0}
    """
    c = counts if counts is not None else tabulate(units, coders, values)
    v1, c1, v2, c2, c3 = (a[c.j_unit] for a in top_three(c))
    v = c.j_value
    is_top, is_second = v == v1, (v == v2) & (v != v1)
    # Others' counts: this judgment's value loses one; see docs/statistics.md.
    top_defined = np.where(c1 - 1 > c2, True, np.where(c1 - 1 == c2, False, c2 > c3))
    top_agree = c1 - 1 > c2
    second_defined = c1 > np.maximum(c2 - 1, c3)
    other_defined = c1 > c2
    defined = np.where(is_top, top_defined, np.where(is_second, second_defined, other_defined))
    agree = is_top & top_agree
    n_coders = len(c.coder_labels)
    n_def = np.bincount(c.j_coder, weights=defined, minlength=n_coders)
    n_agree = np.bincount(c.j_coder, weights=agree & defined, minlength=n_coders)
    return _per_coder(c.coder_labels, n_agree, n_def, with_n)


def _per_coder(labels: np.ndarray, total: np.ndarray, n: np.ndarray, with_n: bool) -> dict[Any, Any]:
    """{coder: total / n (None for n = 0)}, or {coder: (that, n)} `with_n`."""
    out: dict[Any, Any] = {}
    for i, label in enumerate(labels.tolist()):
        value = float(total[i] / n[i]) if n[i] else None
        out[label] = (value, int(n[i])) if with_n else value
    return out


def leave_one_out_rating_difference(units: Column, coders: Column, values: Column, counts: Counts | None = None,
                                    with_n: bool = False) -> dict[Any, Any]:
    """{coder: mean |rating - median of the other coders' ratings|} over the units where at
    least 2 other coders rated; None for a coder with no such unit. With `with_n`, {coder:
    (mean, units counted)}.

    >>> leave_one_out_rating_difference([1, 1, 1], ["x", "y", "z"], [1, 2, 6])
    {'x': 3.0, 'y': 1.5, 'z': 4.5}
    """
    c = counts if counts is not None else tabulate(units, coders, values, numeric=True)
    x = c.value_labels.astype(float)[c.j_value]
    order = np.lexsort((x, c.j_unit))
    unit, rating, coder = c.j_unit[order], x[order], c.j_coder[order]
    starts = np.searchsorted(unit, np.arange(len(c.m)))
    m = c.m[unit]
    rank = np.arange(len(unit)) - starts[unit]  # position of the judgment in its sorted unit
    others = m - 1
    keep = others >= 2
    # Median of the unit's sorted ratings with position `rank` removed: the others'
    # middle position(s) shift by one at and after the removed rank.
    lo_pos = (others - 1) // 2
    hi_pos = others // 2
    lo_idx = starts[unit] + lo_pos + (lo_pos >= rank)
    hi_idx = starts[unit] + hi_pos + (hi_pos >= rank)
    lo_idx, hi_idx = np.where(keep, lo_idx, 0), np.where(keep, hi_idx, 0)
    median = (rating[lo_idx] + rating[hi_idx]) / 2.0
    diff = np.where(keep, np.abs(rating - median), 0.0)
    n_coders = len(c.coder_labels)
    n = np.bincount(coder, weights=keep, minlength=n_coders)
    total = np.bincount(coder, weights=diff, minlength=n_coders)
    return _per_coder(c.coder_labels, total, n, with_n)


pairwise_kappa = pairwise_cohen_kappa  # the name statistics.md uses
