"""Jensen-Shannon divergence between word distributions (base 2, no smoothing)."""
from collections import Counter

import numpy as np

from evaluation.text import preprocess


def _distribution(tokens: list[str], vocab: list[str]) -> np.ndarray:
    counts = Counter(tokens)
    p = np.array([counts.get(w, 0) for w in vocab], dtype=float)
    return p / p.sum()


def jsd(tokens_a: list[str], tokens_b: list[str]) -> float:
    """JSD of two token lists: 0 for the same distribution, 1 when no word is shared.

    [a b] vs [a c]: m = (.5, .25, .25), KL(p||m) = KL(q||m) = .5:

    >>> jsd(["a", "b"], ["a", "c"]), jsd(["a"], ["b"]), jsd(["a", "b"], ["b", "a"])
    (0.5, 1.0, 0.0)
    """
    if not tokens_a or not tokens_b:
        raise ValueError("JSD needs two non-empty token lists (a text had no words left)")
    vocab = sorted(set(tokens_a) | set(tokens_b))
    return float(jsd_rows(_distribution(tokens_a, vocab), _distribution(tokens_b, vocab)))


def jsd_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """JSD between probability rows p and q (broadcasting over leading axes).

    With m = (p+q)/2, JSD = (KL(p||m) + KL(q||m)) / 2, which equals
    1 + 1/2 * sum over words in both of [p log2(p/(p+q)) + q log2(q/(p+q))]:
    a word present in only one text adds exactly its mass to that KL term.
    """
    s = p + q
    both = (p > 0) & (q > 0)
    safe_s = np.where(both, s, 1.0)
    terms = np.where(
        both,
        np.where(both, p, 1.0) * np.log2(np.where(both, p, 1.0) / safe_s)
        + np.where(both, q, 1.0) * np.log2(np.where(both, q, 1.0) / safe_s),
        0.0,
    )
    return np.clip(1.0 + 0.5 * terms.sum(axis=-1), 0.0, 1.0)


def text_jsd(a: str, b: str) -> float:
    """JSD of two raw texts after `preprocess`; ValueError naming the empty text."""
    tokens = []
    for name, text in (("first", a), ("second", b)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{name} text is empty")
        toks, _ = preprocess(text)
        if not toks:
            raise ValueError(f"{name} text has no words left after preprocessing")
        tokens.append(toks)
    return jsd(*tokens)
