"""Test-retest of annotators (statistics.md, "Test-retest"; studies.md "Repeats for
test-retest"): a repeat re-shows an item the annotator judged, with the shown order
reversed; the report compares each repeat's answer with the first one.

Input: one row per repeat: the annotator, the first answer and the repeat's answer, both
in the study's terms (systems, scale values), not screen positions: the caller maps a
pair's A/B back to systems, so a swapped screen with the same system chosen is the same
answer. Answers of the several-outputs kinds go through `answer_key` first.

- `flip_rate`: the share of repeats whose answer differs from the first (N outputs: the
  best, the worst or the order differs, i.e. the whole answer).
- Agreement between first and repeat: Cohen's kappa (evaluation.agreement.cohen_kappa;
  nominal answers, N-output answers each one category) or Krippendorff's alpha at the
  scale's level (evaluation.agreement.krippendorff_alpha; ordinal or interval; each repeat
  a unit with two values).
- Per annotator with >= 5 repeats (MIN_REPEATS): n_pairs, flip_rate, the agreement value,
  and a quality flag when flip_rate > the study's `quality.max_flip_rate` (none by default;
  `annotator_quality.flag_reasons` reads it as the other thresholds).
- Over the study (every repeat): n_pairs, n_annotators, flip_rate and the agreement, each
  with an interval over ANNOTATORS (the repeats nest in them): the report's bootstrap
  (evaluation.bootstrap: 2,000 resamples of the annotators, seed 0, bias-corrected and
  expanded; none from fewer than 5 annotators). flip_rate: `ratio_samples` of flips over
  repeats per annotator; kappa: recomputed from the drawn annotators' summed first x
  repeat tables; alpha: evaluation.alpha_ci with the annotators as clusters (alpha's own
  rule: 1,000 resamples).
"""
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evaluation.agreement import cohen_kappa, krippendorff_alpha
from evaluation.alpha_ci import krippendorff_alpha_ci95
from evaluation.annotator_quality import flip_reason
from evaluation.bootstrap import (
    RESAMPLES,
    bootstrap_interval,
    bootstrap_method,
    cluster_counts,
    interval_refusal,
    ratio_samples,
)
from evaluation.tabulate import factorize

MIN_REPEATS = 5
LEVELS = ("nominal", "ordinal", "interval")


def answer_key(answer: Any) -> Any:
    """A hashable form of an answer: a best-worst answer {"best", "worst"} as (best,
    worst); an order (list of candidates or of groups) as a tuple of tuples (groups);
    anything else as it is.

    >>> answer_key({"best": "s1", "worst": "s3"}), answer_key(["s2", ["s1", "s3"]])
    (('s1', 's3'), (('s2',), ('s1', 's3')))
    """
    if isinstance(answer, Mapping):
        return answer.get("best"), answer.get("worst")
    if isinstance(answer, Sequence) and not isinstance(answer, (str, bytes)):
        return tuple(tuple(g) if isinstance(g, Sequence) and not isinstance(g, (str, bytes)) else (g,)
                     for g in answer)
    return answer


def _agreement(first: list[Any], repeat: list[Any], level: str) -> float | None:
    if level == "nominal":
        return cohen_kappa([str(v) for v in first], [str(v) for v in repeat])
    units = np.repeat(np.arange(len(first)), 2)
    coders = np.tile(np.array(["first", "repeat"]), len(first))
    values = np.ravel(np.column_stack([np.asarray(first, dtype=float), np.asarray(repeat, dtype=float)]))
    return krippendorff_alpha(units, coders, values, level).value


def retest(annotators: Sequence[Any], first: Sequence[Any], repeat: Sequence[Any], level: str = "nominal",
           max_flip_rate: float | None = None, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """{"retest": {"n_pairs", "n_annotators", "flip_rate", "flip_rate_ci95", "agreement":
    {"statistic", "level", "value", "ci95", ...}, "ci_method", ...}, "annotators": {name:
    {"n_pairs", "flip_rate", "agreement", "flag"}}} (module docstring)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if not len(annotators) == len(first) == len(repeat):
        raise ValueError("annotators, first and repeat answers differ in length")
    first_keys, repeat_keys = [answer_key(v) for v in first], [answer_key(v) for v in repeat]
    names, who = factorize(np.asarray([str(a) for a in annotators], dtype=object))
    who = np.asarray(who, dtype=np.int64)
    n_ann = len(names)
    flips = np.array([a != b for a, b in zip(first_keys, repeat_keys)], dtype=float)
    statistic = "cohen_kappa" if level == "nominal" else "krippendorff_alpha"
    per_annotator = {}
    for k, name in enumerate(names.tolist()):
        rows = np.flatnonzero(who == k)
        if len(rows) < MIN_REPEATS:
            continue
        rate = float(flips[rows].mean())
        per_annotator[str(name)] = {
            "n_pairs": int(len(rows)), "flip_rate": rate, "agreement": _agreement(
                [first_keys[j] for j in rows], [repeat_keys[j] for j in rows], level),
            "flag": flip_reason(rate, max_flip_rate)}
    study: dict[str, Any] = {"n_pairs": int(len(flips)), "n_annotators": n_ann, "min_repeats": MIN_REPEATS,
                             "max_flip_rate": max_flip_rate, "flip_rate": None, "flip_rate_ci95": None,
                             "ci_method": bootstrap_method("annotators", resamples, seed)}
    agreement: dict[str, Any] = {"statistic": statistic, "level": level, "value": None, "ci95": None}
    study["agreement"] = agreement
    if not len(flips):
        study["reason"] = "no repeats"
        return {"retest": study, "annotators": per_annotator}
    study["flip_rate"] = float(flips.mean())
    refusal = interval_refusal(n_ann)
    if refusal is None:
        samples = ratio_samples(np.bincount(who, weights=flips, minlength=n_ann)[None, :],
                                np.bincount(who, minlength=n_ann).astype(float)[None, :], resamples, seed)[:, 0]
        interval = bootstrap_interval(samples, study["flip_rate"], n_ann)
        study["flip_rate_ci95"], refusal = interval.ci95, interval.reason
    if refusal is not None:
        study["flip_rate_ci_reason"] = refusal
    agreement["value"] = _agreement(first_keys, repeat_keys, level)
    if level == "nominal":
        agreement["ci_method"] = study["ci_method"]
        ci, reason = _kappa_interval(who, n_ann, first_keys, repeat_keys, agreement["value"], resamples, seed)
    else:
        units = np.repeat(np.arange(len(flips)), 2)
        coders = np.tile(np.array(["first", "repeat"]), len(flips))
        values = np.ravel(np.column_stack([np.asarray(first_keys, dtype=float), np.asarray(repeat_keys, dtype=float)]))
        alpha_ci = krippendorff_alpha_ci95(units, coders, values, level, seed=seed, clusters=np.repeat(who, 2))
        agreement["ci_method"] = bootstrap_method("annotators", alpha_ci.resamples, seed)
        ci, reason = alpha_ci.ci95, alpha_ci.reason
    agreement["ci95"] = ci
    if ci is None:
        agreement["ci_reason"] = reason
    return {"retest": study, "annotators": per_annotator}


def _kappa_interval(who: np.ndarray, n_ann: int, first: list[Any], repeat: list[Any], estimate: float | None,
                    resamples: int, seed: int) -> tuple[list[float] | None, str | None]:
    """The bootstrap interval over annotators of Cohen's kappa: each resample sums the drawn
    annotators' first x repeat tables and recomputes kappa (undefined: P_e = 1, dropped)."""
    refusal = interval_refusal(n_ann)
    if refusal is not None:
        return None, refusal
    _, codes = factorize(np.asarray([str(v) for v in first + repeat], dtype=object))
    codes = np.asarray(codes, dtype=np.int64)
    n_labels = int(codes.max()) + 1
    a, b = codes[: len(first)], codes[len(first):]
    tables = np.bincount((who * n_labels + a) * n_labels + b,
                         minlength=n_ann * n_labels * n_labels).reshape(n_ann, n_labels * n_labels).astype(float)
    samples = []
    for w in cluster_counts(n_ann, resamples, seed):
        t = (w @ tables).reshape(-1, n_labels, n_labels)
        n = t.sum(axis=(1, 2))
        p_o = np.trace(t, axis1=1, axis2=2) / n
        p_e = (t.sum(axis=2) * t.sum(axis=1)).sum(axis=1) / n**2
        with np.errstate(invalid="ignore", divide="ignore"):
            samples.append(np.where(np.isclose(p_e, 1.0), np.nan, (p_o - p_e) / (1.0 - p_e)))
    interval = bootstrap_interval(np.concatenate(samples), estimate, n_ann)
    return interval.ci95, interval.reason
