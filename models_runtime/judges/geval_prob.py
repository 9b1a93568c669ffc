"""G-Eval's probability-weighted score (Liu et al. 2023): score = sum_k k * p(k) over the
next-token probabilities of the score tokens "1".."5" right after the G-Eval prompt,
renormalised over those five. One forward pass per output; always a score in [1, 5],
deterministic, so even a small judge that never writes a parseable number gives one.

Needs a backend that exposes next-token probabilities (`next_token_probs`: the local
transformers backend); an OpenAI-compatible server is refused with a clear message."""
from .geval import HIGH, LOW, prompt

SCORE_TOKENS = tuple(str(k) for k in range(LOW, HIGH + 1))


class NoTokenProbabilities(ValueError):
    """The backend cannot give next-token probabilities."""


def geval_prob_scores(records, backend):
    """-> one float in [1, 5] per record: the expected G-Eval rating."""
    if not hasattr(backend, "next_token_probs"):
        raise NoTokenProbabilities(
            f"geval_prob needs the next-token probabilities of a local transformers model; backend "
            f"{getattr(backend, 'name', backend)!r} ({type(backend).__name__}) has none: use geval or gemba")
    if not records:
        return []
    probs = backend.next_token_probs([prompt(r) for r in records], SCORE_TOKENS)
    return [sum(k * p for k, p in zip(range(LOW, HIGH + 1), row)) for row in probs]
