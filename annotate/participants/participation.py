"""Participants from recruiting platforms (interfaces.md; docs/running-a-study.md).

A participant link `/p/<slug>/<entry_key>/?PROLIFIC_PID=..` (or MTurk's workerId, or a
generic pid; only in a study that recruits: annotate/participants/recruitment.py) creates or resumes
the user `<platform>:<id>` and its Participant row for that study, bound to the platform
session of the first visit. The study flow is a fixed sequence of steps; `next_step` says
where a participant is, from what is stored on the Participant (so a reload or a new device
resumes it):

    consent -> instructions -> comprehension -> pre -> practice -> items -> post -> done
                                    |                          |-> screenout (no item or place, nothing answered)
                                    `-> screenout (failed twice: annotate/comprehension.py)    `-> screenout
                                                               (quality_gate: flagged at the end)

A step with nothing to show (no consent text, no practice items, ...) is passed over.
The same steps drive the preview (annotate/participants/views.py), which keeps its
state in the session instead and writes nothing.
"""
from __future__ import annotations

import hmac
import math
import re
import secrets
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.urls import reverse

from annotate.models import OPEN, SCREENED_OUT, Assignment, Item, Judgment, Participant, Study
from annotate.participants.recruitment import PLATFORM_PARAMS, code_redirect, holds_place, places_left, recruits

ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")  # whole: no trailing newline or space
PARTICIPANT_USERNAME = re.compile(r"^(prolific|mturk|link|pid):[A-Za-z0-9_-]{1,64}\Z")  # their users' names
STEPS = ("consent", "instructions", "comprehension", "pre", "practice", "items", "post", "done")
MAX_TEXT_ANSWER = 2000


class BadLink(ValueError):
    """The link's ids are missing or malformed (answered 400 with the reason)."""


@dataclass
class LinkIds:
    platform: str
    external_id: str
    study_id: str = ""
    session_id: str = ""

    @property
    def username(self) -> str:
        return f"{self.platform}:{self.external_id}"


def link_ids(query, platform: str) -> LinkIds:
    """The participant a link's query string names, with the parameters of the study's
    `platform` (annotate.participants.recruitment.PLATFORM_PARAMS). Raises BadLink for a missing id,
    a missing session id (Prolific's SESSION_ID, MTurk's assignmentId: the first visit is
    bound to it), or any id that is not 1-64 letters, digits, '-' or '_'."""
    who, study, session = PLATFORM_PARAMS[platform]
    values = {}
    for name in (who, study, session):
        value = query.get(name, "")
        required = name == who or (name == session and platform != "link")
        if (required or value) and not (isinstance(value, str) and ID_RE.match(value)):
            if not value:
                raise BadLink(f"the link has no '{name}'")
            raise BadLink(f"'{name}' must be 1-64 letters, digits, '-' or '_'")
        values[name] = value
    return LinkIds(platform, values[who], values[study], values[session])


def join(study: Study, ids: LinkIds, browser_key: str = "", address: str = "") -> tuple[Participant, bool]:
    """(participant, created): creates the participant `ids` in `study`, bound to the
    platform session of this first visit (and, for `link`, to the browser), or returns the
    existing one. The user has no password and no role: the participant row is what lets
    them annotate this one study."""
    User = get_user_model()
    for _ in range(2):  # a concurrent first visit may create the same rows: then read theirs
        try:
            with transaction.atomic():
                user = User.objects.filter(username=ids.username).first()
                if user is None:
                    user = User.objects.create_user(username=ids.username)  # unusable password
                return Participant.objects.get_or_create(
                    study=study, user=user,
                    defaults={"platform": ids.platform, "external_id": ids.external_id,
                              "platform_study_id": ids.study_id, "platform_session_id": ids.session_id,
                              "browser_key": browser_key, "entry_address": address,
                              "seed": secrets.randbelow(2**31)})
        except IntegrityError:
            continue
    raise IntegrityError(f"could not create participant {ids.username}")


def same_session(participant: Participant, ids: LinkIds, browser_key: str) -> bool:
    """Whether a later visit comes from the platform session (or, for `link`, the browser)
    of the participant's first visit."""
    if participant.browser_key:
        return bool(browser_key) and hmac.compare_digest(participant.browser_key, browser_key)
    return hmac.compare_digest(participant.platform_session_id, ids.session_id)


def answered_count(study: Study, user) -> int:
    """Items the user answered in the study (skips are not answers)."""
    return Assignment.objects.filter(study=study, annotator=user).completed().count()


def items_left(study: Study, participant: Participant, answered: int) -> bool:
    """Whether the engine would still hand the participant an item (or has one open for
    them): an open study, their quota of answered items not reached, a place held or one
    left, and an item free for them."""
    user = participant.user
    if Assignment.objects.filter(study=study, annotator=user).open().exists():
        return True
    if study.status != OPEN or participant.finished_at is not None:
        return False
    if study.max_items_per_participant and answered >= study.max_items_per_participant:
        return False
    holding = holds_place(participant.place_taken_at, participant.ended)
    if recruits(study) and not holding and places_left(study) <= 0:
        return False
    return Item.objects.free_for(study, user).exists()


def next_step(study: Study, state: dict, items_left=None) -> str:
    """The step to show: the first one not yet passed. `state` holds consented,
    instructions_seen, comprehension_passed, pre_answers, practice_done, items_done, answered, post_answers,
    finished, screened_out (from a Participant via `participant_state`, or the preview's
    session). `items_left()` says whether items remain (None: the preview's items_done).
    A participant whose items ended with no answer is screened out: no code for no work.
    The instructions are a screen of their own only before pre questions or practice;
    otherwise the task page shows them above the first item, one screen after consent."""
    if state.get("finished"):
        return "done"
    if state.get("screened_out"):
        return "screenout"
    if study.consent and not state.get("consented"):
        return "consent"
    if (study.instructions and (study.pre_questions or study.practice_items or study.comprehension)
            and not state.get("instructions_seen")):
        return "instructions"
    if study.comprehension and not state.get("comprehension_passed"):
        return "comprehension"
    if study.pre_questions and state.get("pre_answers") is None:
        return "pre"
    if state.get("practice_done", 0) < len(study.practice_items):
        return "practice"
    if not state.get("items_done") and (items_left is None or items_left()):
        return "items"
    if not state.get("answered"):
        return "screenout"
    if study.post_questions and state.get("post_answers") is None:
        return "post"
    return "done"


def may_have_items(study: Study, seat: dict) -> bool:
    """Whether a participant's row (`seat`: consented_at, instructions_seen_at,
    comprehension_passed_at, pre_answers, practice_done) has passed every step before the
    items: the engine hands out nothing before (page and API alike)."""
    state = {"consented": seat["consented_at"] is not None,
             "instructions_seen": seat["instructions_seen_at"] is not None,
             "comprehension_passed": seat["comprehension_passed_at"] is not None,
             "pre_answers": seat["pre_answers"], "practice_done": seat["practice_done"]}
    return next_step(study, state, lambda: True) == "items"


def participant_state(participant: Participant) -> dict:
    return {"consented": participant.consented_at is not None,
            "instructions_seen": participant.instructions_seen_at is not None,
            "comprehension_passed": participant.comprehension_passed_at is not None,
            "pre_answers": participant.pre_answers, "practice_done": participant.practice_done,
            "post_answers": participant.post_answers, "finished": participant.finished_at is not None,
            "screened_out": participant.ended == SCREENED_OUT,
            "answered": answered_count(participant.study, participant.user)}


def participant_step(participant: Participant) -> str:
    """Where a participant is in the flow (see next_step)."""
    state = participant_state(participant)
    return next_step(participant.study, state, lambda: items_left(participant.study, participant, state["answered"]))


def question_answers(questions: list, post) -> tuple[dict[str, Any], dict[str, str]]:
    """({key: answer}, {key: error}) for the pre/post `questions` from a form `post`.
    Every question must be answered; choice answers must be one of the options, number
    answers finite numbers (stored as floats), text at most 2000 characters."""
    answers: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for q in questions:
        raw = (post.get(q["key"]) or "").strip()
        if not raw:
            errors[q["key"]] = "Please answer this question."
        elif q["type"] == "choice" and raw not in q["options"]:
            errors[q["key"]] = "Please pick one of the options."
        elif q["type"] == "number":
            try:
                value = float(raw)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                errors[q["key"]] = "Please enter a number."
            else:
                answers[q["key"]] = value
        elif len(raw) > MAX_TEXT_ANSWER:
            errors[q["key"]] = f"Please keep it under {MAX_TEXT_ANSWER} characters."
        else:
            answers[q["key"]] = raw
    return answers, errors


def completion_redirect(study: Study) -> str | None:
    """`<completion_url>?cc=<completion_code>` (added to any query the URL has), or None."""
    return code_redirect(study.completion_url, study.completion_code)


def flow_redirect(scope: str | None, study: Study, user) -> str | None:
    """For a participant session on the task page of `study`: the flow URL when the
    participant is not at the items step (consent not given yet, or nothing left: on
    to the post questions and completion, or the screen-out page), else None. None for
    other sessions."""
    if scope != study.slug:
        return None
    participant = Participant.objects.select_related("study", "user").filter(study=study, user=user).first()
    if participant is None or participant_step(participant) != "items":
        return reverse("participant-flow", kwargs={"slug": study.slug})
    return None


PARTICIPANT_COLUMNS = ("platform", "participant", "study_id", "session_id", "status", "items", "gold_accuracy",
                       "median_seconds", "flagged", "reason", "started_at", "finished_at", "pastes", "focus_losses")


def participant_table(study: Study) -> tuple[list[str], list[list]]:
    """(header, rows) of participants.csv (interfaces.md): the spec's columns, then one
    column per pre question (`pre:<key>`) and post question (`post:<key>`) with the
    participant's answers. items = items completed (gold included, practice never);
    flagged/reason from the study's quality thresholds (annotate/reports/quality.py); pastes and
    focus_losses = totals over their items on free-text fields (empty: never reported), a
    flag to look at, never a reason by itself."""
    from annotate.reports.quality import annotator_quality, flag_reasons

    quality = annotator_quality(study)
    completed = dict(Assignment.objects.filter(study=study).completed().values("annotator_id")
                     .annotate(n=Count("id")).values_list("annotator_id", "n"))
    counts = free_text_counts(study)
    pre = [q["key"] for q in study.pre_questions]
    post = [q["key"] for q in study.post_questions]
    header = [*PARTICIPANT_COLUMNS, *(f"pre:{k}" for k in pre), *(f"post:{k}" for k in post)]
    rows = []
    for p in study.participants.select_related("user").order_by("started_at", "id"):
        q = quality.get(p.user.username, {})
        reason = flag_reasons(q, study.quality or {})
        rows.append([p.platform, p.external_id, p.platform_study_id, p.platform_session_id, p.status,
                     completed.get(p.user_id, 0), _number(q.get("gold_accuracy")), _number(q.get("median_seconds")),
                     "true" if reason else "false", reason, _when(p.started_at), _when(p.finished_at),
                     *counts.get(p.user_id, ("", "")),
                     *((p.pre_answers or {}).get(k, "") for k in pre),
                     *((p.post_answers or {}).get(k, "") for k in post)])
    return header, rows


def free_text_counts(study: Study) -> dict[int, tuple[int, int]]:
    """{annotator id: (pastes, focus losses)} summed over their items (each item once: the
    counts are stored on every judgment of the item), for those whose page reported them."""
    per_item = (Judgment.objects.filter(study=study, pastes__isnull=False, repeat_of__isnull=True)
                .values("annotator_id", "assignment_id")
                .annotate(p=Max("pastes"), f=Max("focus_losses")).values_list("annotator_id", "p", "f"))
    totals: dict[int, tuple[int, int]] = {}
    for annotator, pastes, losses in per_item:
        before = totals.get(annotator, (0, 0))
        totals[annotator] = (before[0] + pastes, before[1] + (losses or 0))
    return totals


def _number(value) -> str:
    return "" if value is None else f"{value:.4g}"


def _when(value) -> str:
    return value.isoformat() if value else ""
