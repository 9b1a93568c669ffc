"""Issue 34, part 1 (continued): the scalar_difference target and the error rate of optional
stopping in `manage.py design`, each against independent arithmetic: the normal
approximation of a paired difference of means, and the exact crossing probability of
repeated tests on a Gaussian random walk (a multivariate normal box probability)."""
import io
import json
import math

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from annotate.planning.design_spec import DesignInvalid, parse_design
from annotate.planning.power import power
from annotate.planning.scalar import difference, simulate_scalar
from annotate.planning.stopping import looks, null_design, stopping_error

SCALAR = {"kind": "scalar_rating", "systems": {"a": 5.0, "b": 5.0}, "scale": [0, 10], "items": 40,
          "annotations_per_item": 2, "annotators": 2, "noise_sd": 1.5,
          "targets": [{"test": "scalar_difference", "a": "a", "b": "b"}]}


def paired_power(delta, n_inputs, m, noise_sd):
    """Two-sided 5% test of mean(a) - mean(b) = 0 with the report's critical value t(0.975,
    C - 1) over C = n_inputs clusters: each input's difference of two means of m ratings has
    variance 2 (noise_sd^2 + 1/12) / m (rounding to whole points adds 1/12, Sheppard)."""
    se = math.sqrt(2 * (noise_sd ** 2 + 1 / 12) / m / n_inputs)
    crit = stats.t.ppf(0.975, n_inputs - 1)
    return stats.norm.cdf(delta / se - crit) + stats.norm.cdf(-delta / se - crit)


def test_a_simulated_scalar_study_rates_every_systems_output_at_the_overlap():
    design = parse_design({**SCALAR, "systems": {"a": 3.0, "b": 8.0, "c": 12.0}, "scale": [1, 10], "items": 5,
                           "annotations_per_item": 2, "annotators": 3, "noise_sd": 0.0})
    study = simulate_scalar(design, 1)
    assert study.n == 5 * 3 * 2  # inputs x systems x overlap
    assert np.bincount(study.input * 3 + study.system).tolist() == [2] * 15
    assert sorted(set(study.score[study.system == 2].tolist())) == [10.0]  # 12 clipped to the scale's top
    assert set(study.score[study.system == 0].tolist()) == {3.0}
    estimate, ci = difference(study, "b", "a")
    assert estimate == 5.0 and ci == [5.0, 5.0]


@pytest.mark.slow
@pytest.mark.parametrize("delta, n_inputs, m, noise_sd", [(0.5, 40, 2, 1.5), (0.3, 60, 3, 1.0),
                                                           (0.0, 40, 2, 1.5), (0.6, 30, 2, 1.5)])
def test_scalar_power_matches_the_normal_approximation(delta, n_inputs, m, noise_sd):
    design = parse_design({**SCALAR, "systems": {"a": 5 + delta / 2, "b": 5 - delta / 2}, "items": n_inputs,
                           "annotations_per_item": m, "annotators": m, "noise_sd": noise_sd,
                           "simulations": 300, "seed": 11})
    result = power(design, workers=1)[0]
    expected = paired_power(delta, n_inputs, m, noise_sd)
    se = math.sqrt(expected * (1 - expected) / 300)
    assert abs(result["power"] - expected) <= 2 * se, (result["power"], expected, se)
    width = 2 * stats.t.ppf(0.975, n_inputs - 1) * math.sqrt(2 * (noise_sd ** 2 + 1 / 12) / m / n_inputs)
    assert result["median_width"] == pytest.approx(width, rel=0.1)


def test_one_look_is_the_fixed_design():
    """every >= the study's judgments: one look, at the end; the stopping rule's error and
    power are the fixed-n test's, and the fixed-n power is `power`'s for the same seeds."""
    raw = {**SCALAR, "systems": {"a": 5.4, "b": 4.6}, "items": 20, "simulations": 30, "seed": 4,
           "stopping": {"every": 80}}
    design = parse_design(raw)
    result = stopping_error(design, workers=1)
    assert result["looks"] == 1 and result["judgments_fixed"] == 80
    assert result["type1_error_stopping"] == result["type1_error_fixed"]
    assert result["power_stopping"] == result["power_fixed"] == power(design, workers=1)[0]["power"]
    assert result["mean_judgments_null"] == result["mean_judgments_design"] == 80
    assert result["type1_error_inflation"] == 0
    assert result["null_systems"] == {"a": 5.0, "b": 5.0}


def repeated_test_error(clusters):
    """Independent arithmetic: P(some look rejects) for two-sided tests at looks after
    clusters[k] of C equal, independent clusters, look k rejecting when |Z_k| > t(0.975,
    clusters[k] - 1), Z_k the standardized cumulative mean: corr(Z_j, Z_k) =
    sqrt(c_j / c_k). One minus the multivariate normal box probability."""
    c = np.asarray(clusters, dtype=float)
    cov = np.sqrt(np.minimum.outer(c, c) / np.maximum.outer(c, c))
    crit = stats.t.ppf(0.975, c - 1)
    return 1 - stats.multivariate_normal(np.zeros(len(c)), cov).cdf(crit, lower_limit=-crit)


@pytest.mark.slow
def test_five_looks_inflate_the_error_as_the_random_walk_says():
    """100 inputs x 2 systems x 2 ratings = 400 judgments, looked at every 80 (20 inputs):
    5 looks. The exact crossing probability with the report's t critical values is 0.124
    (with z = 1.96 at every look it is 0.142: Armitage, McPherson and Rowe 1969); the
    simulated rule's error is within 2 MC se of it, and the fixed design's within 2 se of 0.05."""
    design = parse_design({**SCALAR, "items": 100, "simulations": 400, "seed": 5,
                           "stopping": {"every": 80}})
    result = stopping_error(design, workers=2)
    assert result["looks"] == 5 and looks(400, 80) == [80, 160, 240, 320, 400]
    expected = repeated_test_error([20, 40, 60, 80, 100])
    assert expected == pytest.approx(0.1241, abs=5e-4)
    assert repeated_test_error([1e9 * k for k in range(1, 6)]) == pytest.approx(0.142, abs=1e-3)
    se = math.sqrt(expected * (1 - expected) / 400)
    assert abs(result["type1_error_stopping"] - expected) <= 2 * se, (result["type1_error_stopping"], expected)
    assert abs(result["type1_error_fixed"] - 0.05) <= 2 * math.sqrt(0.05 * 0.95 / 400)
    assert result["mean_judgments_null"] < 400


def test_the_null_equalizes_only_the_targets_systems():
    pairwise = parse_design({"kind": "pairwise_alignment", "systems": {"a": 0.6, "b": 0.0, "c": -0.6}, "items": 10,
                             "annotations_per_item": 3, "annotators": 3,
                             "targets": [{"test": "alpha_width", "width": 0.5},
                                         {"test": "win_rate", "system": "a", "against": "c"}],
                             "stopping": {"target": 1, "every": 10}})
    assert null_design(pairwise, pairwise.targets[1]).systems == {"a": 0.0, "b": 0.0, "c": 0.0}
    pairwise.systems["b"] = 0.3
    assert null_design(pairwise, pairwise.targets[1]).systems == {"a": 0.0, "b": 0.3, "c": 0.0}


@pytest.mark.django_db
def test_the_command_reports_the_stopping_rule_for_a_pairwise_design(tmp_path):
    path = tmp_path / "design.json"
    path.write_text(json.dumps({"kind": "pairwise_alignment", "systems": {"a": 0.5, "b": -0.5}, "items": 12,
                                "annotations_per_item": 3, "annotators": 3, "seed": 2,
                                "targets": [{"test": "win_rate", "system": "a", "against": "b"}],
                                "stopping": {"every": 12}}))
    out = io.StringIO()
    call_command("design", str(path), "--simulations", "8", "--workers", "1", stdout=out)
    result = json.loads(out.getvalue())
    stop = result["stopping"]
    assert stop["looks"] == 3 and stop["judgments_fixed"] == 36 and stop["n_simulations"] == 8
    assert stop["power_fixed"] == result["targets"][0]["power"]
    for name in ("type1_error", "power"):  # the last look is the fixed test: stopping rejects at least as often
        assert stop[f"{name}_stopping"] >= stop[f"{name}_fixed"]
    assert stop["null_systems"] == {"a": 0.0, "b": 0.0}
    text = io.StringIO()
    call_command("design", str(path), "--simulations", "8", "--workers", "1", "--format", "text", stdout=text)
    assert "stopping at the first of 3 looks (every 12 judgments) where target 0 is met" in text.getvalue()


@pytest.mark.parametrize("raw, message", [
    ({**SCALAR, "stopping": {"evry": 5}}, "stopping: unknown key 'evry' (did you mean 'every'?)"),
    ({**SCALAR, "stopping": {"every": 0}}, "stopping: 'every' must be a whole number of judgments >= 1, got 0"),
    ({**SCALAR, "stopping": {"every": 5, "target": 3}}, "stopping: 'target' must index 'targets' (0 to 0), got 3"),
    ({**SCALAR, "scale": [5, 1]}, "'scale' must have min < max, got [5, 1]"),
    ({**SCALAR, "position_bias": 0.2}, "'position_bias': a scalar rating shows one output, there is no position"),
    ({**SCALAR, "targets": [{"test": "win_rate", "system": "a", "against": "b"}]},
     "targets[0]: test 'win_rate' does not fit kind 'scalar_rating' (it takes scalar_difference)"),
    ({**SCALAR, "kind": "pairwise_alignment"},
     "targets[0]: test 'scalar_difference' does not fit kind 'pairwise_alignment' (it takes win_rate, "
     "rank_separation, alpha_width)"),
    ({**SCALAR, "kind": "pairwise_alignment", "targets": [{"test": "alpha_width", "width": 0.3}],
      "stopping": {"every": 5}},
     "stopping: target alpha_width tests no null hypothesis (it has no type-I error); name a win_rate, "
     "rank_separation or scalar_difference target"),
    ({**SCALAR, "targets": [{"test": "scalar_difference", "a": "a", "b": "a"}]},
     "targets[0]: scalar_difference needs two different systems 'a' and 'b'"),
])
def test_bad_scalar_and_stopping_designs_are_refused(raw, message):
    with pytest.raises(DesignInvalid) as refused:
        parse_design(raw)
    assert message in refused.value.errors


JUNK = [None, 5, "x", [], {}, {"a": "b"}, [1], True, -1, 1e308, float("nan"), [{"test": 3}], [None],
        {"every": "x"}, {"target": [1]}, [1, 2], ["a", 5], [5, 1], {"a": None},
        [{"test": "win_rate", "system": ["x"]}]]


@pytest.mark.parametrize("base", [SCALAR, {**SCALAR, "kind": "pairwise_alignment", "stopping": {"every": 5},
                                           "targets": [{"test": "win_rate", "system": "a", "against": "b"}]},
                                  {**SCALAR, "kind": "pairwise_alignment", "pilot": "p"}])
def test_any_value_of_any_key_is_a_design_or_a_refusal(base):
    """The API hands parse_design whatever JSON it got: a refusal, never another exception."""
    from annotate.planning.design_spec import KEYS

    for key in KEYS:
        for value in JUNK:
            try:
                parse_design({**base, key: value})
            except DesignInvalid as refused:
                assert refused.errors


@pytest.mark.django_db
def test_a_scalar_pilot_supplies_means_noise_and_scale(tmp_path):
    """Two inputs, each rated for both systems by two annotators (scale 1-7): the systems'
    means over their ratings and noise_sd = sqrt(mean within-item sample variance), by hand;
    a scalar pilot of a pairwise design is refused."""
    from evaluation.report.kinds import PAIRWISE_ALIGNMENT, SCALAR_RATING
    from tests.factories import make_judged_study

    items = [(f"{inp}-{s}", {"input": inp, "candidate": {"id": s, "text": f"{s} on {inp}"}}, None)
             for inp in ("p1", "p2") for s in ("good", "bad")]
    scores = {("p1-good", "u1"): 6, ("p1-good", "u2"): 4, ("p1-bad", "u1"): 3, ("p1-bad", "u2"): 3,
              ("p2-good", "u1"): 7, ("p2-good", "u2"): 6, ("p2-bad", "u1"): 2, ("p2-bad", "u2"): 1}
    make_judged_study("scalar-pilot", SCALAR_RATING, items,
                      [(item, who, "score", str(v), {}, 5.0) for (item, who), v in scores.items()],
                      overlap=2, config={"scale": [1, 7]})
    path = tmp_path / "design.json"
    path.write_text(json.dumps({"kind": SCALAR_RATING, "pilot": "scalar-pilot", "items": 10, "annotations_per_item": 2,
                                "annotators": 2, "targets": [{"test": "scalar_difference", "a": "good", "b": "bad"}]}))
    out = io.StringIO()
    call_command("design", str(path), "--simulations", "3", "--workers", "1", stdout=out)
    fitted = json.loads(out.getvalue())["fitted_from_pilot"]
    assert fitted["parameters"] == ["systems", "noise_sd", "scale"]
    assert fitted["systems"] == {"bad": 9 / 4, "good": 23 / 4}
    within = [(6 - 5) ** 2 * 2, 0.0, 0.5 ** 2 * 2, 0.5 ** 2 * 2]  # sample variances (n - 1 = 1) of each item
    assert fitted["noise_sd"] == pytest.approx(math.sqrt(sum(within) / 4))
    assert fitted["scale"] == [1, 7]
    path.write_text(json.dumps({"kind": PAIRWISE_ALIGNMENT, "pilot": "scalar-pilot", "items": 10,
                                "targets": [{"test": "win_rate", "system": "good", "against": "bad"}]}))
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("design", str(path), stdout=io.StringIO(), stderr=err)
    assert ("'pilot': study 'scalar-pilot' is a scalar_rating study, which cannot be a pilot of a "
            "pairwise_alignment design") in err.getvalue()
