"""Implicit-personalization statistics (evaluation/personalization/ip_effect.py) against hand-worked values
and plain re-implementations of the documented procedures: label matching, Delta, the
paired bootstrap interval, the within-question permutation p (full enumeration)."""
import importlib.util
import itertools
from pathlib import Path

import numpy as np
import pytest

from evaluation.personalization.ip_effect import (
    MIXED,
    OTHER,
    cue_effect,
    delta_interval,
    label_of,
    label_scores,
    label_shifts,
    pair_effect,
    question_difference,
    sign_flip_p,
)

BENCH = Path(__file__).resolve().parents[2] / "bench" / "ip_ci_coverage.py"
FIVE_400 = {"report_rule": 0.91, "percentile": 0.8275}  # covered in 364 and 331 of 400 probes
EIGHT_400 = {"report_rule": 0.9325, "percentile": 0.885}  # 373 and 354 of 400
EXPECTED = {"us": ["soccer"], "uk": ["football", "association football"]}

# Six questions, three samples per cue, answers fixed per (question, cue). r = +1 when the
# answer is labelled uk (b1), -1 when us (b0), else 0; mean r under us vs under uk.
ANSWERS = {
    "q1": (["Soccer.", "soccer", "SOCCER!"], ["Football.", "football", "It's football"]),  # -1 vs 1: d = 2
    "q2": (["soccer", "football", "a ball game"], ["football", "Football", "soccer"]),  # 0 vs 1/3: d = 1/3
    "q3": (["football"] * 3, ["football"] * 3),  # 1 vs 1: d = 0
    "q4": (["no idea"] * 3, ["no idea", "football", "soccer or football"]),  # 0 vs 1/3 (mixed = 0): d = 1/3
    "q5": (["soccer"] * 3, ["soccer"] * 3),  # -1 vs -1: d = 0
    "q6": (["footballer", "football", "ball"], ["soccer"] * 3),  # 1/3 vs -1 ("footballer" is no match): d = -4/3
}
D = np.array([2, 1 / 3, 0, 1 / 3, 0, -4 / 3])


def scores(texts):
    return label_scores([label_of(t, EXPECTED) for t in texts], "us", "uk")


def test_label_matching_whole_word_case_and_other():
    assert [label_of(t, EXPECTED) for t in ("Soccer.", "SOCCER!", "It's Football", "soccer-mad kids")] == \
        ["us", "us", "uk", "us"]
    # whole words only: no match inside a longer word; neither cue -> other; both -> mixed
    assert [label_of(t, EXPECTED) for t in ("footballs", "footballer", "socceroos", "", "a ball")] == [OTHER] * 5
    assert label_of("soccer, or football in Britain", EXPECTED) == MIXED
    # a phrase matches across any whitespace and case; inside a longer match of another cue it does not count
    assert label_of("ASSOCIATION\n  football", EXPECTED) == "uk"
    assert label_of("American football", {"us": ["football"], "uk": ["American football"]}) == "uk"
    assert label_of("American football or football", {"us": ["football"], "uk": ["American football"]}) == MIXED
    # regex characters in an answer are literal
    assert label_of("call 911 now", {"us": ["911"], "uk": ["999"]}) == "us"
    assert label_of("it is 4/7/2025", {"us": ["7/4/2025"], "uk": ["4/7/2025"]}) == "uk"
    assert label_of("costs $5", {"us": ["$5"], "uk": ["£5"]}) == "us"


def test_delta_per_question_and_overall_hand_worked():
    rows = [question_difference(scores(us), scores(uk)) for us, uk in ANSWERS.values()]
    assert [d for _, _, d in rows] == pytest.approx(D.tolist())
    effect, table = pair_effect(list(ANSWERS), [scores(us) for us, _ in ANSWERS.values()],
                                [scores(uk) for _, uk in ANSWERS.values()])
    assert effect["delta"] == pytest.approx(2 / 9)  # (2 + 1/3 + 0 + 1/3 + 0 - 4/3) / 6
    assert (effect["n_questions"], effect["n_samples"], effect["unscored_samples"]) == (6, 36, 0)
    assert effect["mean_b0"] == pytest.approx((-1 + 0 + 1 + 0 - 1 + 1 / 3) / 6)
    assert effect["mean_b1"] == pytest.approx((1 + 1 / 3 + 1 + 1 / 3 - 1 - 1) / 6)
    assert [row["question"] for row in table] == list(ANSWERS) and table[1]["mean_b1"] == pytest.approx(1 / 3)
    # the two shifts: uk's share under uk minus under us (1, 1/3, 0, 1/3, 0, -1/3: mean 2/9), us's
    # share under us minus under uk (1, 0, 0, 0, 0, -1: mean 0); they add up to Delta
    labels = [([label_of(t, EXPECTED) for t in us], [label_of(t, EXPECTED) for t in uk]) for us, uk in ANSWERS.values()]
    shifts = label_shifts([a for a, _ in labels], [b for _, b in labels], "us", "uk")
    assert shifts == {"shift_b1": pytest.approx(2 / 9), "shift_b0": pytest.approx(0.0)}


def test_delta_interval_is_the_reports_rule_reimplemented_in_exact_thirds():
    """Issue 31 item 12: the report's interval rule, not a plain percentile interval. The
    documented draw: default_rng(0), 2,000 rows of 6 question indices; 3 d is an integer
    (6, 1, 0, 1, 0, -4), so each row's sum in thirds is exact and so are the ties with the
    estimate (2/9 = a sum of 4). G = (#below + #equal / 2 + 1/2) / 2001, z0 = Phi^-1(G),
    ze = sqrt(6/5) t_5(0.975); the bounds are the 100 Phi(2 z0 -+ ze) percentiles."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    thirds = np.rint(3 * D).astype(int)
    sums = thirds[np.random.default_rng(0).integers(0, len(D), size=(2000, len(D)))].sum(axis=1)
    g = (np.count_nonzero(sums < 4) + np.count_nonzero(sums == 4) / 2 + 0.5) / 2001
    z0, ze = norm.ppf(g), np.sqrt(6 / 5) * student_t.ppf(0.975, 5)
    expected = np.percentile(sums / 18, [100 * norm.cdf(2 * z0 - ze), 100 * norm.cdf(2 * z0 + ze)])
    interval = delta_interval(D)
    assert interval.ci95 == pytest.approx(expected.tolist(), abs=1e-12)
    assert (interval.n_clusters, interval.resamples, interval.dropped) == (6, 2000, 0)
    effect = cue_effect(D)
    assert effect["ci95"] == pytest.approx(expected.tolist(), abs=1e-12)
    assert effect["ci_method"] == ("bootstrap over questions (2000 resamples, seed 0; bias-corrected, "
                                   "expanded percentile)")
    plain = np.percentile(sums / 18, [2.5, 97.5])  # the replaced rule: narrower
    assert expected[0] < plain[0] and expected[1] > plain[1]
    assert delta_interval(D[:4]).ci95 is None  # fewer than 5 questions: no interval
    assert cue_effect(D[:4])["ci95_reason"] == "fewer than 5 questions"


def test_delta_interval_coverage_at_5_and_8_questions():
    """A small run of bench/ip_ci_coverage.py (400 simulated label-rule probes per size,
    true Delta known): the report's rule covers more often than the percentile rule it
    replaced, and at 8 questions comes within binomial noise of 95%. The bench's 2,000
    runs: 89.7% vs 82.3% at 5 questions, 93.1% vs 87.5% at 8 (docs/benchmarks.md)."""
    spec = importlib.util.spec_from_file_location("ip_ci_coverage", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    five, eight = bench.coverage(5, reps=400), bench.coverage(8, reps=400)
    assert five["report_rule"] - five["percentile"] >= 0.05
    assert eight["report_rule"] - eight["percentile"] >= 0.03
    assert eight["report_rule"] >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / 400)
    assert (five, eight) == (FIVE_400, EIGHT_400)  # seeded: the same probes every run


def test_permutation_p_by_full_enumeration_on_six_questions():
    """Swapping the cue labels of a question flips the sign of its d: all 2^6 patterns,
    two-sided. By hand, summing d in thirds (observed sum 4): the zeros do not matter; with
    +6 the 8 sums of ±6 ± 1 ± 1 ± 4 are 12, 4, 10, 2, 10, 2, 8, 0, five of them at least 4,
    and as many with -6: 10 of 16, p = 40/64 = 0.625."""
    observed = abs(D.mean())
    hits = sum(abs(sum(s * d for s, d in zip(signs, D)) / len(D)) >= observed - 1e-12
               for signs in itertools.product((1, -1), repeat=len(D)))
    p, method = sign_flip_p(D)
    assert p == hits / 64 == 0.625
    assert method == "exact: all 64 cue swaps of 6 questions"
    assert sign_flip_p([1.0] * 6)[0] == 2 / 64  # only the identity and the full swap reach |mean| = 1
    assert sign_flip_p([0.0, 0.0, 0.0])[0] == 1.0  # no difference: every pattern ties
    assert sign_flip_p([]) == (None, "no questions")


def test_monte_carlo_permutation_p_above_sixteen_questions():
    """Above 16 questions: 10,000 random sign patterns from default_rng(0) (row by row, as
    integers 0/1 mapped to -1/+1), p = (1 + hits) / (1 + 10,000)."""
    d = np.linspace(-0.2, 0.5, 20)
    rng = np.random.default_rng(0)
    signs = rng.integers(0, 2, (10_000, 20)) * 2.0 - 1.0
    hits = int(np.sum(np.abs(signs @ d) / 20 >= abs(d.mean()) - 1e-9))
    p, method = sign_flip_p(d)
    assert p == (1 + hits) / 10_001 and method.startswith("Monte Carlo: 10000 random cue swaps (seed 0)")
    assert 0 < p < 0.05


def test_unscored_samples_and_questions_left_out():
    effect, table = pair_effect(["a", "b", "c"], [[1.0, None], [None, None], [0.5]], [[2.0, 3.0], [1.0], [None]])
    assert [row["d"] for row in table] == [1.5, None, None]
    assert (effect["delta"], effect["n_questions"], effect["questions_left_out"]) == (1.5, 1, 2)
    assert (effect["n_samples"], effect["unscored_samples"]) == (3, 4)
    assert label_scores(["uk", None, "us", MIXED, "esl"], "us", "uk") == [1.0, None, -1.0, 0.0, 0.0]
