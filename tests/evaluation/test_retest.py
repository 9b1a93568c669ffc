"""Test-retest (statistics.md, "Test-retest"; issue 33): flip rates by hand, kappa against
sklearn, alpha against the krippendorff package, the interval over annotators re-done
naively, and the max_flip_rate quality flag."""
import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from evaluation.annotator_quality import flag_reasons
from evaluation.bootstrap import bootstrap_interval, resample_blocks
from evaluation.screens.retest import MIN_REPEATS, answer_key, retest


def repeats(seed=0, annotators=8, per=10, levels=3, keep=0.7):
    rng = np.random.default_rng(seed)
    who = np.repeat([f"a{k}" for k in range(annotators)], per)
    first = rng.integers(0, levels, len(who))
    again = np.where(rng.random(len(who)) < keep, first, rng.integers(0, levels, len(who)))
    return who.tolist(), first.tolist(), again.tolist()


def test_flip_rate_and_kappa_equal_sklearn():
    who, first, again = repeats()
    out = retest(who, first, again, "nominal", max_flip_rate=0.25)
    study = out["retest"]
    assert study["n_pairs"] == 80 and study["n_annotators"] == 8
    assert study["flip_rate"] == pytest.approx(np.mean(np.array(first) != np.array(again)), abs=1e-15)
    assert study["agreement"]["statistic"] == "cohen_kappa"
    assert study["agreement"]["value"] == pytest.approx(cohen_kappa_score(first, again), abs=1e-12)
    for name, row in out["annotators"].items():
        rows = [k for k, w in enumerate(who) if w == name]
        f, a = [first[k] for k in rows], [again[k] for k in rows]
        rate = np.mean(np.array(f) != np.array(a))
        assert row["n_pairs"] == 10 and row["flip_rate"] == pytest.approx(rate, abs=1e-15)
        assert row["agreement"] == pytest.approx(cohen_kappa_score(f, a), abs=1e-12)
        assert (row["flag"] != "") == (rate > 0.25)
        assert row["flag"] == ("" if rate <= 0.25 else f"flip rate {rate:.2f} > 0.25")


def test_intervals_are_the_annotator_bootstrap_done_naively():
    """Resample r draws the annotators (resample_blocks(8, 2000, 0): the report's cluster
    draw, annotators in sorted order); flip rate and kappa are recomputed on the drawn
    annotators' repeats (sklearn for kappa)."""
    who, first, again = repeats(seed=1)
    out = retest(who, first, again, "nominal")["retest"]
    names = sorted(set(who))
    rows_of = {n: [k for k, w in enumerate(who) if w == n] for n in names}
    flips, kappas = [], []
    for idx in np.vstack(list(resample_blocks(8, 2000, 0))):
        rows = [k for a in idx for k in rows_of[names[a]]]
        f, a = [first[k] for k in rows], [again[k] for k in rows]
        flips.append(np.mean(np.array(f) != np.array(a)))
        kappas.append(cohen_kappa_score(f, a) if len(set(f) | set(a)) > 1 else np.nan)
    assert np.allclose(out["flip_rate_ci95"], bootstrap_interval(flips, out["flip_rate"], 8).ci95, atol=1e-12)
    expected = bootstrap_interval(kappas, out["agreement"]["value"], 8).ci95
    assert np.allclose(out["agreement"]["ci95"], expected, atol=1e-9)


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_alpha_equals_krippendorff_package(level):
    who, first, again = repeats(seed=2, levels=5)
    out = retest(who, first, again, level)
    expected = krippendorff.alpha(reliability_data=np.array([first, again], dtype=float), level_of_measurement=level)
    assert out["retest"]["agreement"]["statistic"] == "krippendorff_alpha"
    assert out["retest"]["agreement"]["value"] == pytest.approx(expected, abs=1e-12)
    assert out["retest"]["agreement"]["ci95"] is not None
    for name, row in out["annotators"].items():
        rows = [k for k, w in enumerate(who) if w == name]
        data = np.array([[first[k] for k in rows], [again[k] for k in rows]], dtype=float)
        if len(np.unique(data)) > 1:
            assert row["agreement"] == pytest.approx(
                krippendorff.alpha(reliability_data=data, level_of_measurement=level), abs=1e-12)


def test_annotators_under_five_repeats_count_in_the_study_only():
    who = ["a"] * MIN_REPEATS + ["b"] * (MIN_REPEATS - 1)
    first = [1] * len(who)
    again = [1, 1, 1, 1, 2] + [2, 2, 2, 2]
    out = retest(who, first, again)
    assert list(out["annotators"]) == ["a"] and out["annotators"]["a"]["flip_rate"] == 0.2
    assert out["retest"]["n_pairs"] == 9 and out["retest"]["flip_rate"] == pytest.approx(5 / 9, abs=1e-15)
    assert out["retest"]["flip_rate_ci95"] is None
    assert out["retest"]["flip_rate_ci_reason"] == "fewer than 5 clusters (2)"


def test_several_outputs_flip_when_best_worst_or_order_differs():
    first = [{"best": "s1", "worst": "s3"}] * 3 + [["s2", "s1", "s3"]] * 2
    again = [{"best": "s1", "worst": "s3"}, {"best": "s1", "worst": "s2"}, {"best": "s2", "worst": "s3"},
             ["s2", "s1", "s3"], ["s2", "s3", "s1"]]
    out = retest(["a"] * 5, first, again)
    assert out["annotators"]["a"]["flip_rate"] == pytest.approx(3 / 5, abs=1e-15)
    labels = [str(answer_key(x)) for x in first], [str(answer_key(x)) for x in again]
    assert out["retest"]["agreement"]["value"] == pytest.approx(cohen_kappa_score(*labels), abs=1e-12)


def test_flip_rate_is_a_quality_flag_like_the_others():
    row = {"gold_accuracy": 0.5, "flip_rate": 0.4}
    assert flag_reasons(row, {"min_gold_accuracy": 0.8, "max_flip_rate": 0.3}) == (
        "gold accuracy 0.50 < 0.8; flip rate 0.40 > 0.3")
    assert flag_reasons(row, {"max_flip_rate": 0.5}) == ""
    assert flag_reasons({"flip_rate": 0.9}, {}) == ""  # default: none
