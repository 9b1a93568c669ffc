"""Implicit-personalization probes (Jin et al., 2024): does a model change its answer when
only the user-background cue of a prompt changes, the question held fixed?

Definitions (docs/runtime.md, "Implicit personalization probes"; statistics in
docs/statistics.md):
- Each question q is asked under cue b0 and under cue b1, n samples each. A response y
  gets a score r(y): for the `label` rule r = +1 when its label is b1 (it gives b1's
  expected answer and no other cue's), -1 when it is b0, else 0 (`mixed`, `other`, a third
  cue's answer); for the `metric` rule r = the metric's score. Unscored responses (None: an
  empty answer, a judge answer without a number) are left out of the means and counted.
- With labels, d_q = [share of b1's answer under b1 - under b0] + [share of b0's answer
  under b0 - under b1]: the two shifts toward the asker's background (`label_shifts`), so
  Delta runs from -2 to 2, does not depend on which cue is called b0, and counts a model
  that stops giving b0's answer under b1 as much as one that starts giving b1's.
- d_q = mean r(y | q, b1) - mean r(y | q, b0) over q's scored samples. A question with no
  scored sample under one of the two cues is left out of that pair (counted).
- Delta = the mean of d_q over questions: every question weighs the same.
- ci95: the report's interval rule (`bootstrap.bootstrap_interval`: bias-corrected,
  expanded percentile) over 2,000 resamples of the questions with replacement
  (`bootstrap.cluster_counts(Q, 2000, seed 0)`, i.e. `default_rng(0).integers(0, Q, (2000,
  Q))`), Delta of each; `ci_method` says so. None below 5 questions (statistics.md: no
  interval from fewer than 5 clusters). A plain percentile interval here covered 82.5% at
  5 questions and 89% at 8 (issue 31; bench/ip_ci_coverage.py).
- p_value: within-question permutation test. Under "the cue changes nothing" the two cue
  labels of a question are exchangeable, so swapping them (d_q -> -d_q) is as likely as
  not; p = the share of the 2^Q swap patterns whose |Delta| is at least the observed one
  (two-sided). Exact enumeration for Q <= 16; above that 10,000 random patterns
  (default_rng(0)) and p = (1 + hits) / (1 + 10,000), never 0.

Labels: `label_of(text, expected)` matches every expected answer of every cue as a whole
word or phrase, case-insensitive; a match inside a longer match of another cue's answer
does not count ("American football" is not also "football"). One cue matched -> that
cue; several -> MIXED; none -> OTHER.
"""
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ..bootstrap import Interval, bootstrap_interval, bootstrap_method, cluster_counts

OTHER = "other"  # the response gives no cue's expected answer
MIXED = "mixed"  # it gives the expected answers of two or more cues
RESAMPLES = 2000
SEED = 0
MIN_QUESTIONS_FOR_CI = 5
EXACT_UP_TO = 16  # questions: 2^16 = 65,536 swap patterns, enumerated
PERMUTATION_DRAWS = 10_000
CI_METHOD = bootstrap_method("questions", RESAMPLES, SEED)


@lru_cache(maxsize=4096)
def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    words = phrase.split()
    return re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)", re.IGNORECASE)


def phrase_spans(text: str, phrase: str) -> list[tuple[int, int]]:
    """(start, end) of every whole-word, case-insensitive occurrence of `phrase` in `text`
    (its words separated by any whitespace).

    >>> phrase_spans("Football, not FOOTBALLS; a football.", "football")
    [(0, 8), (27, 35)]
    """
    if not phrase.strip():
        return []
    return [m.span() for m in _phrase_pattern(phrase).finditer(text)]


def label_of(text: str, expected: Mapping[str, Iterable[str]]) -> str:
    """Which cue's expected answer `text` gives: that cue, MIXED or OTHER.

    >>> expected = {"us": ["soccer"], "uk": ["football"]}
    >>> [label_of(t, expected) for t in ("Soccer!", "football", "soccer or football", "footballs")]
    ['us', 'uk', 'mixed', 'other']
    >>> label_of("American football.", {"us": ["football"], "uk": ["American football"]})
    'uk'
    """
    spans = [(start, end, cue) for cue, answers in expected.items() for answer in answers
             for start, end in phrase_spans(text, answer)]
    found = {cue for start, end, cue in spans
             if not any(c != cue and s <= start and end <= e and (e - s) > (end - start) for s, e, c in spans)}
    if not found:
        return OTHER
    if len(found) > 1:
        return MIXED
    return found.pop()


def question_difference(r0: Sequence[float | None], r1: Sequence[float | None]
                        ) -> tuple[float | None, float | None, float | None]:
    """(mean r under b0, mean r under b1, d = the second minus the first) over the scored
    samples; a side without any gives None (and d None).

    >>> question_difference([0, 0, 1], [1, 1, None])
    (0.3333333333333333, 1.0, 0.6666666666666667)
    """
    def mean(values: Sequence[float | None]) -> float | None:
        kept = [float(v) for v in values if v is not None and np.isfinite(v)]
        return sum(kept) / len(kept) if kept else None

    m0, m1 = mean(r0), mean(r1)
    return m0, m1, (None if m0 is None or m1 is None else m1 - m0)


def delta_interval(d: Sequence[float] | np.ndarray, resamples: int = RESAMPLES, seed: int = SEED) -> Interval:
    """The report's bootstrap interval of Delta = mean(d), resampling questions (module
    docstring); none below MIN_QUESTIONS_FOR_CI questions (its `reason` says why)."""
    d = np.asarray(d, dtype=float)
    if len(d) < MIN_QUESTIONS_FOR_CI:
        return Interval(None, len(d), 0, 0, f"fewer than {MIN_QUESTIONS_FOR_CI} questions")
    samples = np.concatenate([counts @ d / len(d) for counts in cluster_counts(len(d), resamples, seed)])
    return bootstrap_interval(samples, float(d.mean()), len(d))


def _hits(d: np.ndarray, signs: np.ndarray, observed: float) -> int:
    """Sign patterns (rows of +1/-1) whose |mean| reaches the observed one (with a
    relative tolerance for float rounding: an equal statistic must count)."""
    stats = np.abs(signs @ d) / len(d)
    return int(np.count_nonzero(stats >= observed - 1e-9 * max(1.0, observed)))


def sign_flip_p(d: Sequence[float] | np.ndarray, exact_up_to: int = EXACT_UP_TO,
                draws: int = PERMUTATION_DRAWS, seed: int = SEED) -> tuple[float | None, str]:
    """(two-sided p of the within-question permutation test, how it was computed).

    >>> sign_flip_p([1.0, 1.0])
    (0.5, 'exact: all 4 cue swaps of 2 questions')
    """
    d = np.asarray(d, dtype=float)
    q = len(d)
    if q == 0:
        return None, "no questions"
    observed = abs(float(d.mean()))
    if q <= exact_up_to:  # row k: question j swapped when bit j of k is set
        signs = 1.0 - 2.0 * ((np.arange(1 << q)[:, None] >> np.arange(q)) & 1)
        return _hits(d, signs, observed) / len(signs), f"exact: all {len(signs)} cue swaps of {q} questions"
    rng = np.random.default_rng(seed)
    hits = 0
    block = max(1, (1 << 20) // q)
    done = 0
    while done < draws:
        k = min(block, draws - done)
        hits += _hits(d, rng.integers(0, 2, (k, q)) * 2.0 - 1.0, observed)
        done += k
    method = f"Monte Carlo: {draws} random cue swaps (seed {seed}), p = (1 + hits) / (1 + {draws})"
    return (1 + hits) / (1 + draws), method


def cue_effect(d: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """Delta with its interval and permutation p from the per-question differences (in
    question order: the bootstrap draws depend on it)."""
    d = np.asarray(d, dtype=float)
    p, p_method = sign_flip_p(d)
    interval = delta_interval(d)
    return {"delta": float(d.mean()) if len(d) else None, "ci95": interval.ci95, "ci_method": CI_METHOD,
            "ci95_reason": interval.reason,
            "n_clusters": len(d), "p_value": p, "p_method": p_method, "n_questions": len(d)}


def label_counts(labels: Iterable[str]) -> dict[str, int]:
    """{label: count}, sorted by label (OTHER and MIXED included when they occur).

    >>> label_counts(["uk", "other", "uk"])
    {'other': 1, 'uk': 2}
    """
    out: dict[str, int] = {}
    for label in labels:
        out[label] = out.get(label, 0) + 1
    return dict(sorted(out.items()))


def label_scores(labels: Sequence[str | None], b0: str, b1: str) -> list[float | None]:
    """r of the label rule for the pair (b0, b1): +1 for a response labelled b1, -1 for b0,
    0 for any other label; None (unscored) stays None.

    >>> label_scores(["uk", None, "us", MIXED, OTHER], "us", "uk")
    [1.0, None, -1.0, 0.0, 0.0]
    """
    return [None if label is None else float(label == b1) - float(label == b0) for label in labels]


def _share(labels: Sequence[str | None], cue: str) -> float | None:
    kept = [label for label in labels if label is not None]
    return sum(label == cue for label in kept) / len(kept) if kept else None


def label_shifts(l0: Sequence[Sequence[str | None]], l1: Sequence[Sequence[str | None]], b0: str, b1: str
                 ) -> dict[str, float | None]:
    """The two parts of the label rule's Delta, averaged over the questions labelled under
    both cues (l0[i], l1[i]: question i's labels under b0 and b1): `shift_b1` = share of
    b1's answer under b1 minus under b0, `shift_b0` = share of b0's answer under b0 minus
    under b1. Delta = shift_b1 + shift_b0.

    >>> label_shifts([["us", "us"], ["us", "uk"]], [["us", "uk"], ["uk", "uk"]], "us", "uk")
    {'shift_b1': 0.5, 'shift_b0': 0.5}
    """
    b1_shifts, b0_shifts = [], []
    for s0, s1 in zip(l0, l1):
        b1_under_b0, b1_under_b1 = _share(s0, b1), _share(s1, b1)
        b0_under_b0, b0_under_b1 = _share(s0, b0), _share(s1, b0)
        if b1_under_b0 is None or b1_under_b1 is None or b0_under_b0 is None or b0_under_b1 is None:
            continue  # no labelled answer under one of the cues
        b1_shifts.append(b1_under_b1 - b1_under_b0)
        b0_shifts.append(b0_under_b0 - b0_under_b1)
    return {"shift_b1": float(np.mean(b1_shifts)) if b1_shifts else None,
            "shift_b0": float(np.mean(b0_shifts)) if b0_shifts else None}


def pair_effect(questions: Sequence[str], r0: Sequence[Sequence[float | None]],
                r1: Sequence[Sequence[float | None]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(effect, per-question rows) of one (model, cue pair, rule) over its questions.
    `r0[i]`, `r1[i]`: the scores of question i's samples under b0 and b1. A question
    without a scored sample on a side is listed (d None) but left out of Delta;
    `n_samples` counts the scored responses of the questions kept."""
    rows, kept = [], []
    n_samples = unscored = 0
    for question, s0, s1 in zip(questions, r0, r1):
        m0, m1, d = question_difference(s0, s1)
        scored0 = sum(v is not None for v in s0)
        scored1 = sum(v is not None for v in s1)
        unscored += len(s0) - scored0 + len(s1) - scored1
        rows.append({"question": question, "n_b0": scored0, "n_b1": scored1, "mean_b0": m0, "mean_b1": m1, "d": d})
        if d is not None:
            kept.append(d)
            n_samples += scored0 + scored1
    effect = cue_effect(kept)
    scored_questions = [row for row in rows if row["d"] is not None]
    effect.update({
        "mean_b0": float(np.mean([row["mean_b0"] for row in scored_questions])) if scored_questions else None,
        "mean_b1": float(np.mean([row["mean_b1"] for row in scored_questions])) if scored_questions else None,
        "n_samples": n_samples, "unscored_samples": unscored, "questions_left_out": len(rows) - len(kept)})
    return effect, rows
