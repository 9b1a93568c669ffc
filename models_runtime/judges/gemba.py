"""GEMBA-style direct assessment: one judge call per record at temperature 0, the parsed
0-100 score. The prompt is our own reference-based wording (not the GEMBA paper's)."""
from models_runtime.backends.base import SamplingParams

from .json_parsing import ParseError
from .score_text import parse_score
from .steps import generate

PROMPT = (
    "Score how close the response is to the expected output written by the user, in both "
    "content and writing style, on a scale from 0 (nothing in common) to 100 (says the same "
    "things the same way). Answer with the score only.\n\n"
    "Request: {input}\n\nExpected output: {reference}\n\nResponse: {output}\n\nScore:"
)
LOW, HIGH = 0, 100


def prompt(record):
    return [{"role": "user", "content": PROMPT.format(input=record.get("input", ""),
                                                     reference=record["reference"], output=record["output"])}]


def direct_scores(backend, prompts, low, high, max_new_tokens=8, batched=True):
    """-> the parsed score in [low, high] of each prompt's greedy answer, or None
    (unparseable); all in one backend call. GEMBA's direct assessment, also used by the
    essay_quality judge."""
    texts = generate(backend, prompts, SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0), batched)
    scores = []
    for text in texts:
        try:
            scores.append(parse_score(text, low, high))
        except ParseError:
            scores.append(None)
    return scores


def gemba_scores(records, backend, max_new_tokens=8, batched=True):
    """-> one float in [0, 100] or None (unparseable) per record; all in one backend call."""
    return direct_scores(backend, [prompt(r) for r in records], LOW, HIGH, max_new_tokens, batched)
