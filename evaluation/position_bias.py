"""Position bias of two-option choices: share choosing the first-shown option."""
from scipy.stats import binomtest


def position_bias(chose_first):
    """{"first_shown_rate", "n", "p_value"}: two-sided exact binomial test against 0.5.

    Entries that are None (ties, or no order recorded) are left out.
    """
    flags = [bool(x) for x in chose_first if x is not None]
    n = len(flags)
    if n == 0:
        return {"first_shown_rate": None, "n": 0, "p_value": None}
    k = sum(flags)
    return {"first_shown_rate": k / n, "n": n, "p_value": float(binomtest(k, n, 0.5).pvalue)}


def position_bias_by(groups, chose_first):
    """position_bias per group label (e.g. per annotator)."""
    by = {}
    for g, x in zip(groups, chose_first):
        by.setdefault(g, []).append(x)
    return {g: position_bias(xs) for g, xs in by.items()}
