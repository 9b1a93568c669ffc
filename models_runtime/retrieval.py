"""Retrieval of k profile items for a LaMP question: bm25, dense, recency, random.

Every retriever returns the indices of the chosen profile items, best first; ties keep
profile order. Profile item text = its string fields other than `id` and `date`, in the
item's key order, joined by spaces.
"""
import hashlib
import math
import random as _random
from collections import Counter
from datetime import date, datetime

RETRIEVERS = ("bm25", "dense", "recency", "random")
SKIP_FIELDS = ("id", "date")


def item_text(item):
    return " ".join(str(v) for k, v in item.items() if k not in SKIP_FIELDS and isinstance(v, (str, int, float))
                    and not isinstance(v, bool))


def tokenize(text):
    """Whitespace tokens, lowercased."""
    return text.lower().split()


def bm25_scores(query, documents, k1=1.5, b=0.75):
    """Okapi BM25 of `query` against each document (strings).

    idf(t) = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))   (never negative)
    score(D) = sum over query tokens t (repeats count) of
               idf(t) * f(t,D) * (k1 + 1) / (f(t,D) + k1 * (1 - b + b * |D| / avgdl))
    """
    docs = [tokenize(d) for d in documents]
    n = len(docs)
    if n == 0:
        return []
    avgdl = sum(len(d) for d in docs) / n or 1.0
    df = Counter(t for d in docs for t in set(d))
    counts = [Counter(d) for d in docs]
    scores = []
    for doc, tf in zip(docs, counts):
        score = 0.0
        for t in tokenize(query):
            f = tf.get(t, 0)
            if f:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(score)
    return scores


def top_k(scores, k):
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return order[:k]


def retrieve_bm25(query, profile, k, corpus=None):
    return top_k(bm25_scores(query, corpus or [item_text(p) for p in profile]), k)


def retrieve_dense(query, profile, k, encoder, corpus=None):
    """Dot product of the encoder's (unnormalised) embeddings."""
    if not profile:
        return []
    vectors = encoder.encode([query] + (corpus or [item_text(p) for p in profile]), convert_to_numpy=True)
    scores = (vectors[1:] @ vectors[0]).tolist()
    return top_k(scores, k)


def _date_key(value):
    """Sortable key for a date: ISO strings, date(time)s, or epoch numbers."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, (date, datetime)):
        value = value.isoformat()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).replace(tzinfo=None).timestamp()
        except ValueError:
            return None
    return None


def retrieve_recency(profile, k):
    """Most recent `date` first; items without a parseable date come last."""
    keys = [_date_key(p.get("date")) for p in profile]
    order = sorted(range(len(profile)), key=lambda i: (keys[i] is None, -(keys[i] or 0.0), i))
    return order[:k]


def retrieve_random(profile, k, seed):
    """A deterministic sample: the same record id always draws the same items."""
    rng = _random.Random(int(hashlib.sha256(str(seed).encode()).hexdigest()[:16], 16))
    return rng.sample(range(len(profile)), min(k, len(profile)))


def retrieve(name, query, profile, k, *, seed="", encoder=None, corpus=None):
    """Indices of the k chosen profile items. `corpus`: each item's text to score (LaMP's
    per-task fields, lamp.corpus_text); default item_text."""
    if name == "bm25":
        return retrieve_bm25(query, profile, k, corpus)
    if name == "dense":
        return retrieve_dense(query, profile, k, encoder, corpus)
    if name == "recency":
        return retrieve_recency(profile, k)
    if name == "random":
        return retrieve_random(profile, k, seed)
    raise ValueError(f"unknown retriever {name!r} (use {', '.join(RETRIEVERS)})")
