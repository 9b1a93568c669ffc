"""The robust JSON parser on the kinds of mess small models write."""
import pytest

from models_runtime.judges.json_parsing import (
    ParseError,
    as_bool,
    extract_json,
    find_title,
    parse_aspects,
    parse_decision,
    parse_match,
)
from models_runtime.judges.score_text import parse_score


@pytest.mark.parametrize("text, expected", [
    ('[{"a": 1}]', [{"a": 1}]),
    ('Sure! Here it is:\n```json\n{"is_matched": true, "reason": "x"}\n```\nDone.',
     {"is_matched": True, "reason": "x"}),
    ('{"a": [1, 2,], "b": 3,}', {"a": [1, 2], "b": 3}),  # trailing commas
    ("{'reason': 'it's fine', 'is_matched': False}", None),  # unsafe: an apostrophe inside single quotes
    ("{'reason': 'same', 'is_matched': true}", {"reason": "same", "is_matched": True}),  # single quotes, JSON true
    ('noise {not json} then {"x": "a } in a string"}', {"x": "a } in a string"}),
    ('[1, 2] and {"b": 1}', [1, 2]),
])
def test_extract_json(text, expected):
    if expected is None:
        with pytest.raises(ParseError):
            extract_json(text)
    else:
        assert extract_json(text) == expected


def test_extract_json_kind_and_failures():
    assert extract_json('[1] {"k": 2}', "object") == {"k": 2}
    # A Python-literal dict with an unhashable key is not a value: the inner list is taken.
    assert extract_json("{[1]}") == [1] and extract_json("{[1]: 2}") == [1]
    for bad in ["", "no json here", '{"a": ', "[[[", None]:
        with pytest.raises(ParseError):
            extract_json(bad)


@pytest.mark.parametrize("text, expected", [
    # Cut off by the token limit: the incomplete last member is dropped, brackets closed.
    ('[{"aspect": "A", "evidence": ["x"]}, {"aspect": "B", "evid',
     [{"aspect": "A", "evidence": ["x"]}, {"aspect": "B"}]),
    ('JSON:\n{"aspect": "Room", "description": "clean", "evidence": [{"type": "The room wa',
     {"aspect": "Room", "description": "clean"}),
    ('{"reason": "same", "is_matched": true, "matched_aspect": "Fo', {"reason": "same", "is_matched": True}),
])
def test_extract_json_repairs_truncation(text, expected):
    assert extract_json(text) == expected


def test_as_bool():
    assert [as_bool(v) for v in [True, "yes", "True.", 1, "no", 0, "false", "maybe", 2, None]] == \
        [True, True, True, True, False, False, False, None, None, None]


def test_parse_aspects_validates_and_dedupes():
    """A repeated title keeps its last aspect, at its first place, and titles are compared
    case-sensitively: the official code's {x['aspect']: x for x in aspects} (issue 24)."""
    text = ('```json\n[{"aspect": "Food", "description": "likes pasta", "evidence": "The pasta was great."},'
            ' {"aspect": "food", "description": "lower case: another title"}, {"description": "no title"}, "junk",'
            ' {"title": "Service", "evidence": ["Slow.", 3]},'
            ' {"aspect": "Food", "description": "the last Food", "evidence": ["Pasta again."]}]\n```')
    assert parse_aspects(text) == [
        {"aspect": "Food", "description": "the last Food", "evidence": ["Pasta again."]},
        {"aspect": "food", "description": "lower case: another title", "evidence": []},
        {"aspect": "Service", "description": "", "evidence": ["Slow."]},
    ]
    official = {x["aspect"]: x for x in [{"aspect": "Food", "n": 1}, {"aspect": "food", "n": 2},
                                          {"aspect": "Service", "n": 3}, {"aspect": "Food", "n": 4}]}
    assert [(k, v["n"]) for k, v in official.items()] == [("Food", 4), ("food", 2), ("Service", 3)]
    assert parse_aspects('{"aspects": [{"aspect": "X"}]}') == [{"aspect": "X", "description": "", "evidence": []}]
    assert parse_aspects('{"aspect": "X"}') == [{"aspect": "X", "description": "", "evidence": []}]
    for bad in ['{"type": "X"}', "[]", '[{"description": "no title"}]', "aspects: food, service"]:
        with pytest.raises(ParseError):
            parse_aspects(bad)


def test_parse_match_titles_case_insensitive_unknown_is_error():
    titles = ["Food quality", "Service"]
    assert find_title(' "food QUALITY" ', titles) == "Food quality"
    assert find_title("Tone", ["Tone", "tone"]) == "Tone" and find_title("tone", ["Tone", "tone"]) == "tone"
    assert find_title("TONE", ["Tone", "tone"]) is None  # ambiguous ignoring case
    assert parse_match('{"reason": "r", "is_matched": "yes", "matched_aspect": "SERVICE"}', titles) == ("Service", "r")
    assert parse_match('{"reason": "none", "is_matched": false, "matched_aspect": ""}', titles) == (None, "none")
    for bad in ['{"reason": "r", "is_matched": true, "matched_aspect": "Parking"}',  # unknown title
                '{"reason": "r", "matched": true}',  # wrong key
                '{"is_matched": "perhaps"}', "[1, 2]"]:
        with pytest.raises(ParseError):
            parse_match(bad, titles)


def test_parse_decision():
    assert parse_decision('Answer: {"reason": "same facts", "is_matched": true}') == (True, "same facts")
    assert parse_decision('{"is_matched": 0}') == (False, "")
    with pytest.raises(ParseError):
        parse_decision('{"reason": "no decision"}')


@pytest.mark.parametrize("text, low, high, expected", [
    ("Score: 85", 0, 100, 85.0), ('{"score": 4}', 1, 5, 4.0), ("4/5", 1, 5, 4.0), ("Rating: 3.5 stars", 1, 5, 3.5),
    ("I give it 7, no, 2", 1, 5, 2.0), ("0", 0, 100, 0.0),
    # Issue 13, item 3: a restated scale is not the score (statistics.md's examples).
    ("Rating (1-5): 4", 1, 5, 4.0), ("On a scale from 1 to 5, I would rate this a 4.", 1, 5, 4.0),
    ("Score (0 to 100): 72", 0, 100, 72.0), ("covers 2 of the 3 points; score 60", 0, 100, 60.0),
    ("4 out of 5", 1, 5, 4.0), ("Score: 4/5", 1, 5, 4.0), ("Between 1 and 5 I'd say 3", 1, 5, 3.0),
    ("The rating scale is 1-5. My score: 2", 1, 5, 2.0),
])
def test_parse_score(text, low, high, expected):
    assert parse_score(text, low, high) == expected


@pytest.mark.parametrize("text, low, high", [
    ("", 1, 5), ("excellent", 1, 5), ("Score: 150", 0, 100), ("6 out of 10", 1, 5),
    # Only a restated scale or a count: unparsed, never a guess.
    ("Rating (1-5):", 1, 5), ("On a scale of 1 to 5.", 1, 5), ("covers 2 of the 3 points", 0, 100), ("8/10", 1, 5),
])
def test_parse_score_failures(text, low, high):
    with pytest.raises(ParseError):
        parse_score(text, low, high)
