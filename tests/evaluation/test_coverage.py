"""Do the report's intervals and tests keep their promise on clustered data? (issue 24)

Seeded simulations of whole studies (statistics.md, "Clustered data"):

- similarity surveys with an item random effect: 40 items x 4 pairs, 3 annotators rate every
  pair 1-6 (rating = round(3.5 + item effect + pair effect + noise), clipped), and a metric
  that shares the item effect. The 95% interval of the survey's alpha over (item, pair)
  units (bootstrap over items) and of Pearson's r between the metric and the pair's mean
  rating (bootstrap over items) must cover the population value (from 100,000 simulated
  items) in 95% +- 4% of 300 studies. The unit bootstrap this replaced is measured beside
  them: it ignores the clusters and covers less.
- position bias with personal habits and no study-wide bias: 12 annotators x 20 screens,
  each annotator picking the first-shown option with their own probability ~ Beta(2, 2)
  (mean 0.5). The study-level t-test over annotators must reject at most 7% of 1,000 null
  studies at 0.05 (the pooled binomial test over screens rejects far more), and with no
  habits at all (every probability 0.5) the Holm-adjusted per-annotator p-values flag
  someone in at most 5% + noise of the studies (uncorrected: about 1 - 0.95^12 = 46%).

The measured rates are in docs/statistics.md ("Coverage, measured").
"""
import time

import numpy as np
import pytest

from evaluation.agreement import krippendorff_alpha
from evaluation.alpha_ci import krippendorff_alpha_ci95
from evaluation.correlation import correlations
from evaluation.position_bias import annotator_test, binomial_p_half, per_annotator
from evaluation.rank_bootstrap import warm_up

pytestmark = pytest.mark.slow
ITEMS, PAIRS, RATERS = 40, 4, 3
ITEM_SD, PAIR_SD, NOISE_SD = 0.9, 0.5, 0.8
STUDIES = 300


def survey(rng: np.random.Generator, n_items: int) -> dict[str, np.ndarray]:
    """One simulated similarity survey: long-format ratings over (item, pair) units with
    each row's item, and per (item, pair) the metric and the mean rating."""
    item_effect = rng.normal(0, ITEM_SD, n_items)
    pair_effect = rng.normal(0, PAIR_SD, (n_items, PAIRS))
    noise = rng.normal(0, NOISE_SD, (n_items, PAIRS, RATERS))
    ratings = np.clip(np.rint(3.5 + item_effect[:, None, None] + pair_effect[:, :, None] + noise), 1, 6)
    metric = 0.6 * item_effect[:, None] + rng.normal(0, 0.6, (n_items, PAIRS))
    return {"unit": np.repeat(np.arange(n_items * PAIRS), RATERS), "coder": np.tile(np.arange(RATERS),
                                                                                    n_items * PAIRS),
            "rating": ratings.ravel(), "item": np.repeat(np.arange(n_items), PAIRS * RATERS),
            "metric": metric.ravel(), "mean_rating": ratings.mean(axis=2).ravel(),
            "pair_item": np.repeat(np.arange(n_items), PAIRS)}


def covers(ci: list[float] | None, truth: float) -> bool:
    return ci is not None and ci[0] <= truth <= ci[1]


def test_similarity_alpha_and_correlation_intervals_cover_95_percent():
    warm_up()
    start = time.perf_counter()
    rng = np.random.default_rng(2026)
    population = survey(rng, 100_000)
    alpha_true = krippendorff_alpha(population["unit"], population["coder"], population["rating"], "interval").value
    r_true = float(np.corrcoef(population["metric"], population["mean_rating"])[0, 1])
    hits = {"alpha": 0, "pearson": 0, "alpha, unit bootstrap": 0}
    for _ in range(STUDIES):
        s = survey(rng, ITEMS)
        clustered = krippendorff_alpha_ci95(s["unit"], s["coder"], s["rating"], "interval", clusters=s["item"])
        assert clustered.n_clusters == ITEMS and clustered.clustered
        hits["alpha"] += covers(clustered.ci95, alpha_true)
        hits["alpha, unit bootstrap"] += covers(
            krippendorff_alpha_ci95(s["unit"], s["coder"], s["rating"], "interval").ci95, alpha_true)
        pearson = correlations(s["metric"], s["mean_rating"], clusters=s["pair_item"])["pearson"]
        assert pearson["n_clusters"] == ITEMS
        hits["pearson"] += covers(pearson["ci95"], r_true)
    rates = {k: v / STUDIES for k, v in hits.items()}
    print(f"\nalpha = {alpha_true:.4f}, r = {r_true:.4f}; coverage over {STUDIES} studies: {rates}; "
          f"{time.perf_counter() - start:.1f} s")
    assert 0.91 <= rates["alpha"] <= 0.99
    assert 0.91 <= rates["pearson"] <= 0.99
    assert rates["alpha, unit bootstrap"] < rates["alpha"]  # ignoring the items undercovers


def test_position_bias_test_over_annotators_keeps_its_level_with_habits():
    rng = np.random.default_rng(24)
    annotators, screens, studies = 12, 20, 1000
    rejected = pooled_rejected = flagged = flagged_raw = 0
    votes = np.full(annotators, screens)
    for _ in range(studies):
        habits = rng.beta(2, 2, annotators)  # personal habits, mean 0.5: no study-wide bias
        firsts = rng.binomial(screens, habits)
        rejected += (annotator_test(firsts, votes)["p_value"] or 1.0) < 0.05
        pooled_rejected += binomial_p_half(np.array([firsts.sum()]), np.array([votes.sum()]))[0] < 0.05
        fair = rng.binomial(screens, 0.5, annotators)  # no habits: any flag is a false alarm
        raw, adjusted = per_annotator(fair, votes)
        flagged += bool((adjusted < 0.05).any())
        flagged_raw += bool((raw < 0.05).any())
    print(f"\nnull studies rejected: t-test over annotators {rejected / studies:.3f}, pooled binomial over screens "
          f"{pooled_rejected / studies:.3f}; someone flagged with no habits: Holm {flagged / studies:.3f}, "
          f"uncorrected {flagged_raw / studies:.3f}")
    assert rejected / studies <= 0.07
    assert pooled_rejected / studies > 0.15  # what the screen-level test did
    assert flagged / studies <= 0.065
    assert flagged_raw / studies > 0.15
