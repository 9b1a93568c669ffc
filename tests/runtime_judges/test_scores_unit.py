"""GEMBA, G-Eval, the pairwise judge and the robustness probes with scripted backends."""
import pytest

from models_runtime.judges.gemba import gemba_scores
from models_runtime.judges.geval import SAMPLES, geval_details
from models_runtime.judges.pairwise import pairwise_choices, parse_letter
from models_runtime.judges.probes import SUFFIX, flip_rate, records_from_lines, relative_change, with_suffix
from runtime_judges.scripted import ScriptedBackend

RECORDS = [{"input": "q", "output": "o1", "reference": "r1"}, {"input": "q", "output": "o2", "reference": "r2"}]


def test_gemba_one_greedy_call():
    backend = ScriptedBackend(["Score: 72", "I would rate it highly"])
    assert gemba_scores(RECORDS, backend) == [72.0, None]
    [(n, params)] = backend.calls
    assert n == 2 and params.temperature == 0.0 and params.n == 1


def test_geval_mean_of_parsed_samples():
    """Record 1: ten "4" and ten "2" -> mean 3.0, 20 parsed. Record 2: nineteen "5" and one
    "great" -> mean 5.0 over 19, one dropped. One call, 20 samples at temperature 1."""
    answers = ["4", "2"] * 10 + ["5"] * 19 + ["great"]
    backend = ScriptedBackend(answers)
    assert geval_details(RECORDS, backend) == [
        {"score": 3.0, "parsed": 20, "dropped": 0}, {"score": 5.0, "parsed": 19, "dropped": 1}]
    [(n, params)] = backend.calls
    assert (n, params.n, params.temperature, SAMPLES) == (2, 20, 1.0, 20)


def test_geval_all_unparseable_is_none():
    assert geval_details(RECORDS[:1], ScriptedBackend(["n/a"] * 20)) == [{"score": None, "parsed": 0, "dropped": 20}]


def test_parse_letter():
    assert [parse_letter(t) for t in ["B", "Response A.", "**A**", "A or B", "Neither", "", "Answer: b"]] == \
        ["B", "A", "A", None, None, None, "B"]


def test_order_swap_flip_rate():
    """A judge that always answers "A" picks the first-shown candidate: every parsed item
    flips. Item 3 is unparseable in one order, so n = 2, flips = 2, rate 1.0."""
    pairs = [{"input": "", "reference": "r", "candidates": [{"id": f"x{i}", "text": "a"}, {"id": f"y{i}", "text": "b"}]}
             for i in range(3)]
    picks = pairwise_choices(pairs, ScriptedBackend(["A", "A", "A"]))
    swapped = pairwise_choices(pairs, ScriptedBackend(["A", "A", "dunno"]), swapped=True)
    assert picks == ["x0", "x1", "x2"] and swapped == ["y0", "y1", None]
    assert flip_rate(picks, swapped) == {"flip_rate": 1.0, "flips": 2, "n": 2, "unparsed": 1}
    # A consistent judge (always the same candidate) never flips.
    assert flip_rate(["x0", "x1"], ["x0", "x1"])["flip_rate"] == 0.0


def test_relative_change_arithmetic():
    """Pairs with a None on either side are dropped: before (0.2, 0.4) mean 0.3, after
    (0.3, 0.6) mean 0.45, change (0.45 - 0.3) / 0.3 = 0.5."""
    assert relative_change([0.2, None, 0.4], [0.3, 0.9, 0.6]) == pytest.approx(
        {"before": 0.3, "after": 0.45, "relative_change": 0.5, "n": 2})
    assert relative_change([0.0], [0.5])["relative_change"] is None
    assert relative_change([None], [1.0]) == {"before": None, "after": None, "relative_change": None, "n": 0}


def test_suffix_and_probe_input():
    assert with_suffix([{"output": "Hi. "}])[0]["output"] == "Hi. " .rstrip() + " " + SUFFIX
    singles, pairs = records_from_lines([
        {"study": {"slug": "s", "kind": "pairwise_alignment"}},
        {"item_id": "i1", "input": "q", "reference": "r",
         "candidates": [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}]},
        {"id": "r2", "input": "q", "output": "o", "reference": "r"},
    ])
    assert [s.get("id") for s in singles] == ["i1:a", "i1:b", "r2"] and len(pairs) == 1
    with pytest.raises(ValueError, match="exactly 2"):
        records_from_lines([{"item_id": "x", "reference": "r", "candidates": [{"id": "a", "text": "A"}]}])
