"""Submitting and editing the answers of one assignment.

- `submit` stores every question's judgment in one transaction, marks the assignment
  complete and bumps Item.n_completed. It is idempotent: the assignment row is locked, and
  a repeat (double-click, retry after a network error) returns the stored judgments
  unchanged, so the first value stands.
- `edit` is the separate, explicit action that replaces values, allowed while the item
  is not complete (n_completed < annotations_per_item); every change is written to the
  AuditLog with the values before and after.
"""
import math

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from . import report_cache
from .access import NotAllowed, may_annotate
from .answers import InvalidAnswer, answer_value, is_empty
from .display import study_questions
from .models import Assignment, AuditLog, Item, Judgment
from .ordering import judgment_shown_order

EDIT_ACTION = "judgment.edit"


class SubmissionError(Exception):
    """Invalid answers; `errors` maps a question id (or "seconds"/"answers") to a message."""

    def __init__(self, errors):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))


class AssignmentGone(Exception):
    """No such open assignment for this user (never theirs, or expired and reclaimed)."""


class EditNotAllowed(Exception):
    """The answer cannot be edited (not submitted yet, or the item is complete)."""


def validate_answers(study, item_data, answers, partial=False):
    """{question id: stored value} for `answers` (each checked by annotate.answers); every
    question must be answered unless `partial` (edits), and no unknown question may
    appear. Raises SubmissionError."""
    if not isinstance(answers, dict):
        raise SubmissionError({"answers": "must be an object {question: value}"})
    questions = {q["id"]: q for q in study_questions(study, item_data)}
    errors, values = {}, {}
    for qid in answers:
        if qid not in questions:
            errors[qid] = "unknown question"
    for qid, question in questions.items():
        if is_empty(answers.get(qid)):
            if not partial:
                errors[qid] = "not answered"
            continue
        try:
            values[qid] = answer_value(question, answers[qid])
        except InvalidAnswer as exc:
            errors[qid] = exc.for_annotator
    if partial and not values and not errors:
        errors["answers"] = "nothing to change"
    if errors:
        raise SubmissionError(errors)
    return values


def parse_seconds(raw):
    """Seconds on the item as a non-negative finite float, None when not given."""
    if raw in (None, ""):
        return None
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        raise SubmissionError({"seconds": "must be a number"}) from None
    if not math.isfinite(seconds) or seconds < 0:
        raise SubmissionError({"seconds": "must be a non-negative number"})
    return seconds


def stored_judgments(assignment):
    """The judgments of an assignment's (item, annotator), in question order of storage."""
    return list(Judgment.objects.filter(item_id=assignment.item_id, annotator_id=assignment.annotator_id)
                .order_by("id"))


def _locked_assignment(assignment_id, user):
    assignment = (Assignment.objects.select_for_update(of=("self",)).select_related("study", "item")
                  .filter(pk=assignment_id, annotator=user).first())
    if assignment is None:
        raise AssignmentGone(f"assignment {assignment_id} is not open for {user}")
    if not may_annotate(user, assignment.study):  # e.g. removed from the study's list since
        raise NotAllowed(f"{user} may no longer annotate {assignment.study.slug}")
    return assignment


def submit(assignment_id, user, answers, seconds=None, now=None):
    """Stores the answers of one assignment. Returns (assignment, judgments, created);
    `created` is False when the assignment had already been submitted (nothing changed).
    `seconds` None falls back to the time since the item was handed out."""
    now = now or timezone.now()
    with transaction.atomic():
        assignment = _locked_assignment(assignment_id, user)
        if assignment.completed_at is not None:
            return assignment, stored_judgments(assignment), False
        study, item = assignment.study, assignment.item
        values = validate_answers(study, item.data, answers)
        seconds = parse_seconds(seconds)
        if seconds is None:
            seconds = max(0.0, (now - assignment.created_at).total_seconds())
        judgments = Judgment.objects.bulk_create([
            Judgment(study=study, item=item, assignment=assignment, annotator=user, question=qid, value=value,
                     shown_order=judgment_shown_order(assignment.shown_order, qid), seconds=seconds,
                     submitted_at=now)
            for qid, value in values.items()
        ])
        assignment.completed_at, assignment.seconds = now, seconds
        assignment.save(update_fields=["completed_at", "seconds"])
        Item.objects.filter(pk=item.pk).update(n_completed=F("n_completed") + 1)
        return assignment, judgments, True


def can_edit(assignment):
    """True while the assignment is submitted and its item still needs judgments."""
    return (assignment.completed_at is not None
            and assignment.item.n_completed < assignment.study.annotations_per_item)


def edit(assignment_id, user, answers):
    """Replaces the values of some questions of a submitted assignment while its item is
    not complete. Returns the judgments; logs one AuditLog row when anything changed."""
    with transaction.atomic():
        assignment = _locked_assignment(assignment_id, user)
        if assignment.completed_at is None:
            raise EditNotAllowed("submit the item before editing it")
        study = assignment.study
        item = Item.objects.select_for_update().get(pk=assignment.item_id)
        assignment.item = item
        if not can_edit(assignment):
            raise EditNotAllowed("the item is complete; its answers can no longer be edited")
        values = validate_answers(study, item.data, answers, partial=True)
        stored = {j.question: j for j in stored_judgments(assignment)}
        before, after = {}, {}
        for qid, value in values.items():
            judgment = stored.get(qid)
            if judgment is None or judgment.value == value:
                continue
            before[qid], after[qid] = judgment.value, value
            judgment.value = value
            judgment.save(update_fields=["value"])
        if after:
            report_cache.touch(study.pk)
            AuditLog.objects.create(study=study, user=user, action=EDIT_ACTION, object_type="assignment",
                                    object_id=str(assignment.pk),
                                    before={"item_id": item.item_id, "values": before},
                                    after={"item_id": item.item_id, "values": after})
        return stored_judgments(assignment)
