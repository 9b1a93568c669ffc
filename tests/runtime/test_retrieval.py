"""Retrieval functions and LaMP prompts on hand-worked examples."""
import math

import numpy as np
import pytest

from models_runtime.lamp import build_prompt, detect_task
from models_runtime.retrieval import (
    bm25_scores,
    retrieve,
    retrieve_bm25,
    retrieve_dense,
    retrieve_random,
    retrieve_recency,
)

DOCS = ["the cat sat", "the dog sat on the mat", "cat cat dog"]


def test_bm25_scores_by_hand():
    """Query "cat dog"; N = 3, |D| = 3, 6, 3, avgdl = 4; df(cat) = df(dog) = 2, so
    idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6) = 0.470003629 for both.
    d0: cat f=1, norm = 1 + 1.5 (0.25 + 0.75*3/4) = 2.21875 -> idf * 2.5 / 2.21875 = 0.529581554
    d1: dog f=1, norm = 1 + 1.5 (0.25 + 0.75*6/4) = 3.0625  -> idf * 2.5 / 3.0625  = 0.383676432
    d2: cat f=2 -> idf * 2 * 2.5 / (2 + 1.21875) = 0.730102725; dog f=1 -> 0.529581554;
        total 1.259684279."""
    scores = bm25_scores("cat dog", DOCS)
    assert scores == pytest.approx([0.529581554, 0.383676432, 1.259684279], abs=1e-9)
    assert math.log(1.6) == pytest.approx(0.470003629, abs=1e-9)


def test_bm25_whitespace_tokens_are_lowercased_and_repeats_count():
    """"Cat CAT" is the query token cat twice: d0 scores 2 * 0.529581554."""
    assert bm25_scores("Cat CAT", DOCS)[0] == pytest.approx(2 * 0.529581554, abs=1e-9)
    assert bm25_scores("cat.", DOCS) == [0.0, 0.0, 0.0]  # whitespace tokens: "cat." is not "cat"


def test_bm25_retrieval_ranks_and_breaks_ties_by_profile_order():
    profile = [{"id": "a", "text": d} for d in DOCS]
    assert retrieve_bm25("cat dog", profile, 2) == [2, 0]
    assert retrieve_bm25("zebra", profile, 2) == [0, 1]  # all zero: profile order
    # id and date are not searched
    assert retrieve_bm25("a", [{"id": "a", "date": "a", "text": "x"}, {"id": "b", "text": "a"}], 1) == [1]


def test_recency_newest_first_undated_last():
    profile = [{"date": "2020-01-05"}, {"date": "2021-03-01"}, {}, {"date": "2019-12-31"}, {"date": "nonsense"}]
    assert retrieve_recency(profile, 5) == [1, 0, 3, 2, 4]
    assert retrieve_recency(profile, 2) == [1, 0]


def test_random_is_deterministic_per_record():
    profile = [{"id": i} for i in range(10)]
    first = retrieve_random(profile, 3, seed="rec-1")
    assert first == retrieve_random(profile, 3, seed="rec-1")
    assert len(set(first)) == 3 and all(0 <= i < 10 for i in first)
    assert retrieve_random(profile, 30, seed="x") != [] and len(retrieve_random(profile, 30, seed="x")) == 10
    draws = {tuple(retrieve_random(profile, 3, seed=f"r{n}")) for n in range(20)}
    assert len(draws) > 1


class FixedEncoder:
    """Vectors chosen by hand: query (1, 0); items (0.2, 0.9), (0.8, 0.1), (0.5, 0.5):
    dot products 0.2, 0.8, 0.5 -> ranking 1, 2, 0."""

    def encode(self, texts, convert_to_numpy=True):
        table = {"q": [1.0, 0.0], "x": [0.2, 0.9], "y": [0.8, 0.1], "z": [0.5, 0.5]}
        return np.array([table[t] for t in texts])


def test_dense_dot_product():
    profile = [{"text": "x"}, {"text": "y"}, {"text": "z"}]
    assert retrieve_dense("q", profile, 2, FixedEncoder()) == [1, 2]
    assert retrieve("dense", "q", profile, 3, encoder=FixedEncoder()) == [1, 2, 0]
    with pytest.raises(ValueError, match="unknown retriever"):
        retrieve("tfidf", "q", profile, 1)


@pytest.mark.model
def test_dense_with_the_embedded_minilm(settings):
    from models_runtime.backends.registry import get_encoder

    profile = [{"text": "a recipe for tomato pasta with basil"}, {"text": "the football match ended two to one"},
               {"text": "stock markets fell on Monday"}]
    assert retrieve_dense("who won the soccer game", profile, 1, get_encoder(device="cpu")) == [1]


def test_lamp4_prompt_splits_the_budget_evenly():
    """Budget 20 over 2 items = 10 words each. '"Big News" is the title for "<text>"'
    spends 6 words besides the text, so the article keeps 4 words; '"Rain" is the title
    for "<text>"' spends 5, so up to 5 words (all 4) stay."""
    record = {"id": "1", "input": "Generate a headline for this article: X",
              "profile": [{"id": "p1", "title": "Big News", "text": "one two three four five"},
                          {"id": "p2", "title": "Rain", "text": "alpha beta gamma delta"}]}
    assert detect_task(record) == "LaMP-4"
    assert build_prompt(record, record["profile"], budget=20) == (
        '"Big News" is the title for "one two three four" , and "Rain" is the title for "alpha beta gamma delta" . '
        "Generate a headline for this article: X")
    assert build_prompt(record, [], budget=20) == "Generate a headline for this article: X"


def test_task_detection_and_other_templates():
    lamp7 = {"input": "Paraphrase: hi", "profile": [{"id": "1", "text": "good morning all"}]}
    assert detect_task(lamp7) == "LaMP-7"
    assert build_prompt(lamp7, lamp7["profile"], budget=2) == (
        '"good morning"  are written by a person. Following the given patterns Paraphrase: hi')
    lamp3 = {"input": "Rate: ok", "profile": [{"id": "1", "text": "great product", "score": "5"}]}
    assert build_prompt(lamp3, lamp3["profile"]) == '5 is the score for "great product" . Rate: ok'
    lamp2 = {"input": "Tag it", "profile": [{"id": "1", "description": "a heist", "tag": "crime"}]}
    assert build_prompt(lamp2, lamp2["profile"]) == 'the tag for the movie: "a heist" is "crime" . Tag it'
    lamp5 = {"input": "Title for: abc", "profile": [{"id": "1", "title": "T", "abstract": "we study x"}]}
    assert detect_task(lamp5) == "LaMP-5"
    lamp1 = {"input": 'For the paper with the title "x", which would they cite? [1]: "a" [2]: "b"',
             "profile": lamp5["profile"]}
    assert detect_task(lamp1) == "LaMP-1"
    assert build_prompt(lamp1, lamp1["profile"]) == (
        'For the paper with the title, and "T" "x", which would they cite? [1]: "a" [2]: "b"')
    generic = {"input": "Q", "profile": [{"id": "1", "note": "one two three", "place": "home"}]}
    assert build_prompt(generic, generic["profile"]) == "note: one two three; place: home. Q"
