"""Inter-annotator agreement over long-format judgments (unit, coder, value).

Krippendorff's alpha is computed from the coincidence matrix over the distinct values
present, without ever building it densely: for nominal, interval and ordinal data the
disagreement sums have closed forms over per-unit sums, and ratio data sums only the
value pairs that occur within units plus a blocked pass over distinct values for the
expected term. Memory is linear in the judgments (ratio: plus one block of values).
"""
from dataclasses import dataclass

import numpy as np

from evaluation.tabulate import factorize, tabulate, top_three

LEVELS = ("nominal", "ordinal", "interval", "ratio")


@dataclass(frozen=True)
class AlphaResult:
    """value: alpha or None; reason: why None; n_units / n_values: pairable units and
    the values in them (Krippendorff's n)."""

    value: float | None
    reason: str | None
    n_units: int
    n_values: int


def krippendorff_alpha(units, coders, values, level="nominal"):
    """Krippendorff's alpha at `level`; undefined cases give value None with a reason."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    c = tabulate(units, coders, values, numeric=level != "nominal")
    pairable_units = c.m >= 2
    keep = pairable_units[c.unit]
    unit, value, count = c.unit[keep], c.value[keep], c.count[keep].astype(float)
    n_units = int(pairable_units.sum())
    n = float(count.sum())
    if n_units == 0:
        return AlphaResult(None, "no unit has two or more values", 0, 0)
    m = c.m[unit].astype(float)  # per triple: values in its unit
    n_c = np.bincount(value, weights=count, minlength=len(c.value_labels))
    x = c.value_labels.astype(float) if level != "nominal" else None

    if level == "nominal":
        sq = np.bincount(unit, weights=count**2, minlength=len(c.m))[unit]
        first = np.r_[True, unit[1:] != unit[:-1]]  # one term per unit
        observed = float(np.sum(((m**2 - sq) / (m - 1))[first]))
        expected = n**2 - float(np.sum(n_c**2))
    elif level == "ratio":
        if np.any(x < 0):
            raise ValueError("ratio level needs non-negative values")
        observed = _within_unit_sum(unit, value, count, m, x)
        expected = _ratio_expected(n_c, x)
    else:
        if level == "ordinal":  # delta_ck = distance of midranks in the pooled values
            x = np.cumsum(n_c) - n_c / 2.0
        observed = _interval_observed(unit, value, count, m, x, len(c.m))
        mean = float(n_c @ x) / n
        expected = 2.0 * n * float(n_c @ (x - mean) ** 2)
    if expected <= 0 or np.isclose(expected, 0.0, atol=1e-12 * max(n * n, 1.0)):
        return AlphaResult(None, "all pairable values are identical (no expected disagreement)",
                           n_units, int(n))
    alpha = 1.0 - (n - 1.0) * observed / expected
    return AlphaResult(float(alpha), None, n_units, int(n))


def _interval_observed(unit, value, count, m, x, n_all_units):
    """sum_u 1/(m_u-1) sum_ck n_uc n_uk (x_c-x_k)^2 = sum_u 2 m_u/(m_u-1) sum_c n_uc (x_c-mean_u)^2."""
    s1 = np.bincount(unit, weights=count * x[value], minlength=n_all_units)
    mu = s1[unit] / m
    dev = np.bincount(unit, weights=count * (x[value] - mu) ** 2, minlength=n_all_units)
    mm = np.bincount(unit, weights=count, minlength=n_all_units)
    has = mm >= 2
    return float(np.sum(2.0 * mm[has] / (mm[has] - 1.0) * dev[has]))


def _ratio_delta2(a, b):
    s = a + b
    return np.where(s > 0, ((a - b) / np.where(s > 0, s, 1.0)) ** 2, 0.0)


def _within_unit_sum(unit, value, count, m, x):
    """Ratio observed term from the (value, value) pairs that co-occur in a unit."""
    left, right = within_unit_pairs(unit)
    d2 = _ratio_delta2(x[value[left]], x[value[right]])
    return float(np.sum(count[left] * count[right] * d2 / (m[left] - 1.0)))


def _ratio_expected(n_c, x, block=1024):
    total = 0.0
    for lo in range(0, len(x), block):
        d2 = _ratio_delta2(x[lo:lo + block, None], x[None, :])
        total += float(n_c[lo:lo + block] @ d2 @ n_c)
    return total


def within_unit_pairs(group):
    """Index pairs (i, j), i != j, of entries sharing a group; `group` must be sorted."""
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


def fleiss_kappa(units, coders, values):
    """(kappa, n_units) over units with the most common number n >= 2 of ratings.

    Ties for the most common n go to the larger n. kappa is None when no unit qualifies
    or P_e = 1.
    """
    c = tabulate(units, coders, values)
    sizes = c.m[c.m >= 2]
    if len(sizes) == 0:
        return None, 0
    freq = np.bincount(sizes)
    n = int(np.flatnonzero(freq == freq.max()).max())
    use = c.m == n
    keep = use[c.unit]
    n_units = int(use.sum())
    unit, value, count = c.unit[keep], c.value[keep], c.count[keep].astype(float)
    sq = np.bincount(unit, weights=count**2, minlength=len(c.m))[use]
    p_bar = float(np.mean((sq - n) / (n * (n - 1.0))))
    p_j = np.bincount(value, weights=count, minlength=len(c.value_labels)) / (n_units * n)
    p_e = float(np.sum(p_j**2))
    if np.isclose(p_e, 1.0):
        return None, n_units
    return float((p_bar - p_e) / (1.0 - p_e)), n_units


def percent_agreement(units, coders, values):
    """Mean over pairable units of the share of agreeing ordered coder pairs."""
    c = tabulate(units, coders, values)
    count = c.count.astype(float)
    agree = np.bincount(c.unit, weights=count * (count - 1.0), minlength=len(c.m))
    m = c.m.astype(float)
    has = m >= 2
    if not has.any():
        return None
    return float(np.mean(agree[has] / (m[has] * (m[has] - 1.0))))


def cohen_kappa(a_values, b_values):
    """Cohen's kappa of two paired label sequences; None if empty or P_e = 1."""
    a, b = list(a_values), list(b_values)
    if len(a) != len(b):
        raise ValueError(f"paired sequences differ in length ({len(a)} vs {len(b)})")
    if not a:
        return None
    _, codes = factorize(np.asarray(a + b))
    ca, cb = codes[: len(a)], codes[len(a):]
    return _kappa_by_group(np.zeros(len(a), np.int64), ca, cb, 1, int(codes.max()) + 1)[0]


def _kappa_by_group(group, va, vb, n_groups, n_vals):
    """Cohen's kappa per group id, vectorized; None where undefined."""
    n = np.bincount(group, minlength=n_groups).astype(float)
    agree = np.bincount(group, weights=(va == vb), minlength=n_groups)
    rk, rc = np.unique(group * n_vals + va, return_counts=True)
    ck, cc = np.unique(group * n_vals + vb, return_counts=True)
    shared, ri, ci = np.intersect1d(rk, ck, assume_unique=True, return_indices=True)
    p_e = np.bincount(shared // n_vals, weights=rc[ri] * cc[ci], minlength=n_groups)
    out = []
    for g in range(n_groups):
        if n[g] == 0:
            out.append(None)
            continue
        pe = p_e[g] / n[g] ** 2
        po = agree[g] / n[g]
        out.append(None if np.isclose(pe, 1.0) else float((po - pe) / (1.0 - pe)))
    return out


def pairwise_cohen_kappa(units, coders, values, min_shared=10):
    """{(coder_a, coder_b): kappa|None} for coder pairs (a < b) sharing >= min_shared units."""
    c = tabulate(units, coders, values)
    order = np.argsort(c.j_unit, kind="stable")
    left, right = within_unit_pairs(c.j_unit[order])
    left, right = order[left], order[right]
    keep = c.j_coder[left] < c.j_coder[right]
    left, right = left[keep], right[keep]
    n_coders = len(c.coder_labels)
    pair = c.j_coder[left].astype(np.int64) * n_coders + c.j_coder[right]
    pair_ids, group = np.unique(pair, return_inverse=True)
    shared = np.bincount(group, minlength=len(pair_ids))
    kappas = _kappa_by_group(group.ravel(), c.j_value[left], c.j_value[right],
                             len(pair_ids), max(len(c.value_labels), 1))
    labels = c.coder_labels.tolist()
    return {
        (labels[p // n_coders], labels[p % n_coders]): k
        for p, k, s in zip(pair_ids.tolist(), kappas, shared)
        if s >= min_shared
    }


def leave_one_out_agreement(units, coders, values):
    """{coder: share of their judgments equal to the other coders' strict majority}.

    Only units where the other coders have a strict majority count; None if there are none.
    """
    c = tabulate(units, coders, values)
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
    return {
        label: (float(n_agree[i] / n_def[i]) if n_def[i] else None)
        for i, label in enumerate(c.coder_labels.tolist())
    }


pairwise_kappa = pairwise_cohen_kappa  # the name statistics.md uses
