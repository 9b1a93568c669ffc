"""The comprehension check: a flow step after the instructions (issue 31, item 7).

A study header's `comprehension` lists multiple-choice questions about the instructions,
each with its right `answer`: [{"key", "question", "options": [...], "answer"}]. Prolific's
policy on comprehension checks: they come at the start, before any real work, and a
participant gets at least two attempts. So a participant who gets any answer wrong sees
the instructions again with "one more attempt"; a second failed attempt screens them out
with the study's screen-out code (or the platform's return instruction), never a dead end
and never the completion code. The participant's attempts and when they passed are kept
on the Participant (participants.csv `status` screened_out).
"""
from __future__ import annotations

ATTEMPTS = 2
KEYS = {"key", "question", "options", "answer"}


def comprehension_flaw(questions, key_re, max_chars: int) -> str | None:
    """Why a `comprehension` header value is invalid, or None."""
    if not isinstance(questions, list) or not questions:
        return "must be a non-empty list of {key, question, options, answer}"
    keys = set()
    for n, q in enumerate(questions, 1):
        if not isinstance(q, dict) or set(q) != KEYS:
            return f"question {n} must be an object with exactly key, question, options and answer"
        if not (isinstance(q["key"], str) and key_re.match(q["key"])) or q["key"] in keys:
            return f"question {n}: 'key' must be 1-64 letters, digits, '-' or '_', unique"
        keys.add(q["key"])
        if not (isinstance(q["question"], str) and q["question"].strip() and len(q["question"]) <= 1000):
            return f"question {n}: 'question' must be a non-empty string of at most 1000 characters"
        options = q["options"]
        if not (isinstance(options, list) and len(options) >= 2 and len(set(map(str, options))) == len(options)
                and all(isinstance(o, str) and o.strip() and len(o) <= max_chars for o in options)):
            return f"question {n}: 'options' must be at least two distinct non-empty strings"
        if q["answer"] not in options:
            return f"question {n}: 'answer' must be one of its options"
    return None


def wrong_answers(questions: list[dict], post) -> list[str]:
    """The keys of the questions answered wrongly (or not at all) in form `post`."""
    return [q["key"] for q in questions if post.get(q["key"]) != q["answer"]]


def questions_shown(questions: list[dict]) -> list[dict]:
    """The questions as the page shows them: never the answer (it is in the HTML otherwise)."""
    return [{"key": q["key"], "question": q["question"], "type": "choice", "options": q["options"]}
            for q in questions]
