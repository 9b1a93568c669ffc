"""A reference-based pairwise LLM judge: which of two responses is closer to the user's
expected output. Used by the order-swap robustness probe. Prompt wording is ours."""
import re

from models_runtime.backends.base import SamplingParams

from .steps import generate

PROMPT = (
    "The user wrote the expected output below themselves. Which response is closer to it in "
    "content and writing style? Answer with one letter: A or B.\n\n"
    "Request: {input}\n\nExpected output: {reference}\n\nResponse A: {a}\n\nResponse B: {b}\n\nAnswer:"
)
_LETTER = re.compile(r"\b(?:response\s+|plot\s+)?([AB])\b", re.I)


def prompt(record, first, second):
    return [{"role": "user", "content": PROMPT.format(input=record.get("input", ""), reference=record["reference"],
                                                     a=first["text"], b=second["text"])}]


def parse_letter(text):
    """'A' / 'B' from an answer ("B", "Response A.", "**A**"); None when absent or both."""
    letters = {m.group(1).upper() for m in _LETTER.finditer(text or "")}
    return letters.pop() if len(letters) == 1 else None


def pairwise_choices(records, backend, swapped=False, max_new_tokens=4, batched=True):
    """Per record {"input", "reference", "candidates": [c0, c1]}: the chosen candidate id, or
    None when unparseable. `swapped` shows c1 as Response A."""
    prompts, orders = [], []
    for r in records:
        order = list(reversed(r["candidates"])) if swapped else list(r["candidates"])
        orders.append(order)
        prompts.append(prompt(r, order[0], order[1]))
    texts = generate(backend, prompts, SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0), batched)
    picks = []
    for order, text in zip(orders, texts):
        letter = parse_letter(text)
        picks.append(None if letter is None else order["AB".index(letter)]["id"])
    return picks
