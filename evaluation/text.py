"""Offline text preprocessing for JSD, as the reference EGISES / iCOPERNICUS code does it
(github.com/KDM-LAB/EGISES-EMNLP23, egises/distance_measure.py `_tokenize`), so that
EGISES-JSD values are comparable with the papers (statistics.md, "JSD").

Steps, in order: delete punctuation with no space inserted (`re.sub(r"[^\\w\\s]", "", t)`,
so "don't" -> "dont" and "well-known" -> "wellknown"); lowercase and delete digits;
tokenize (NLTK's Treebank tokenizer, which needs no downloaded model); drop NLTK's
179-word English stopword list (shipped in evaluation/data, no download); lemmatize with
WordNet (noun POS, NLTK's default) when WordNet can be set up offline. `preprocess`
returns the names of the steps that ran so a report can state them. scikit-learn's
318-word list is an option (`stopwords="sklearn"`), never the default: it also drops
content words such as "fire", "bill" and "found".
"""
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

STOPWORDS_FILE = Path(__file__).resolve().parent / "data" / "nltk_english_stopwords.txt"
STOPWORD_LISTS = ("nltk", "sklearn")
_PUNCTUATION = re.compile(r"[^\w\s]")
_DIGITS = re.compile(r"\d")
_lemmatizer = None  # None: not tried yet; False: unavailable


@lru_cache(maxsize=len(STOPWORD_LISTS))
def stopwords(name: str = "nltk") -> frozenset[str]:
    """The stopword list `name`: "nltk" (179 words, the default) or "sklearn" (318).

    >>> len(stopwords()), len(stopwords("sklearn")), "fire" in stopwords("sklearn")
    (179, 318, True)
    """
    if name == "nltk":
        lines = STOPWORDS_FILE.read_text(encoding="utf-8").splitlines()
        return frozenset(w.strip() for w in lines if w.strip() and not w.startswith("#"))
    if name == "sklearn":
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        return frozenset(ENGLISH_STOP_WORDS)
    raise ValueError(f"stopword list must be one of {', '.join(STOPWORD_LISTS)}, got {name!r}")


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    """NLTK's Treebank tokenizer, imported on first use (NLTK pulls in scikit-learn and
    pandas: docs/architecture.md, "Heavy imports")."""
    from nltk.tokenize import TreebankWordTokenizer

    return TreebankWordTokenizer()


def _get_lemmatizer() -> Any:
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
def _lemma(word: str) -> str:
    lemmatizer = _get_lemmatizer()
    return str(lemmatizer.lemmatize(word)) if lemmatizer else word


def preprocess(text: str, lemmatize: bool = True, stopword_list: str = "nltk") -> tuple[list[str], list[str]]:
    """Return (tokens, steps_ran) for one text; steps_ran lists the steps in order.

    >>> tokens, steps = preprocess("Fire bill found: 3 don't!", lemmatize=False)
    >>> tokens
    ['fire', 'bill', 'found', 'dont']
    >>> steps
    ['remove_punctuation', 'lowercase', 'remove_digits', 'tokenize_treebank', 'stopwords_nltk_179']
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    words = stopwords(stopword_list)
    steps = ["remove_punctuation", "lowercase", "remove_digits", "tokenize_treebank",
             f"stopwords_{stopword_list}_{len(words)}"]
    cleaned = _DIGITS.sub("", _PUNCTUATION.sub("", text).lower())
    tokens = [t for t in _tokenizer().tokenize(cleaned) if t not in words]
    if lemmatize and _get_lemmatizer() is not None:
        tokens = [_lemma(t) for t in tokens]
        steps.append("lemmatize_wordnet_noun")
    return tokens, steps
