"""Issue 31 item 11: the interval rule's "equal to t" (bootstrap._smoothed_below) holds at
t = 0. Before, the tolerance was relative to t alone: a statistic that is mathematically 0
computed as 5.55e-17 (or resamples that are 0 computed as -1.85e-17) counted as above or
below instead of tied, and moved the interval's ends and the p-value of "r = 0"."""
import math
from fractions import Fraction

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from evaluation.bootstrap import bootstrap_interval, cluster_counts
from evaluation.correlation import correlations

NOISY_ZERO = 0.1 + 0.2 - 0.3  # 5.55e-17: a 0 summed in another order


def test_a_zero_estimate_with_rounding_noise_gives_the_interval_of_an_exact_zero():
    """B = 10 resamples, C = 8 clusters, the estimate mathematically 0. By hand: 3 resamples
    below 0 and 3 equal to it, so G(0) = (3 + 3/2 + 1/2) / 11 = 5/11, z0 = Phi^-1(5/11)
    = -0.11419, ze = sqrt(8/7) t_7(0.975) = 2.52789; the bounds are the 0.29233 and
    98.92623 percentiles (numpy linear): -0.6 + 0.29233/100 * 9 * 0.2 = -0.59474 and
    0.5 + (0.98926 * 9 - 8) * 0.3 = 0.77101. Before the fix the noisy estimate counted the
    three zeros as below (G = 6.5/11) and the lower end came out -0.56523."""
    exact = [-0.6, -0.4, -0.2, 0.0, 0.0, 0.0, 0.1, 0.3, 0.5, 0.8]
    noisy = [-0.6, -0.4, -0.2, -NOISY_ZERO / 2, 0.0, NOISY_ZERO / 2, 0.1, 0.3, 0.5, 0.8]
    z0, ze = norm.ppf(5 / 11), math.sqrt(8 / 7) * student_t.ppf(0.975, 7)
    assert (round(z0, 5), round(ze, 5)) == (-0.11419, 2.52789)
    hand = [-0.6 + norm.cdf(2 * z0 - ze) * 9 * 0.2, 0.5 + (norm.cdf(2 * z0 + ze) * 9 - 8) * 0.3]
    assert [round(v, 5) for v in hand] == [-0.59474, 0.77101]
    for samples, estimate in ((exact, 0.0), (noisy, NOISY_ZERO), (noisy, 0.0), (exact, -NOISY_ZERO)):
        ci = bootstrap_interval(samples, estimate, n_clusters=8).ci95
        assert ci is not None and np.allclose(ci, hand, rtol=0, atol=1e-12), (samples, estimate, ci)


def test_the_p_value_of_r_0_counts_noisy_zero_resamples_as_ties():
    """B = 10, C = 10, r = 0.45. By hand: G(0.45) = (6 + 1/2) / 11; G(0) = (1 + 3/2 + 1/2)
    / 11 = 3/11 with the three zero resamples tied with 0 (before: exact zeros only, so
    two noisy ones counted below and one above: G(0) = 2.5/11, p = 0.28149);
    p = 2 T_9.sf(|2 Phi^-1(6.5/11) - Phi^-1(3/11)| sqrt(9/10)) = 0.33900."""
    noisy = [-0.3, -NOISY_ZERO, NOISY_ZERO / 2, -NOISY_ZERO / 4, 0.2, 0.4, 0.5, 0.6, 0.7, 0.9]
    distance = abs(2 * norm.ppf(6.5 / 11) - norm.ppf(3 / 11))
    hand = 2 * student_t.sf(distance * math.sqrt(9 / 10), 9)
    assert round(hand, 5) == 0.33900
    p = bootstrap_interval(noisy, 0.45, n_clusters=10, p_value=True).p_value
    assert p is not None and abs(p - hand) < 1e-12


def exact_key(weights, data):
    """The Pearson r of a weighted resample as an exact rational monotone in r,
    sign(cov) cov^2 / (var_x var_y), and whether cov is exactly 0: the inputs' binary
    values in Fractions, so no rounding decides a tie."""
    n = sx = sy = sxx = syy = sxy = Fraction(0)
    for w, points in zip(weights, data):
        for px, py in points:
            w, fx, fy = Fraction(int(w)), Fraction(px), Fraction(py)
            n, sx, sy = n + w, sx + w * fx, sy + w * fy
            sxx, syy, sxy = sxx + w * fx * fx, syy + w * fy * fy, sxy + w * fx * fy
    cov, vx, vy = sxy / n - sx * sy / n**2, sxx / n - (sx / n) ** 2, syy / n - (sy / n) ** 2
    return (1 if cov > 0 else -1) * cov * cov / (vx * vy), cov == 0


def test_clustered_pearson_p_value_matches_an_exact_recount():
    """Six clusters of four points: three with no association, two positive, one negative,
    each centred on 0. A resample drawing only the first kind, or as many positive as
    negative ones, has r exactly 0 (404 of the 2,000; the float pipeline gives them
    -1.85e-17). The p-value of r = 0 is recomputed from the same cluster draws
    (bootstrap.cluster_counts) with exact rationals; before the fix it came out 0.79416
    instead of 0.62060."""
    a, b = 0.7, 0.3
    kinds = {"none": [(a, b), (-a, b), (a, -b), (-a, -b)], "pos": [(a, b), (-a, -b), (a, b), (-a, -b)],
             "neg": [(a, -b), (-a, b), (a, -b), (-a, b)]}
    data = [kinds[k] for k in ("none", "pos", "none", "neg", "none", "pos")]
    x = np.array([p[0] for c in data for p in c])
    y = np.array([p[1] for c in data for p in c])
    codes = np.repeat(np.arange(6), 4)
    got = correlations(x, y, clusters=codes)["pearson"]

    full, _ = exact_key([1] * 6, data)
    keys = [exact_key(w, data) for block in cluster_counts(6, 2000, seed=0) for w in block]
    zeros = sum(is_zero for _, is_zero in keys)
    assert zeros == 404

    def smoothed_below(t, at_zero):
        below = sum(k < t for k, z in keys if not (at_zero and z))
        ties = zeros if at_zero else sum(k == t for k, _ in keys)
        return (below + ties / 2 + 0.5) / (len(keys) + 1)

    distance = abs(2 * norm.ppf(smoothed_below(full, False)) - norm.ppf(smoothed_below(Fraction(0), True)))
    hand = 2 * student_t.sf(distance * math.sqrt(5 / 6), 5)
    assert full == Fraction(1, 36)  # r = 1/6: (8 - 4) / 24 of the cross products
    assert round(hand, 5) == 0.62060
    assert abs(got["p_value"] - hand) < 1e-12
