"""Offline text preprocessing for JSD (statistics.md, "JSD").

Steps: lowercase; delete punctuation and digits; tokenize (NLTK's Treebank tokenizer, which
needs no downloaded model); drop English stopwords (scikit-learn's list, an installed
package); lemmatize with WordNet when it can be set up offline. `preprocess` returns the
names of the steps that ran so a report can state them.
"""
import re
from functools import lru_cache

from nltk.tokenize import TreebankWordTokenizer
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

STOPWORDS = frozenset(ENGLISH_STOP_WORDS)
# Apostrophes inside words are deleted ("don't" -> "dont"); every other punctuation mark,
# digit or underscore becomes a space so that "well-known" or "end.Next" do not fuse.
_APOSTROPHES = re.compile(r"['\u2019\u2018`]")
_NON_LETTERS = re.compile(r"[\W\d_]+")
_tokenizer = TreebankWordTokenizer()
_lemmatizer = None  # None: not tried yet; False: unavailable


def _get_lemmatizer():
    global _lemmatizer
    if _lemmatizer is None:
        try:
            from nltk.stem import WordNetLemmatizer

            from evaluation.offline_nltk import ensure_wordnet

            ensure_wordnet()
            _lemmatizer = WordNetLemmatizer()
        except (RuntimeError, LookupError, OSError):
            _lemmatizer = False
    return _lemmatizer or None


@lru_cache(maxsize=200_000)
def _lemma(word):
    return _lemmatizer.lemmatize(word)


def preprocess(text, lemmatize=True):
    """Return (tokens, steps_ran) for one text; steps_ran lists the steps in order."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    steps = ["lowercase", "remove_punctuation_digits", "tokenize", "stopwords"]
    cleaned = _NON_LETTERS.sub(" ", _APOSTROPHES.sub("", text.lower()))
    tokens = [t for t in _tokenizer.tokenize(cleaned) if t not in STOPWORDS]
    if lemmatize and _get_lemmatizer() is not None:
        tokens = [_lemma(t) for t in tokens]
        steps.append("lemmatize_wordnet")
    return tokens, steps
