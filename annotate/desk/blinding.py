"""Blinding: an annotator sees opaque per-assignment tokens, never a candidate id (a model
name), a similarity pair id or an item id (docs/reliability.md, threat model).

Each assignment gets, when it is handed out, a mapping stored in `Assignment.blind`:
{"item": handle, "options": {token: candidate id}, "questions": {token: pair id}}. A token
is an HMAC of (assignment id, role, real id) under a key derived from SECRET_KEY: stable
for the assignment, unguessable, different for every annotator. Which ids are hidden is
decided here for every kind at once: every option of a choice question except `tie`,
and the question ids of kinds with `blind_question_ids` (similarity pairs); study-level
question ids (`choice`, `usefulness`, aspect keys) stay readable. Where a kind's display
shows an id, the kind itself swaps it for its token (`StudyKind.blind_display`).

The annotator doors (task page, REST assignments) show tokens and take tokens back:
`unblind` turns an answer into real ids before the one answer validator
(annotate.studies.answers) runs, and refuses a real id where a token is expected. Judgments,
exports and reports keep the real ids.
"""
import hashlib
import hmac

from annotate.kinds import assignment_item, get_kind, study_config
from annotate.models import Assignment
from annotate.secrets import secret
from annotate.studies.answers import OPTION_REFUSED, is_empty
from evaluation.screens.answer_checks import RANK_SEP, TIE_SEP, order_groups, order_text
from evaluation.vocabulary import TIE

TOKEN_HEX = 12  # 48 bits; hex digits, so a token never spells a word such as "gold"
ITEM, OPTION, QUESTION = "i", "o", "q"  # token prefixes
ORDER_SEPS = (RANK_SEP, TIE_SEP)


def make_token(assignment_pk: int, role: str, real) -> str:
    """The token of `real` (an id of `role`) in one assignment."""
    message = f"{assignment_pk}\x1f{role}\x1f{real}".encode()
    return role + hmac.new(secret("blind"), message, hashlib.sha256).hexdigest()[:TOKEN_HEX]


def build_mapping(assignment, questions: list[dict]) -> dict:
    """The token mapping of a new assignment; `questions` are the item's questions."""
    pk = assignment.pk
    options = sorted({str(o) for q in questions for o in q.get("options", ()) if o != TIE})
    hidden_questions = ([q["id"] for q in questions]
                        if get_kind(assignment.study.kind).blind_question_ids else [])
    mapping = {"item": make_token(pk, ITEM, assignment.item_id),
               "options": {make_token(pk, OPTION, o): o for o in options},
               "questions": {make_token(pk, QUESTION, q): q for q in hidden_questions}}
    if len(mapping["options"]) != len(options) or len(mapping["questions"]) != len(hidden_questions):
        raise RuntimeError(f"token collision in assignment {pk}")  # 48-bit tokens: never in practice
    return mapping


class Blinding:
    """One assignment's token mapping, both ways."""

    def __init__(self, mapping: dict):
        self.item = mapping.get("item", "")
        self.options = dict(mapping.get("options") or {})  # token -> real
        self.questions = dict(mapping.get("questions") or {})
        self.option_tokens = {real: token for token, real in self.options.items()}
        self.question_tokens = {real: token for token, real in self.questions.items()}

    def option(self, real: str) -> str:
        return self.option_tokens.get(real, real)  # `tie` (and ratings) stay as they are

    def question(self, real: str) -> str:
        return self.question_tokens.get(real, real)

    # Out: what the annotator sees ---------------------------------------------------------

    def display(self, kind, shown: dict) -> dict:
        """A kind's display dict with the ids it shows replaced by tokens (the kind knows
        where they are: StudyKind.blind_display)."""
        return kind.blind_display(dict(shown), self)

    def shown_questions(self, questions: list[dict]) -> list[dict]:
        out = []
        for q in questions:
            entry = {**q, "id": self.question(q["id"])}
            if "options" in q:
                entry["options"] = [self.option(o) for o in q["options"]]
            out.append(entry)
        return out

    def answer(self, value: str) -> str:
        """A stored answer as the annotator knows it: an option's token, a full order's
        tokens in its text (`t1>t2=t3`), anything else as it is."""
        if value in self.option_tokens or not isinstance(value, str) or not any(s in value for s in ORDER_SEPS):
            return self.option(value)
        ranks = order_groups(value)
        if any(c not in self.option_tokens for rank in ranks for c in rank):
            return value
        return order_text([[self.option_tokens[c] for c in rank] for rank in ranks])

    def values(self, real_values: dict) -> dict:
        """{question id: value} (stored judgments) as the annotator knows them."""
        return {self.question(q): self.answer(v) for q, v in real_values.items()}

    def errors(self, errors: dict) -> dict:
        """Error messages keyed by the annotator's question keys."""
        return {self.question(k): v for k, v in errors.items()}

    def judgment(self, row: dict) -> dict:
        """A stored judgment (JudgmentSerializer fields) as the annotator knows it."""
        order = row.get("shown_order") or ""
        return {**row, "question": self.question(row["question"]), "value": self.answer(row["value"]),
                "shown_order": "|".join(self.option(o) for o in order.split("|")) if order else ""}

    # In: the annotator's answers -----------------------------------------------------------

    def unblind(self, answers: dict, questions: list[dict]) -> tuple[dict, dict]:
        """(answers with real ids, errors keyed as the annotator sent them). A real pair id
        as a key, or a real candidate id (or anything else but a token or `tie`) as a
        choice, is an error: the annotator's doors take tokens only."""
        option_questions = {q["id"] for q in questions if "options" in q and not q.get("order")}
        order_questions = {q["id"] for q in questions if q.get("order")}
        real, errors = {}, {}
        for key, raw in answers.items():
            if key in self.questions:
                qid = self.questions[key]
            elif key in self.question_tokens:  # a hidden id sent in the clear
                errors[key] = "unknown question"
                continue
            else:
                qid = key  # a readable question id (or an unknown one: the validator says so)
            if qid in order_questions and not is_empty(raw):
                raw = self.unblind_order(raw)
                if raw is None:
                    errors[key] = OPTION_REFUSED
                    continue
            elif qid in option_questions and not is_empty(raw):
                value = raw.strip() if isinstance(raw, str) else None
                if value != TIE and value not in self.options:
                    errors[key] = OPTION_REFUSED
                    continue
                raw = self.options.get(value, value)
            real[qid] = raw
        return real, errors


    def unblind_order(self, raw):
        """A full order of tokens (text `t1>t2=t3` or a list, ties as lists inside it) with
        real ids in the same shape, or None when it holds anything but this assignment's
        option tokens (its completeness is the answer rule's: annotate.studies.answers)."""
        if isinstance(raw, str):
            ranks = order_groups(raw)
            if any(t not in self.options for rank in ranks for t in rank):
                return None
            return order_text([[self.options[t] for t in rank] for rank in ranks])
        if not isinstance(raw, list):
            return None
        out = []
        for entry in raw:
            if isinstance(entry, list):
                if not all(isinstance(t, str) and t in self.options for t in entry):
                    return None
                out.append([self.options[t] for t in entry])
            elif isinstance(entry, str) and entry in self.options:
                out.append(self.options[entry])
            else:
                return None
        return out


def blinding_for(assignment) -> Blinding:
    """The assignment's Blinding; made and stored now for an assignment that has none
    (handed out before blinding existed, or made directly in the database)."""
    if not assignment.blind:
        study = assignment.study
        questions = get_kind(study.kind).questions(study_config(study), assignment_item(assignment))
        assignment.blind = build_mapping(assignment, questions)
        Assignment.objects.filter(pk=assignment.pk).update(blind=assignment.blind)
    return Blinding(assignment.blind)
