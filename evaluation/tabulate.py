"""Long-format judgments (unit, coder, value) -> integer codes and per-unit value counts.

Every agreement statistic starts here, so this is the one place that validates input,
drops missing values, reads numbers at numeric levels, rejects a coder judging a unit
twice, and sorts distinct values once. Memory stays linear in the number of judgments.

Missing values (statistics.md): None, NaN and the texts "", "nan", "NA" and "null" (any
case, surrounding spaces ignored) are missing for every statistic at every level, never a
category. At numeric levels values are compared as numbers, so "1", "1.0" and " 1" are one
rating.
"""
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MISSING_TEXTS = frozenset({"", "nan", "na", "null"})


def is_missing(v: Any) -> bool:
    """True for None, NaN and the missing-value texts.

    >>> [is_missing(v) for v in (None, float("nan"), " NA ", "null", "0", 0)]
    [True, True, True, True, False, False]
    """
    if v is None:
        return True
    if isinstance(v, float | np.floating):
        return bool(v != v)
    if isinstance(v, str):
        return v.strip().lower() in MISSING_TEXTS
    return False


class NotANumber(ValueError):
    """A value that is not a number at a numeric level; `index` is its position."""

    def __init__(self, index: int, value: Any) -> None:
        super().__init__(f"value {value!r} is not a number")
        self.index = index
        self.value = value


def as_numbers(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Float array of `values`: missing values become NaN, anything else must be a number
    (NotANumber names the first that is not).

    >>> as_numbers(["1", " 1.0", "", "NA", 2]).tolist()
    [1.0, 1.0, nan, nan, 2.0]
    """
    arr = np.asarray(values)
    if arr.dtype.kind in "biuf":
        return arr.astype(float)
    out = np.empty(len(arr), dtype=float)
    for i, v in enumerate(arr.tolist()):
        if is_missing(v):
            out[i] = np.nan
            continue
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            raise NotANumber(i, v) from None
        if out[i] != out[i]:
            out[i] = np.nan
    return out


def distinct_sorted(arr: np.ndarray) -> np.ndarray:
    """Sorted distinct values of a numeric array. np.unique without return flags uses a
    hash table in NumPy 2.x that was ~60x slower than sorting on 1M int64 keys."""
    arr = np.sort(np.asarray(arr).ravel())
    if arr.size == 0:
        return arr
    return arr[np.r_[True, arr[1:] != arr[:-1]]]


def factorize(x: Sequence[Any] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(labels, codes): sorted distinct labels of x and each element's index into them.

    >>> labels, codes = factorize(["b", "a", "b"])
    >>> labels.tolist(), codes.tolist()
    (['a', 'b'], [1, 0, 1])
    """
    arr = np.asarray(x)
    if arr.dtype == object:
        try:
            labels, codes = np.unique(arr, return_inverse=True)
        except TypeError:  # mixed types (e.g. int and str) cannot be sorted together
            labels, codes = np.unique(arr.astype(str), return_inverse=True)
        return labels, codes.ravel()
    if arr.dtype.kind in "iu" and arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if hi - lo <= 4 * arr.size + 1024:  # small integer range: counting, no sort
            shifted = arr.astype(np.int64) - lo
            present = np.bincount(shifted, minlength=hi - lo + 1) > 0
            remap = np.cumsum(present) - 1
            return np.flatnonzero(present) + lo, remap[shifted]
    labels, codes = np.unique(arr, return_inverse=True)
    return labels, codes.ravel()


@dataclass(frozen=True)
class Counts:
    """Per-unit value counts as sparse triples sorted by unit, then by value.

    unit_labels[k], value_labels[v]: original labels. unit[i], value[i], count[i]: unit
    `unit[i]` holds value `value[i]` `count[i]` times. m[u]: values of unit u.
    j_unit, j_coder, j_value: the codes of each kept judgment.
    """

    unit_labels: np.ndarray
    value_labels: np.ndarray
    unit: np.ndarray
    value: np.ndarray
    count: np.ndarray
    m: np.ndarray
    coder_labels: np.ndarray
    j_unit: np.ndarray
    j_coder: np.ndarray
    j_value: np.ndarray

    @property
    def n_coders(self) -> int:
        return len(self.coder_labels)


def tabulate(units: Sequence[Any] | np.ndarray, coders: Sequence[Any] | np.ndarray,
             values: Sequence[Any] | np.ndarray, numeric: bool = False, check_coders: bool = True) -> Counts:
    """Validate and count long-format judgments; see `Counts`. numeric=True compares the
    values as numbers (NotANumber, a ValueError, for a value that is not one);
    check_coders=False skips the one-value-per-coder check for callers whose coders are
    distinct by construction (a sort of every (unit, coder) pair saved).

    >>> c = tabulate(["u1", "u1", "u2"], ["a", "b", "a"], ["1", "1.0", "NA"], numeric=True)
    >>> c.unit_labels.tolist(), c.value_labels.tolist(), c.count.tolist(), c.m.tolist()
    (['u1'], [1.0], [2], [2])
    """
    units = np.asarray(units)
    values_arr = np.asarray(values, dtype=object if _has_none(values) else None)
    coders = np.asarray(coders)
    if not (len(units) == len(coders) == len(values_arr)):
        raise ValueError(
            f"units, coders and values differ in length "
            f"({len(units)}, {len(coders)}, {len(values_arr)})"
        )
    if numeric:
        values_arr = as_numbers(values_arr)
    keep = _present_mask(values_arr)
    if not keep.all():
        units, coders, values_arr = units[keep], coders[keep], values_arr[keep]
    unit_labels, ucode = factorize(units)
    coder_labels, ccode = factorize(coders)
    value_labels, vcode = factorize(values_arr)
    n_units, n_coders, n_vals = len(unit_labels), len(coder_labels), len(value_labels)
    if len(ucode) and check_coders:
        pair = ucode.astype(np.int64) * n_coders + ccode
        if n_units * n_coders <= 8 * len(pair) + 4096:
            repeated = np.bincount(pair).max() > 1
        else:
            repeated = len(distinct_sorted(pair)) != len(pair)
        if repeated:
            raise ValueError("a coder has more than one value for the same unit")
    key = ucode.astype(np.int64) * max(n_vals, 1) + vcode
    if n_units * max(n_vals, 1) <= 8 * len(key) + 4096:
        dense = np.bincount(key, minlength=n_units * max(n_vals, 1))
        flat = np.flatnonzero(dense)
        count = dense[flat]
    else:
        flat, count = np.unique(key, return_counts=True)
    unit = flat // max(n_vals, 1)
    value = flat % max(n_vals, 1)
    m = np.bincount(unit, weights=count, minlength=n_units).astype(np.int64)
    return Counts(unit_labels, value_labels, unit, value, count, m,
                  coder_labels, ucode, ccode, vcode)


def _has_none(x: Sequence[Any] | np.ndarray) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype == object
    return any(v is None for v in x)


def _present_mask(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "f":
        return ~np.isnan(values)
    if values.dtype == object:
        return np.fromiter((not is_missing(v) for v in values), bool, len(values))
    if values.dtype.kind == "U":
        return ~np.isin(np.char.lower(np.char.strip(values)), list(MISSING_TEXTS))
    return np.ones(len(values), dtype=bool)


def _top_three_dense(counts: Counts, n_units: int, n_vals: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """top_three for a few distinct values: a units x values count matrix, each row sorted
    by count descending (stable: ties keep the lower value first, as the sparse sort does)."""
    dense = np.zeros((n_units, n_vals), dtype=np.int64)
    dense[counts.unit, counts.value] = counts.count
    order = np.argsort(-dense, axis=1, kind="stable")
    out = []
    for offset in range(3):
        if offset >= n_vals:
            out.append((np.full(n_units, -1, dtype=np.int64), np.zeros(n_units, dtype=np.int64)))
            continue
        c = np.take_along_axis(dense, order[:, offset:offset + 1], axis=1)[:, 0]
        out.append((np.where(c > 0, order[:, offset], -1), c))
    return out[0][0], out[0][1], out[1][0], out[1][1], out[2][1]


def top_three(counts: Counts) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per unit: (top value, top count, 2nd value, 2nd count, 3rd count); -1/0 if absent.

    Sorting the triples by count descending inside each unit puts these first.
    """
    n_units, n_vals = len(counts.unit_labels), len(counts.value_labels)
    if 0 < n_vals <= 16 and n_units * n_vals <= 8 * len(counts.count) + 4096:
        return _top_three_dense(counts, n_units, n_vals)
    order = np.lexsort((-counts.count, counts.unit))
    unit, value, count = counts.unit[order], counts.value[order], counts.count[order]
    start = np.searchsorted(unit, np.arange(n_units))
    run = np.bincount(unit, minlength=n_units)
    out = []
    for offset in range(3):
        has = run > offset
        idx = np.where(has, start + offset, 0)
        c = np.where(has, count[idx] if len(count) else 0, 0)
        out.append((np.where(has, value[idx] if len(value) else -1, -1), c))
    return out[0][0], out[0][1], out[1][0], out[1][1], out[2][1]
