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


def test_bm25_scores_by_hand_with_bm25okapis_negative_idf_floor():
    """rank_bm25.BM25Okapi 0.2.2 (LaMP's retriever). N = 3; "the", "cat", "sat", "dog" are in
    two documents: idf = ln(3 - 2 + 0.5) - ln(2 + 0.5) = ln 0.6 = -0.510826 (negative);
    "on", "mat" in one: ln 2.5 - ln 1.5 = +0.510826. Mean idf = (4 x -0.510826 + 2 x
    0.510826) / 6 = -0.170275, so every negative idf becomes 0.25 x mean = -0.0425688.
    |D| = 3, 6, 3, avgdl = 4; query "cat dog":
    d0: cat f=1: -0.0425688 x 2.5 / (1 + 1.5 (0.25 + 0.75 x 3/4)) = -0.0425688 x 2.5 / 2.21875 = -0.0479648
    d1: dog f=1: -0.0425688 x 2.5 / 3.0625 = -0.0347500
    d2: cat f=2: -0.0425688 x 5 / 3.21875 = -0.0661263; dog f=1: -0.0479648; total -0.1140911.
    So the document holding both words ranks last: argsort descending = d1, d0, d2."""
    floor = 0.25 * (4 * math.log(0.6) + 2 * math.log(2.5 / 1.5)) / 6
    assert floor == pytest.approx(-0.0425688020, abs=1e-10)
    scores = bm25_scores("cat dog", DOCS)
    assert list(scores) == pytest.approx([-0.0479648473, -0.0347500424, -0.1140911416], abs=1e-10)
    profile = [{"id": str(n), "text": d} for n, d in enumerate(DOCS)]
    assert retrieve_bm25("cat dog", profile, 3) == [1, 0, 2]


def test_bm25_tokens_keep_case_and_repeats_count():
    """Whitespace tokens, case kept: "Cat" and "CAT" are not "cat" (all zero); "mat mat"
    counts mat twice: d1 = 2 x 0.510826 x 2.5 / 3.0625 = 0.834001."""
    assert list(bm25_scores("Cat CAT", DOCS)) == [0.0, 0.0, 0.0]
    assert list(bm25_scores("mat mat", DOCS)) == pytest.approx([0.0, 0.8340010184, 0.0], abs=1e-10)
    assert list(bm25_scores("cat.", DOCS)) == [0.0, 0.0, 0.0]  # whitespace tokens: "cat." is not "cat"


def test_bm25_ties_follow_argsort_reversed_and_empty_corpora_score_zero():
    profile = [{"id": "a", "text": d} for d in DOCS]
    assert retrieve_bm25("zebra", profile, 3) == [2, 1, 0]  # all zero: np.argsort(...)[::-1]
    # id and date are not searched
    assert retrieve_bm25("a", [{"id": "a", "date": "a", "text": "x"}, {"id": "b", "text": "a"}], 1) == [1]
    # BM25Okapi divides by zero on a corpus without tokens: every score is 0 instead
    assert retrieve_bm25("x", [{"id": "a", "text": ""}, {"id": "b", "text": " "}], 2) == [1, 0]


def okapi_by_hand(query, docs, k1=1.5, b=0.75, epsilon=0.25):
    """BM25Okapi's scores written from its definition (independent of the package)."""
    tokens = [d.split() for d in docs]
    n = len(tokens)
    avgdl = sum(len(t) for t in tokens) / n
    df = {}
    for t in tokens:
        for w in set(t):
            df[w] = df.get(w, 0) + 1
    idf = {w: math.log(n - f + 0.5) - math.log(f + 0.5) for w, f in df.items()}
    floor = epsilon * sum(idf.values()) / len(idf)
    idf = {w: (floor if v < 0 else v) for w, v in idf.items()}
    return [sum(idf.get(q, 0) * t.count(q) * (k1 + 1) / (t.count(q) + k1 * (1 - b + b * len(t) / avgdl))
                for q in query.split()) for t in tokens]


def test_bm25_equals_rank_bm25_on_250_random_profiles():
    """250 seeded profiles of 1-12 items over a 6-word vocabulary ("cat" and "Cat" apart, so
    most words sit in over half the items: negative idf), queries with repeated tokens: our
    ranking is BM25Okapi.get_top_n's, and the scores match the formula written out."""
    from rank_bm25 import BM25Okapi

    rng = np.random.default_rng(7)
    vocab = ["cat", "Cat", "dog", "the", "mat", "on"]
    negative = 0
    for case in range(250):
        docs = [" ".join(rng.choice(vocab, size=rng.integers(1, 10))) for _ in range(rng.integers(1, 13))]
        query = " ".join(rng.choice(vocab, size=rng.integers(1, 7)))
        profile = [{"id": str(i), "text": d} for i, d in enumerate(docs)]
        k = int(rng.integers(1, len(docs) + 1))
        okapi = BM25Okapi([d.split() for d in docs])
        assert retrieve_bm25(query, profile, k) == okapi.get_top_n(query.split(), list(range(len(docs))), n=k), case
        assert list(bm25_scores(query, docs)) == pytest.approx(okapi_by_hand(query, docs), abs=1e-12)
        negative += any(v < 0 for v in okapi.idf.values())
    assert negative > 100


def test_recency_is_lamps_newest_first_later_item_first_on_ties_undated_last():
    profile = [{"date": "2020-01-05"}, {"date": "2021-03-01"}, {}, {"date": "2019-12-31"}, {"date": "nonsense"},
               {"date": "2020-01-05"}]
    assert retrieve_recency(profile, 6) == [1, 5, 0, 3, 2, 4]
    assert retrieve_recency(profile, 2) == [1, 5]
    # LaMP: sorted(profile, key=date tuple)[-k:][::-1], on the dated items
    dated = [i for i, p in enumerate(profile) if "-" in p.get("date", "") and p["date"][0].isdigit()]
    lamp = sorted(dated, key=lambda i: tuple(map(int, profile[i]["date"].split("-"))))[-4:][::-1]
    assert lamp == [1, 5, 0, 3]


def test_random_is_deterministic_per_record():
    profile = [{"id": i} for i in range(10)]
    first = retrieve_random(profile, 3, seed="rec-1")
    assert first == retrieve_random(profile, 3, seed="rec-1")
    assert len(set(first)) == 3 and all(0 <= i < 10 for i in first)
    assert retrieve_random(profile, 30, seed="x") != [] and len(retrieve_random(profile, 30, seed="x")) == 10
    draws = {tuple(retrieve_random(profile, 3, seed=f"r{n}")) for n in range(20)}
    assert len(draws) > 1


class FixedEncoder:
    """Token embeddings chosen by hand; mean pooling gives query (1, 0), items a (3, 4),
    b (0.9, 0.1), c (0.5, 0.5). Dot products 3, 0.9, 0.5 rank a, b, c; cosine (normalised
    embeddings) would rank b (0.994) before c (0.707) before a (0.6)."""

    table = {"q": [[2.0, 0.0], [0.0, 0.0]], "a": [[3.0, 4.0]], "b": [[1.8, 0.2], [0.0, 0.0]], "c": [[0.5, 0.5]]}

    def encode(self, texts, output_value="sentence_embedding", show_progress_bar=None):
        assert output_value == "token_embeddings"
        return [np.array(self.table[t]) for t in texts]


def test_dense_is_contrievers_mean_pooled_dot_product():
    profile = [{"text": "a"}, {"text": "b"}, {"text": "c"}]
    assert retrieve_dense("q", profile, 2, FixedEncoder()) == [0, 1]
    assert retrieve("dense", "q", profile, 3, encoder=FixedEncoder()) == [0, 1, 2]
    with pytest.raises(ValueError, match="unknown retriever"):
        retrieve("tfidf", "q", profile, 1)


@pytest.mark.model
def test_dense_with_the_embedded_minilm_equals_lamps_mean_pooling(settings):
    """LaMP's contriever_retriever.py on the same encoder, written with transformers:
    masked mean of last_hidden_state, query @ items (no normalisation)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from models_runtime.backends.registry import encoder_path, get_encoder

    query = "who won the soccer game"
    texts = ["a recipe for tomato pasta with basil", "the football match ended two to one",
             "stock markets fell on Monday", "goals"]
    tokenizer, model = AutoTokenizer.from_pretrained(encoder_path()), AutoModel.from_pretrained(encoder_path())

    def pooled(batch):
        tokens = tokenizer(batch, padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**tokens).last_hidden_state
        hidden = hidden.masked_fill(~tokens["attention_mask"][..., None].bool(), 0.0)
        return hidden.sum(dim=1) / tokens["attention_mask"].sum(dim=1)[..., None]

    scores = (pooled([query]).squeeze() @ pooled(texts).T).numpy()
    assert float(np.linalg.norm(pooled([query]).numpy())) > 1.5  # not a normalised embedding
    ours = retrieve_dense(query, [{"text": t} for t in texts], 4, get_encoder(device="cpu"))
    assert ours == np.argsort(scores)[::-1].tolist()
    assert ours[0] == 1


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
