"""Retrieval of k profile items for a LaMP question: bm25, dense, recency, random.

Every retriever returns the indices of the chosen profile items, best first. BM25 and
dense follow LaMP's own scripts (LaMP/prompts/prompts.py, rank_profiles.py):

- bm25: `rank_bm25.BM25Okapi` 0.2.2, the package LaMP uses, on whitespace tokens
  (`str.split()`, no lowercasing), k1 1.5, b 0.75, epsilon 0.25 (a negative idf becomes
  0.25 x the mean idf of the profile's words); the order is `np.argsort(scores)[::-1]`,
  as `BM25Okapi.get_top_n` ranks (ties included).
- dense: Contriever's rule: the mean of the encoder's token embeddings over the
  attention mask (mean pooling, not normalised), scored by dot product; same order rule.
- recency: LaMP sorts by date ascending and takes the last k reversed: newest first, and
  among equal dates the later profile item first; undated items come after the dated.
- random: a sample without repeats seeded by the record id (LaMP draws `random.choices`
  with repeats and no seed; ours is repeatable).

Profile item text (when no per-task corpus is given) = its string fields other than `id`
and `date`, in the item's key order, joined by spaces.
"""
import hashlib
import random as _random
from datetime import date, datetime

import numpy as np

RETRIEVERS = ("bm25", "dense", "recency", "random")
SKIP_FIELDS = ("id", "date")


def item_text(item):
    return " ".join(str(v) for k, v in item.items() if k not in SKIP_FIELDS and isinstance(v, (str, int, float))
                    and not isinstance(v, bool))


def tokenize(text):
    """LaMP's tokens: `str.split()` (whitespace, case kept)."""
    return str(text).split()


def bm25_scores(query, documents):
    """`rank_bm25.BM25Okapi(tokenized documents).get_scores(tokenized query)`; all zero for
    the corpora BM25Okapi cannot index (no document, or no token in any document)."""
    from rank_bm25 import BM25Okapi

    docs = [tokenize(d) for d in documents]
    if not any(docs):
        return np.zeros(len(docs))
    return BM25Okapi(docs).get_scores(tokenize(query))


def top_k(scores, k):
    """The first k of `np.argsort(scores)[::-1]`: BM25Okapi.get_top_n's order."""
    return [int(i) for i in np.argsort(np.asarray(scores, dtype=float))[::-1][:k]]


def retrieve_bm25(query, profile, k, corpus=None):
    return top_k(bm25_scores(query, corpus or [item_text(p) for p in profile]), k)


def mean_pooled(encoder, texts):
    """Contriever's embedding: the mean of the token embeddings over the attention mask,
    not normalised (a sentence-transformers encoder's own pipeline may normalise)."""
    tokens = encoder.encode(list(texts), output_value="token_embeddings", show_progress_bar=False)
    return np.stack([np.asarray(t.float().mean(dim=0) if hasattr(t, "float") else np.mean(t, axis=0))
                     for t in tokens])


def retrieve_dense(query, profile, k, encoder, corpus=None):
    """Dot product of mean-pooled embeddings (Contriever's rule)."""
    if not profile:
        return []
    vectors = mean_pooled(encoder, [query] + (corpus or [item_text(p) for p in profile]))
    return top_k(vectors[1:] @ vectors[0], k)


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
    """LaMP's rule: a stable sort by date, oldest first, then the last k reversed (the
    newest first; of equal dates the later profile item first). Items without a
    parseable date come last, in profile order."""
    keys = [_date_key(p.get("date")) for p in profile]
    dated = sorted((i for i in range(len(profile)) if keys[i] is not None), key=lambda i: keys[i])
    return (dated[::-1] + [i for i in range(len(profile)) if keys[i] is None])[:k]


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
