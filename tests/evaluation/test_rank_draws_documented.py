"""The rank bootstrap's resamples (Spearman's and Kendall's intervals) are reproducible
without the source (issue 24): a plain-Python implementation written from
docs/statistics.md ("Rank bootstrap draws, exactly") gives the compiled draws bit for bit.
"""
from bisect import bisect_right

import numpy as np
import pytest
from scipy import stats

from evaluation.rank_bootstrap import draw_counts

MASK, LOW = (1 << 64) - 1, (1 << 32) - 1
STEP = 32  # Poisson(m) = m // 32 Poisson(32) draws + one Poisson(m % 32)


def mix(z):
    """splitmix64's output function."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


class Stream:
    """Resample r's stream: state = mix(seed * 2^32 + r); each output adds the golden gamma
    0x9E3779B97F4A7C15 to the state and returns mix(state)."""

    def __init__(self, seed, r):
        self.state = mix((seed * (1 << 32) + r) & MASK)

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        return mix(self.state)

    def below(self, bound):
        """Lemire: the high 32 bits times bound, rejecting low products under 2^32 mod bound."""
        reject = ((1 << 32) - bound) % bound
        while True:
            product = (self.next() >> 32) * bound
            if (product & LOW) >= reject:
                return product >> 32


def alias_tables():
    """For lam = 1..32: the pmf of Poisson(lam) on 0..K-1, K = 1 + the first k < 256 with
    sf(k) < 1e-18, normalized; Vose's alias method (stacks of small and large buckets in
    index order, popped from the end)."""
    tables = {}
    for lam in range(1, STEP + 1):
        size = int(np.argmax(stats.poisson.sf(np.arange(256), lam) < 1e-18)) + 1
        pmf = stats.poisson.pmf(np.arange(size), lam)
        scaled = list(pmf / pmf.sum() * size)
        prob, alias = [1.0] * size, list(range(size))
        small = [i for i in range(size) if scaled[i] < 1.0]
        large = [i for i in range(size) if scaled[i] >= 1.0]
        while small and large:
            s, big = small.pop(), large.pop()
            prob[s], alias[s] = scaled[s], big
            scaled[big] -= 1.0 - scaled[s]
            (small if scaled[big] < 1.0 else large).append(big)
        tables[lam] = (size, prob, alias)
    return tables


def poisson(stream, lam, tables):
    """One 53-bit uniform x * K picks bucket k = floor (at most K - 1) and the coin x - k."""
    size, prob, alias = tables[lam]
    x = float(stream.next() >> 11) * (1.0 / 9007199254740992.0) * size
    k = min(int(x), size - 1)
    return k if (x - k) < prob[k] else alias[k]


def documented_draw(mult, seed, r, tables):
    """How often each profile (mult[p] units each, units numbered profile by profile) is in
    resample r."""
    n, counts = sum(mult), [0] * len(mult)
    stream = Stream(seed, r)
    if len(mult) * 3 > n:  # direct: n unit indices, two per 64-bit output (low half first)
        unit_profile = [p for p, m in enumerate(mult) for _ in range(m)]
        reject, drawn = ((1 << 32) - n) % n, 0
        while drawn < n:
            word = stream.next()
            for product in ((word & LOW) * n, (word >> 32) * n):
                if (product & LOW) >= reject and drawn < n:
                    counts[unit_profile[product >> 32]] += 1
                    drawn += 1
        return counts
    for p, m in enumerate(mult):  # Poissonized, then corrected to exactly n
        counts[p] = sum(poisson(stream, STEP, tables) for _ in range(m // STEP))
        if m % STEP:
            counts[p] += poisson(stream, m % STEP, tables)
    cum = list(np.cumsum(mult))
    total = sum(counts)
    while total < n:  # add uniform units
        counts[bisect_right(cum, stream.below(n))] += 1
        total += 1
    while total > n:  # take out uniform drawn units, without replacement
        k = stream.below(total)
        counts[bisect_right(list(np.cumsum(counts)), k)] -= 1
        total -= 1
    return counts


@pytest.mark.parametrize("mult", [[1] * 10, [2, 1, 3, 1, 1], [40, 3, 70, 5], [1000, 33, 7, 64], [31, 32, 33]])
def test_compiled_draws_equal_the_documented_procedure(mult):
    tables = alias_tables()
    compiled = draw_counts(np.array(mult, dtype=np.int64), 25, seed=0)
    assert compiled.tolist() == [documented_draw(mult, 0, r, tables) for r in range(25)]
    assert draw_counts(np.array(mult, dtype=np.int64), 3, seed=7).tolist() == [
        documented_draw(mult, 7, r, tables) for r in range(3)]
