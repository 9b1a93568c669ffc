"""ExPerT pipeline with a scripted backend: batching, retries, call counts, the
explanation object, and score arithmetic from fixed decisions."""
import json

import pytest

from models_runtime.backends.base import SamplingParams
from models_runtime.judges.expert import ExpertConfig, corpus_result, explain
from models_runtime.judges.json_parsing import ParseError
from models_runtime.judges.steps import RetryPolicy, run_step
from runtime_judges.scripted import ScriptedBackend

REF = "The pasta was great. Service was slow."
OUT = "Loved the pasta! Prices were high."
ASPECTS = {
    REF: ('```json\n[{"aspect": "Food", "description": "praises the pasta", "evidence": ["The pasta was great."]},\n'
          ' {"aspect": "Service", "description": "slow service", "evidence": ["Service was slow."]},]\n```'),
    OUT: ('[{"aspect": "food", "description": "loves the pasta", "evidence": ["Loved the pasta!"]},'
          ' {"aspect": "Price", "description": "high prices", "evidence": ["Prices were high."]}]'),
}


def pasta_script(text, params, _):
    """Fixed decisions: Food<->food match (content yes, style no); Service and Price match
    nothing. The Price matching answer names an unknown aspect, then is malformed, then
    unknown again, so it ends unmatched after 3 attempts."""
    if text.startswith("You are"):
        text = text.split("\n", 1)[1]
    if "Split the text" in text:
        return next(v for k, v in ASPECTS.items() if text.endswith("Text: " + k))
    if "Is the aspect below" in text:
        aspect = text.split("Aspect: ", 1)[1].split(":", 1)[0]
        if aspect == "Food":
            return '{"reason": "both about food", "is_matched": true, "matched_aspect": " FOOD "}'
        if aspect == "food":
            return "Sure: {'reason': 'same topic', 'is_matched': True, 'matched_aspect': 'Food'}"
        if aspect == "Service":
            return '{"reason": "nothing about service", "is_matched": false, "matched_aspect": ""}'
        return {0.0: '{"reason": "x", "is_matched": true, "matched_aspect": "Parking"}',
                0.5: '{"reason": "x", "is_matched": tru',
                1.0: '{"reason": "x", "is_matched": true, "matched_aspect": "Ambience"}'}[params.temperature]
    if "same thing in content" in text:
        return '{"reason": "both praise the pasta", "is_matched": true}'
    if "same style" in text:
        return '{"reason": "calm vs exclamation", "is_matched": false}'
    raise AssertionError(text)


def test_expert_pipeline_fixed_decisions():
    """Hand-worked: reference aspects {Food, Service}, generated {food, Price}.
    Matches: Food->food (recall), food->Food (precision); content c=1, style s=0.
    AVERAGE e = 0.5c + 0.5s = 0.5: R = 0.5/2 = 0.25, P = 0.5/2 = 0.25, F = 2*.25*.25/.5 = 0.25.
    CONTENT: R = P = 1/2 -> F 0.5; STYLE and AND: 0; OR: 0.5.
    Calls: extraction 2 + matching (Food 1, Service 1, food 1, Price 3) + content 2 + style 2
    (each match its own checks, as the official code) = 12."""
    backend = ScriptedBackend(pasta_script)
    [e] = explain([{"input": "Review the restaurant.", "output": OUT, "reference": REF}], backend)
    assert set(e) == {"score", "precision", "recall", "variants", "aspects_reference", "aspects_generated",
                      "matches", "llm_calls", "checks"}
    assert (e["score"], e["precision"], e["recall"]) == pytest.approx((0.25, 0.25, 0.25))
    assert e["variants"] == pytest.approx({"content": 0.5, "style": 0.0, "and": 0.0, "or": 0.5, "average": 0.25})
    assert [a["aspect"] for a in e["aspects_reference"]] == ["Food", "Service"]
    assert e["aspects_generated"][1] == {"aspect": "Price", "description": "high prices",
                                         "evidence": ["Prices were high."]}
    assert e["matches"] == [
        {"side": "recall", "from": "Food", "to": "food", "reason": "both about food",
         "content_match": True, "content_reason": "both praise the pasta",
         "style_match": False, "style_reason": "calm vs exclamation"},
        {"side": "precision", "from": "food", "to": "Food", "reason": "same topic",
         "content_match": True, "content_reason": "both praise the pasta",
         "style_match": False, "style_reason": "calm vs exclamation"},
    ]
    assert (e["llm_calls"], e["checks"]) == (12, "separate")
    # One batched call per step, plus two retry batches of the one failing prompt.
    assert [n for n, _ in backend.calls] == [2, 4, 1, 1, 2, 2]
    assert [p.temperature for _, p in backend.calls] == [0.0, 0.0, 0.5, 1.0, 0.0, 0.0]
    json.dumps(e)  # the explanation is plain JSON


def check_script(text, params, j):
    """pasta_script, except the content check says yes only when the reference aspect
    (Food) is asked about first, i.e. the order of the two aspects matters."""
    if "same thing in content" in text:
        first = text.split("Aspect 1: ", 1)[1].split(":", 1)[0]
        return '{"reason": "r", "is_matched": %s}' % ("true" if first == "Food" else "false")
    return pasta_script(text, params, j)


def test_checks_are_separate_and_order_reversed_per_side():
    """Issue 13, item 16. Official ExPerT: the recall match Food->food is checked as
    (Food, food), the precision match food->Food as (food, Food). With check_script the
    content answer differs: recall e = 0.5*1 + 0.5*0 = 0.5 -> R = 0.5/2 = 0.25; precision
    e = 0 -> P = 0 -> F = 0, 12 calls. Shared checks (the option): one (Food, food) check
    for both sides -> R = P = 0.25, F = 0.25, 10 calls."""
    record = [{"input": "", "output": OUT, "reference": REF}]
    backend = ScriptedBackend(check_script)
    [e] = explain(record, backend)
    assert (e["recall"], e["precision"], e["score"], e["llm_calls"], e["checks"]) == (0.25, 0.0, 0.0, 12, "separate")
    content = [t for t in backend.seen if "same thing in content" in t]
    assert [t.split("Aspect 1: ", 1)[1].split(":", 1)[0] for t in content] == ["Food", "food"]
    assert [(m["side"], m["content_match"]) for m in e["matches"]] == [("recall", True), ("precision", False)]
    shared = ScriptedBackend(check_script)
    [s] = explain(record, shared, ExpertConfig(shared_checks=True))
    assert (s["recall"], s["precision"], s["score"], s["llm_calls"], s["checks"]) == (0.25, 0.25, 0.25, 10, "shared")
    assert [n for n, _ in shared.calls] == [2, 4, 1, 1, 1, 1]
    assert corpus_result([s])["checks"] == "shared" and corpus_result([e])["llm_calls_per_item"] == 12


def test_all_items_of_a_step_in_one_call_and_corpus_score():
    """Two identical items: both share each step's call, identical prompts are sent once,
    each item is still charged its own 12 calls; corpus score = mean of F = (0.25+0.25)/2."""
    backend = ScriptedBackend(pasta_script)
    records = [{"input": "", "output": OUT, "reference": REF}, {"input": "", "output": OUT, "reference": REF}]
    items = explain(records, backend)
    # Identical prompts are sent once: 2 distinct extraction prompts for 4 slots.
    assert backend.calls[0][0] == 2 and backend.calls[1][0] == 4
    assert [i["llm_calls"] for i in items] == [12, 12]
    result = corpus_result(items)
    assert result["score"] == pytest.approx(0.25) and result["llm_calls"] == 24 and result["llm_calls_per_item"] == 12


def test_unparseable_extraction_gives_empty_side_and_zero_score():
    """Every answer is prose: extraction fails 3 times per side (6 calls), no matching call
    is made against an empty list, and every score is 0."""
    backend = ScriptedBackend(lambda text, params, j: "I cannot do that.")
    [e] = explain([{"input": "", "output": "a", "reference": "b"}], backend, ExpertConfig())
    assert e["aspects_reference"] == [] and e["aspects_generated"] == [] and e["matches"] == []
    assert e["score"] == 0 and e["variants"] == {k: 0 for k in ("content", "style", "and", "or", "average")}
    assert e["llm_calls"] == 6 and [p.temperature for _, p in backend.calls] == [0.0, 0.5, 1.0]


def test_failed_checks_count_as_unmatched():
    """Content and style answers use a wrong key every time -> (False, "") after 2 attempts:
    the matches stay but e = 0, so F = 0. Calls: extraction 2, matching Food 1, Service 1,
    food 1, Price 2 (max_attempts 2), content 2 x 2, style 2 x 2 (two matches) = 15."""
    def script(text, params, j):
        if "same thing in content" in text or "same style" in text:
            return '{"reason": "r", "matched": true}'
        return pasta_script(text, params, j)

    backend = ScriptedBackend(script)
    [e] = explain([{"input": "", "output": OUT, "reference": REF}], backend,
                  ExpertConfig(policy=RetryPolicy(max_attempts=2)))
    assert [(m["content_match"], m["style_match"]) for m in e["matches"]] == [(False, False), (False, False)]
    assert e["score"] == 0 and e["variants"]["or"] == 0
    assert e["llm_calls"] == 15


def test_run_step_retry_policy_and_unbatched_mode():
    answers = iter(["bad", "bad", "3", "ok"])
    backend = ScriptedBackend(lambda text, params, j: next(answers))

    def parse(i, text):
        if not text.isdigit():
            raise ParseError(text)
        return int(text)

    results, attempts = run_step(backend, ["p1", "p2"], parse, SamplingParams(max_new_tokens=4),
                                 RetryPolicy(max_attempts=2, step=0.7), batched=False)
    # p1: "bad", then "3"; p2: "bad", then "ok" -> None after 2 attempts; one call per prompt.
    assert results == [3, None] and attempts == [2, 2]
    assert [(n, p.temperature) for n, p in backend.calls] == [(1, 0.0), (1, 0.0), (1, 0.7), (1, 0.7)]
    assert RetryPolicy(max_attempts=5, step=0.4).temperature(4) == 1.0
