"""G-Eval-style scoring: 20 samples at temperature 1 per record, score = mean of the
parsed 1-5 ratings; unparseable samples are dropped and counted. Prompt wording is ours."""
import contextlib

from models_runtime.backends.base import SamplingParams

from .json_parsing import ParseError
from .score_text import parse_score

PROMPT = (
    "You will rate a response against the expected output that the user wrote themselves.\n"
    "Evaluation steps:\n"
    "1. Read the expected output and note its main points and its writing style.\n"
    "2. Read the response and check which points it shares and whether it sounds the same.\n"
    "3. Rate the similarity from 1 (unrelated) to 5 (same content, same style).\n\n"
    "Request: {input}\n\nExpected output: {reference}\n\nResponse: {output}\n\n"
    "Rating (1-5):"
)
LOW, HIGH = 1, 5
SAMPLES = 20


def prompt(record):
    return [{"role": "user", "content": PROMPT.format(input=record.get("input", ""),
                                                     reference=record["reference"], output=record["output"])}]


def geval_details(records, backend, samples=SAMPLES, temperature=1.0, max_new_tokens=8, seed=0):
    """-> per record {"score": mean or None, "parsed": n, "dropped": n}; one backend call
    drawing `samples` generations per prompt."""
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature, n=samples, seed=seed)
    outputs = backend.generate([prompt(r) for r in records], params) if records else []
    details = []
    for gens in outputs:
        values = []
        for gen in gens:
            with contextlib.suppress(ParseError):  # unparsed: dropped and counted below
                values.append(parse_score(gen.text, LOW, HIGH))
        details.append({"score": sum(values) / len(values) if values else None,
                        "parsed": len(values), "dropped": len(gens) - len(values)})
    return details
