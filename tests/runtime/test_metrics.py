"""Classic metrics on hand-worked pairs."""
import math

import pytest

from models_runtime.metrics.bertscore import greedy_match
from models_runtime.metrics.registry import UnknownMetric, available_metrics, get_metric

REF = "the cat sat on the mat"


def rec(output, reference=REF):
    return {"input": "", "output": output, "reference": reference}


def test_rouge1_and_rougeL_by_hand():
    """"the cat on the mat" vs the reference: 5 shared unigrams (the x2, cat, on, mat),
    P = 5/5, R = 5/6, F = 2PR/(P+R) = 10/11; its LCS is the whole hypothesis, also 10/11.
    "mat the on cat the": same unigrams (10/11) but LCS 3 ("the cat ... the" or
    "the on the"), P = 3/5, R = 3/6, F = 0.6/1.1 = 6/11."""
    r1, rl = get_metric("rouge1"), get_metric("rougeL")
    assert r1([rec("the cat on the mat"), rec("mat the on cat the")]) == pytest.approx([10 / 11, 10 / 11])
    assert rl([rec("the cat on the mat"), rec("mat the on cat the")]) == pytest.approx([10 / 11, 6 / 11])


def test_bleu_by_hand():
    """"the cat sat on a mat": precisions 5/6, 3/5, 2/4, 1/3, equal lengths (BP = 1):
    BLEU = (5/6 * 3/5 * 1/2 * 1/3) ** (1/4) = (1/12) ** 0.25 = 0.537284966."""
    assert get_metric("bleu")([rec("the cat sat on a mat"), rec(REF)]) == pytest.approx([0.537284966, 1.0])


def test_meteor_by_hand():
    """Identical 6 words: P = R = 1, 1 chunk, penalty 0.5 (1/6)^3, score 1 - 0.5/216.
    "the cat on the mat": 5 matches, P = 1, R = 5/6, Fmean = PR/(0.9P + 0.1R) = 0.847457627,
    2 chunks ("the cat", "on the mat"), penalty 0.5 (2/5)^3 = 0.032, score 0.820338983."""
    scores = get_metric("meteor")([rec(REF), rec("the cat on the mat")])
    assert scores == pytest.approx([1 - 0.5 / 216, 0.820338983], abs=1e-9)


def test_missing_reference_scores_none():
    for name in ("rouge1", "rougeL", "bleu", "meteor"):
        assert get_metric(name)([rec("x", reference="")]) == [None]


def test_bertscore_greedy_matching_by_hand():
    """Candidate tokens (1,0), (0,1), (0,1); reference tokens (1,0), (1,1)/sqrt2.
    Cosines: row 1 -> 1, 1/sqrt2; rows 2, 3 -> 0, 1/sqrt2.
    P = (1 + 2/sqrt2) / 3 = (1 + sqrt2)/3; R = (1 + 1/sqrt2) / 2; F = 2PR/(P+R) = 2 sqrt2 - 2."""
    p, r, f = greedy_match([[1, 0], [0, 1], [0, 1]], [[1, 0], [1, 1]])
    assert p == pytest.approx((1 + math.sqrt(2)) / 3)
    assert r == pytest.approx((1 + 1 / math.sqrt(2)) / 2)
    assert f == pytest.approx(2 * math.sqrt(2) - 2)


@pytest.mark.model
def test_bertscore_with_the_embedded_encoder():
    scores = get_metric("bertscore")([rec(REF), rec("stock prices rose sharply"), rec("a cat sat on a mat"),
                                      rec("x", reference="")], device="cpu")
    assert scores[0] == pytest.approx(1.0, abs=1e-5)
    assert scores[3] is None
    assert scores[1] < scores[2] < 1.0


def test_registry_names_and_unknown_metric():
    assert {"rouge1", "rougeL", "bleu", "meteor", "bertscore"} <= set(available_metrics())
    with pytest.raises(UnknownMetric, match="unknown metric 'nope'"):
        get_metric("nope")
