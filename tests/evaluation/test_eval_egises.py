"""Offline preprocessing, JSD, EGISES/DEGRESS and EGISES-HJ on hand-worked examples."""
import math

import pytest

from evaluation.offline_nltk import ensure_wordnet
from evaluation.personalization.egises import degress_document, egises, egises_from_distances, egises_hj
from evaluation.personalization.jsd import jsd, text_jsd
from evaluation.text import preprocess

ALL_STEPS = ["remove_punctuation", "lowercase", "remove_digits", "tokenize_treebank", "stopwords_nltk_179",
             "lemmatize_wordnet_noun"]


def plain_jsd(p, q):
    """JSD from its definition: (KL(p||m) + KL(q||m)) / 2, m = (p+q)/2, log base 2."""
    words = set(p) | set(q)
    m = {w: (p.get(w, 0) + q.get(w, 0)) / 2 for w in words}

    def kl(a):
        return sum(a[w] * math.log2(a[w] / m[w]) for w in a if a[w] > 0)
    return (kl(p) + kl(q)) / 2


def test_wordnet_offline_is_idempotent(tmp_path, monkeypatch):
    first = ensure_wordnet()
    assert ensure_wordnet() == first
    from nltk.stem import WordNetLemmatizer
    assert WordNetLemmatizer().lemmatize("geese") == "goose"


def test_preprocess_steps_and_tokens():
    """As the EGISES reference code: punctuation deleted with no space ("well-lit" ->
    "welllit"), lowercase, digits deleted, Treebank tokens, NLTK's 179 stopwords (the,
    of, them, were, by), WordNet noun lemmas (cars -> car, houses -> house)."""
    tokens, steps = preprocess("The Cars, 42 of them, were parked by the well-lit houses!")
    assert tokens == ["car", "parked", "welllit", "house"]
    assert steps == ALL_STEPS
    assert preprocess("the and of")[0] == []


def reference_tokenize(text, stopwords):
    """The EGISES reference code's Measure._tokenize (KDM-LAB/EGISES-EMNLP23,
    egises/distance_measure.py) written out from its steps, with NLTK's Treebank
    tokenizer (the spec's; the reference's word_tokenize needs the punkt download)."""
    import re

    from nltk.stem import WordNetLemmatizer
    from nltk.tokenize import TreebankWordTokenizer
    text = re.sub(r"[^\w\s]", "", text)
    text = re.sub(r"[\d+]", "", text.lower())
    tokens = [t for t in TreebankWordTokenizer().tokenize(text) if t not in stopwords]
    return [WordNetLemmatizer().lemmatize(t) for t in tokens]


@pytest.mark.parametrize("text", [
    "Fire bill found", "The Cars, 42 of them, were parked by the well-lit houses!",
    "Don't worry: the city's 3rd budget bill passed 51-49, after fires destroyed homes.",
    "Residents found the firefighters' response quick; officials said they'd review it.",
])
def test_preprocess_equals_the_reference_code(text):
    """Issue 13, item 11: the default preprocessing is the reference code's, with NLTK's
    179-word list from evaluation/data (no download). scikit-learn's 318-word list is an
    option: it turns "Fire bill found" into nothing."""
    from evaluation.text import stopwords

    ensure_wordnet()
    words = stopwords()
    assert len(words) == 179 and {"fire", "bill", "found"}.isdisjoint(words)
    assert preprocess(text)[0] == reference_tokenize(text, words)
    assert preprocess("Fire bill found")[0] == ["fire", "bill", "found"]
    tokens, steps = preprocess("Fire bill found", stopword_list="sklearn")
    assert tokens == [] and "stopwords_sklearn_318" in steps


def test_jsd_hand_examples():
    """[a b] vs [a c]: p = (.5, .5, 0), q = (.5, 0, .5), m = (.5, .25, .25);
    KL(p||m) = .5*log2(1) + .5*log2(2) = .5 = KL(q||m) -> JSD = .5."""
    assert jsd(["a", "b"], ["a", "c"]) == pytest.approx(0.5)
    assert jsd(["a", "b", "b"], ["b", "a", "b"]) == 0.0
    assert jsd(["a"], ["b"]) == 1.0
    p, q = {"x": 0.75, "y": 0.25}, {"x": 0.2, "y": 0.3, "z": 0.5}
    assert jsd(["x"] * 3 + ["y"], ["x"] * 2 + ["y"] * 3 + ["z"] * 5) == pytest.approx(
        plain_jsd(p, q), abs=1e-12)


def test_text_jsd_empty_text_is_an_error():
    with pytest.raises(ValueError, match="first text is empty"):
        text_jsd("", "apple")
    with pytest.raises(ValueError, match="second text has no words left"):
        text_jsd("apple", "the of and")


def test_degress_two_users_code_and_paper():
    """Two users, sigma_ref(1,2) = .4, sigma_model(1,2) = .2; sigma to the document:
    ref .8, model .5 for both users.
    code: the softmax over the single k is 1, X = .4, Y = .2,
          prop = (.2 + 1e-5)/(.4 + 1e-5) for both j -> DEGRESS = .20001/.40001.
    paper: the softmax also has the k = j term with w = 0:
          soft_ref = e^.5/(1 + e^.5) (w = .4/.8), soft_model = e^.4/(1 + e^.4) (w = .2/.5),
          X = .4 soft_ref = .248984, Y = .2 soft_model = .119738,
          DEGRESS = mean(1, (Y + 1e-5)/(X + 1e-5)) (the k = j prop is 1)."""
    ref = [[0, 0.4], [0.4, 0]]
    model = [[0, 0.2], [0.2, 0]]
    code = degress_document(ref, [0.8, 0.8], model, [0.5, 0.5], "code")
    assert code == pytest.approx(0.20001 / 0.40001, abs=1e-12)
    x = 0.4 * math.exp(0.5) / (1 + math.exp(0.5))
    y = 0.2 * math.exp(0.4) / (1 + math.exp(0.4))
    paper = degress_document(ref, [0.8, 0.8], model, [0.5, 0.5], "paper")
    assert paper == pytest.approx((1 + (y + 1e-5) / (x + 1e-5)) / 2, abs=1e-12)


def test_degress_three_users_softmax():
    """sigma_ref: (1,2) = .2, (1,3) = .6, (2,3) = .4; every sigma to D = 1, so w = sigma.
    sigma_model = .5 for every pair, so soft_model = 1/2 and Y = .25 everywhere.
    j=1: soft_ref(1,2) = e^.2/(e^.2+e^.6) = .401312, X12 = .080262; soft_ref(1,3) = .598688,
         X13 = .359213; prop = (.080272/.25001, .25001/.359223) = (.321075, .695980).
    j=2: weights .2 (k=1), .4 (k=3): X21 = .2 e^.2/(e^.2+e^.4), X23 = .4 e^.4/(e^.2+e^.4).
    j=3: weights .6 (k=1), .4 (k=2). DEGRESS = mean of the six props; EGISES = 1 - it."""
    s = {(0, 1): 0.2, (0, 2): 0.6, (1, 2): 0.4}
    ref = [[0.0] * 3 for _ in range(3)]
    for (a, b), v in s.items():
        ref[a][b] = ref[b][a] = v
    model = [[0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]]
    props = []
    for j in range(3):
        others = [k for k in range(3) if k != j]
        total = sum(math.exp(ref[j][k]) for k in others)
        for k in others:
            x = math.exp(ref[j][k]) / total * ref[j][k]
            props.append((min(x, 0.25) + 1e-5) / (max(x, 0.25) + 1e-5))
    assert props[:2] == pytest.approx([0.321077, 0.695976], abs=1e-6)
    docs = [{"ref": ref, "ref_doc": [1, 1, 1], "model": model, "model_doc": [1, 1, 1]}]
    result = egises_from_distances(docs)
    assert result["degress"] == pytest.approx(sum(props) / 6, abs=1e-12)
    assert result["egises"] == pytest.approx(1 - sum(props) / 6, abs=1e-12)
    assert result["n_documents"] == 1


def test_egises_from_texts_hand_worked():
    """Words survive preprocessing unchanged. D = "apple banana cherry date";
    references u1 "apple banana", u2 "cherry date"; summaries s1 "apple banana",
    s2 "apple cherry".
    sigma_ref(1,2) = 1 (no shared word); sigma_ref(j,D) = JSD((.5,.5,0,0),(.25 x4)) = .311278.
    sigma_model(1,2) = JSD(apple banana, apple cherry) = .5; sigma_model(j,D) = .311278.
    Code variant: X = 1, Y = .5 for both j -> DEGRESS = (.5 + 1e-5)/(1 + 1e-5).
    accuracy = mean(JSD(s1,u1) = 0, JSD(s2,u2) = .5) = .25."""
    doc = {"doc_id": "d1", "text": "banana cherry date", "title": "Apple",
           "references": {"u1": "apple banana", "u2": "cherry date"},
           "summaries": {"u1": "apple banana", "u2": "apple cherry"}}
    half = {"a": 0.5, "b": 0.5}
    quarter = {"a": 0.25, "b": 0.25, "c": 0.25, "d": 0.25}
    assert plain_jsd(half, quarter) == pytest.approx(0.311278, abs=1e-6)
    result = egises([doc])
    assert result["degress"] == pytest.approx(0.50001 / 1.00001, abs=1e-12)
    assert result["egises"] == pytest.approx(1 - 0.50001 / 1.00001, abs=1e-12)
    assert result["accuracy"] == pytest.approx(0.25, abs=1e-12)
    assert result["n_documents"] == 1 and result["errors"] == []
    assert result["preprocessing"] == ALL_STEPS


def test_egises_reports_bad_documents_per_document():
    good = {"doc_id": "ok", "text": "apple banana cherry",
            "references": {"u1": "apple", "u2": "banana"},
            "summaries": {"u1": "apple", "u2": "cherry"}}
    bad = [
        {"doc_id": "empty", "text": "apple", "references": {"u1": "", "u2": "pear"},
         "summaries": {"u1": "pear", "u2": "pear"}},
        {"doc_id": "one", "text": "apple", "references": {"u1": "pear"},
         "summaries": {"u1": "pear"}},
        {"doc_id": "mismatch", "text": "apple", "references": {"u1": "pear", "u2": "fig"},
         "summaries": {"u1": "pear", "u3": "fig"}},
    ]
    result = egises([good] + bad)
    assert result["n_documents"] == 1
    assert [e["doc_id"] for e in result["errors"]] == ["empty", "one", "mismatch"]
    assert "reference of user u1 is empty" in result["errors"][0]["error"]
    assert egises(bad)["egises"] is None


def test_egises_hj_user_pair_is_unordered():
    """Issue 13, item 1 (statistics.md's minimal check): model ratings (a,b): [5] and (b,a):
    [1] pool to mean 3 -> sigma_model = (6-3)/5 = .6; reference (a,b): [2] -> sigma_ref =
    .8. Document "apple banana cherry date", references "apple banana" / "cherry date",
    summaries "apple" / "date". Two users: prop = (.6 + 1e-5)/(.8 + 1e-5) for both, so
    EGISES-HJ = 1 - .60001/.80001 = 0.2499969 (reading only (a,b) gives 0.7499906)."""
    doc = {"doc_id": "d", "text": "apple banana cherry date",
           "references": {"a": "apple banana", "b": "cherry date"}, "summaries": {"a": "apple", "b": "date"},
           "model_ratings": {("a", "b"): [5], ("b", "a"): [1]}, "reference_ratings": {("a", "b"): [2]}}
    result = egises_hj([doc])
    assert round(result["egises_hj"], 7) == 0.2499969
    assert result["egises_hj"] == pytest.approx(1 - 0.60001 / 0.80001, abs=1e-12)
    only_ab = egises_hj([{**doc, "model_ratings": {("a", "b"): [5]}}])
    assert round(only_ab["egises_hj"], 7) == 0.7499906


def test_egises_hj_hand_worked_and_skipped_pairs():
    """Scale 1..6: reference pair rated 2 -> sigma_ref = (6-2)/5 = .8; model pair ratings
    [4, 5] -> mean 4.5 -> sigma_model = 1.5/5 = .3. Two users: softmax weight 1, so
    prop = (.3 + 1e-5)/(.8 + 1e-5) for both j, and EGISES-HJ = 1 - prop.
    A second document has no model rating: its pair is skipped and it adds nothing."""
    base = {"text": "apple banana cherry", "references": {"u1": "apple", "u2": "banana"},
            "summaries": {"u1": "apple cherry", "u2": "banana"}}
    docs = [
        {**base, "doc_id": "d1", "reference_ratings": {("u2", "u1"): 2},
         "model_ratings": {("u1", "u2"): [4, 5]}},
        {**base, "doc_id": "d2", "reference_ratings": {("u1", "u2"): 3}, "model_ratings": {}},
    ]
    result = egises_hj(docs)
    assert result["egises_hj"] == pytest.approx(1 - 0.30001 / 0.80001, abs=1e-12)
    assert result["skipped"] == 1 and result["n_documents"] == 1
    assert egises_hj(docs[1:])["egises_hj"] is None
