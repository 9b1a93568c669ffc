"""Submitting and editing the answers of one assignment.

- `submit` stores every question's judgment in one transaction, marks the assignment
  complete and bumps Item.n_completed. It is idempotent: the assignment row is locked, and
  a repeat (double-click, retry after a network error) returns the stored judgments
  unchanged, so the first value stands.
- `edit` is the separate, explicit action that replaces values, allowed while the item
  is not complete (n_completed < annotations_per_item), the study is not paused or closed,
  and (for a participant) before they completed the study; every change is written to the
  AuditLog with the values before and after.
- a participant's stored `seconds` is min(what the page reported, the time since the item
  was handed out) (`stored_seconds`); the submit's one read already has both.
- `skip` ("I can't judge this") closes the assignment without answers: one judgment row
  with question `_skip` (value = the reason, comment kept), the slot goes back to the
  pool and the item is never served to this annotator again. Idempotent.
- `extend` moves an open assignment's expiry one timeout later, once (MAX_EXTENSIONS),
  so an annotator who needs more time keeps the item without hoarding it.
"""
import math
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Value
from django.utils import timezone

from annotate.access import NotAllowed, access_flags
from annotate.desk.assignment import ITEM_FIELDS
from annotate.desk.blinding import blinding_for
from annotate.desk.display import study_questions
from annotate.desk.ordering import judgment_shown_order
from annotate.kinds import assignment_item, get_kind, study_config
from annotate.models import CLOSED, PAUSED, Assignment, AuditLog, Item, Judgment, Participant, Study
from annotate.prepared import Prepared, columns, instance
from annotate.studies.answers import SKIP, InvalidAnswer, answer_value, is_empty
from annotate.studies.json_lines import unstorable_text
from evaluation.vocabulary import SKIP_QUESTION

EDIT_ACTION = "judgment.edit"
COMPLETED = "you completed this study; its answers can no longer change"
MAX_COMMENT_CHARS = 2000
MAX_EXTENSIONS = 1


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
    """{question id: stored value} for `answers` (each checked by annotate.studies.answers); every
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
    if not partial:
        screen_check(study, item_data, values, questions)
    return values


def screen_check(study, item_data, values, questions=None):
    """The kind's rule across one screen's answers (StudyKind.answers_error: best != worst);
    SubmissionError when they cannot stand together."""
    questions = questions or {q["id"]: q for q in study_questions(study, item_data)}
    errors = get_kind(study.kind).answers_error(values, questions, item_data)
    if errors:
        raise SubmissionError(errors)


def checked_answers(assignment, answers, blinded, partial=False):
    """validate_answers for one assignment. `blinded` (the annotator doors): `answers` use
    the assignment's tokens (annotate.desk.blinding); they are turned into real ids first, and
    errors come back keyed as the annotator sent them."""
    study, data = assignment.study, assignment_item(assignment)  # an item's shown pair only
    if not blinded:
        return validate_answers(study, data, answers, partial)
    if not isinstance(answers, dict):
        raise SubmissionError({"answers": "must be an object {question: value}"})
    blinding = blinding_for(assignment)
    real, errors = blinding.unblind(answers, study_questions(study, data))
    try:
        values = validate_answers(study, data, real, partial)
    except SubmissionError as exc:
        errors = {**blinding.errors(exc.errors), **errors}
        values = {}
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


MAX_COUNT = 10000


def parse_count(name, raw):
    """A page's count of pastes or focus losses (`name`): None when not reported (an API
    client, a page without free text), else a whole number from 0 to MAX_COUNT."""
    if raw is None or raw == "":
        return None
    try:
        value = int(raw) if not isinstance(raw, (bool, float)) else None
    except (TypeError, ValueError):
        value = None
    if value is None or not 0 <= value <= MAX_COUNT:
        raise SubmissionError({name: f"must be a whole number from 0 to {MAX_COUNT}"})
    return value


def parse_comment(raw):
    """The optional free-text comment on an item: stripped text, at most MAX_COMMENT_CHARS."""
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise SubmissionError({"comment": "must be text"})
    comment = raw.strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise SubmissionError({"comment": f"must be at most {MAX_COMMENT_CHARS} characters"})
    if unstorable_text(comment):
        raise SubmissionError({"comment": "contains characters that cannot be stored"})
    return comment


def checked_comment(study, raw):
    """parse_comment, then the study kind's rule (a required review, or none taken)."""
    comment = parse_comment(raw)
    reason = get_kind(study.kind).comment_error(study_config(study), comment)
    if reason:
        raise SubmissionError({"comment": reason})
    return comment


def stored_judgments(assignment):
    """The judgments of an assignment's (item, annotator), in question order of storage: a
    first showing's, or a test-retest repeat's own (`repeat_of` set)."""
    return list(Judgment.objects.filter(item_id=assignment.item_id, annotator_id=assignment.annotator_id,
                                        repeat_of__isnull=not assignment.repeat_of_id).order_by("id"))


def first_answers(assignment) -> dict:
    """{question: id of the first answer} that a repeat's judgments repeat ({} for a first
    showing); "" maps to the first answer of any question (a question the first lacked)."""
    if not assignment.repeat_of_id:
        return {}
    firsts = dict(Judgment.objects.filter(item_id=assignment.item_id, annotator_id=assignment.annotator_id,
                                          repeat_of__isnull=True).order_by("-id").values_list("question", "id"))
    return {**firsts, "": min(firsts.values(), default=None)}


def _seat_flags(user_id) -> dict:
    """Whether the assignment's annotator is a participant of its study, and one who
    completed it, as SQL expressions for the statement that reads the assignment."""
    seat = Participant.objects.filter(study=OuterRef("study_id"), user=user_id)
    return {"participant": Exists(seat), "participant_finished": Exists(seat.filter(finished_at__isnull=False))}


def _locked_assignment(assignment_id, user):
    """The user's assignment, locked, with its study and item (edit, skip, extend); the
    access decision and the annotator's participant flags come from the same statement."""
    flags = access_flags(user.pk, user.is_superuser, study="study_id")
    assignment = (Assignment.objects.select_for_update(of=("self",)).select_related("study", "item")
                  .filter(pk=assignment_id, annotator=user)
                  .annotate(may_annotate=flags["may_annotate"] if user.is_authenticated else Value(False),
                            **_seat_flags(user.pk)).first())
    if assignment is None:
        raise AssignmentGone(f"assignment {assignment_id} is not open for {user}")
    if not assignment.may_annotate:  # e.g. removed from the study's list since
        raise NotAllowed(f"{user} may no longer annotate {assignment.study.slug}")
    return assignment


# --- submit: one read, then one write ----------------------------------------------------------

def _submit_read_statement(assignment_id, user_id, superuser, study_id):
    """The user's assignment with its study and item and (unless the request decided it
    already: `study_id` given) whether they may still annotate the study."""
    rows = Assignment.objects.filter(pk=assignment_id, annotator=user_id).order_by().annotate(**_seat_flags(user_id))
    names = [*columns(Assignment), *columns(Study, "study__"), *(f"item__{f}" for f in ITEM_FIELDS),
             "participant", "participant_finished"]
    if study_id is None:
        rows = rows.annotate(may_annotate=access_flags(user_id, superuser, study="study_id")["may_annotate"])
        names.append("may_annotate")
    else:
        rows = rows.filter(study=study_id)
    return rows.values(*names)


SUBMIT_READ = Prepared(_submit_read_statement)

# PostgreSQL: claim the assignment, store the answers and count the item as one more
# completed in one statement (autocommit: its own transaction). The claim's re-check of
# completed_at on the locked row is what makes a double submit store once.
STORE_PG = """WITH claim AS (
    UPDATE annotate_assignment SET completed_at = %s, seconds = %s
    WHERE id = %s AND completed_at IS NULL AND NOT skipped RETURNING item_id
), stored AS (
    INSERT INTO annotate_judgment (study_id, item_id, assignment_id, annotator_id, question, value, shown_order,
                                   seconds, submitted_at, comment, pastes, focus_losses, repeat_of_id)
    SELECT %s, claim.item_id, %s, %s, answer.question, answer.value, answer.shown_order, %s, %s, %s, %s, %s,
           answer.repeat_of
    FROM claim CROSS JOIN (VALUES {answers}) AS answer (question, value, shown_order, repeat_of)
)
UPDATE annotate_item SET n_completed = n_completed + %s WHERE id IN (SELECT item_id FROM claim) RETURNING n_completed"""
# A test-retest repeat (annotate/desk/retest.py) stores its judgments with `repeat_of` (the
# first answer of the same question) and adds 0 to the item's count: it completes nothing.


def _read_for_submit(assignment_id, user, desk=None):
    """The assignment, its study and item, for a submit (AssignmentGone, NotAllowed). A
    `desk` (annotate.desk.assignment.Desk) means the request decided access already: the
    assignment must then belong to the desk's study."""
    row = SUBMIT_READ.first(assignment_id=int(assignment_id), user_id=user.pk, superuser=bool(user.is_superuser),
                            study_id=desk.study.pk if desk else None)
    if row is None:
        raise AssignmentGone(f"assignment {assignment_id} is not open for {user}")
    assignment = instance(Assignment, row)
    assignment.study, assignment.item = instance(Study, row, "study__"), instance(Item, row, "item__", ITEM_FIELDS)
    if desk is None and not row["may_annotate"]:  # e.g. removed from the study's list since
        raise NotAllowed(f"{user} may no longer annotate {assignment.study.slug}")
    assignment.participant, assignment.participant_finished = row["participant"], row["participant_finished"]
    return assignment


def _store(assignment, judgments, now, seconds):
    """Claims the assignment and stores its judgments; the item's new n_completed, or None
    when another request completed, skipped or reclaimed it first (nothing written)."""
    if connection.vendor == "postgresql":
        answers = ", ".join(["(%s, %s, %s, CAST(%s AS bigint))"] * len(judgments))
        first = judgments[0]
        params = [now, seconds, assignment.pk, first.study_id, assignment.pk, first.annotator_id, seconds, now,
                  first.comment, first.pastes, first.focus_losses]
        for judgment in judgments:
            params += [judgment.question, judgment.value, judgment.shown_order, judgment.repeat_of_id]
        params.append(0 if assignment.repeat_of_id else 1)
        with connection.cursor() as cursor:
            cursor.execute(STORE_PG.format(answers=answers), params)
            row = cursor.fetchone()
        return row[0] if row else None
    with transaction.atomic():
        claimed = (Assignment.objects.filter(pk=assignment.pk, completed_at__isnull=True, skipped=False)
                   .update(completed_at=now, seconds=seconds))
        if not claimed:
            return None
        Judgment.objects.bulk_create(judgments)
        if assignment.repeat_of_id:  # a repeat completes nothing
            return assignment.item.n_completed
        Item.objects.filter(pk=assignment.item_id).update(n_completed=F("n_completed") + 1)
        return assignment.item.n_completed + 1  # at least; what the annotator's page shows


def submit(assignment_id, user, answers, seconds=None, now=None, comment=None, blinded=False, desk=None,
           pastes=None, focus_losses=None):
    """Stores the answers of one assignment. Returns (assignment, judgments, created);
    `created` is False when the assignment had already been submitted (nothing changed).
    `seconds` None falls back to the time since the item was handed out. `comment`, the
    annotator's optional note, is stored on every judgment of the item, and so are the
    page's `pastes` and `focus_losses` on its free-text fields (parse_count). `blinded`:
    answers in the annotator's tokens (checked_answers). `desk`: the request's access
    decision, when it made one (see _read_for_submit)."""
    now = now or timezone.now()
    assignment = _read_for_submit(assignment_id, user, desk)
    if assignment.skipped:
        raise AssignmentGone(f"assignment {assignment_id} was skipped")
    if assignment.completed_at is not None:
        return assignment, stored_judgments(assignment), False
    if assignment.participant_finished:
        raise EditNotAllowed(COMPLETED)
    values = checked_answers(assignment, answers, blinded)
    comment = checked_comment(assignment.study, comment)
    seconds = stored_seconds(assignment, parse_seconds(seconds), now)
    counts = {"pastes": parse_count("pastes", pastes), "focus_losses": parse_count("focus_losses", focus_losses)}
    firsts = first_answers(assignment)
    judgments = [Judgment(study_id=assignment.study_id, item_id=assignment.item_id, assignment=assignment,
                          annotator_id=user.pk, question=qid, value=value,
                          shown_order=judgment_shown_order(assignment.shown_order, qid), seconds=seconds,
                          submitted_at=now, comment=comment, repeat_of_id=firsts.get(qid, firsts.get("")),
                          **counts)
                 for qid, value in values.items()]
    n_completed = _store(assignment, judgments, now, seconds)
    if n_completed is None:  # a double submit (or a skip, or a reclaim) came first
        assignment = _read_for_submit(assignment_id, user, desk)
        if assignment.skipped or assignment.completed_at is None:
            raise AssignmentGone(f"assignment {assignment_id} was skipped or reclaimed")
        return assignment, stored_judgments(assignment), False
    assignment.completed_at, assignment.seconds = now, seconds
    assignment.item.n_completed = n_completed
    return assignment, judgments, True


def stored_seconds(assignment, reported, now):
    """The seconds stored for an answer: what the page reported, or the time since the item
    was handed out when it reported nothing; a participant's never more than that time
    (a page cannot claim 30 s for an item answered after 0.2)."""
    elapsed = max(0.0, (now - assignment.created_at).total_seconds())
    if reported is None:
        return elapsed
    return min(reported, elapsed) if getattr(assignment, "participant", False) else reported


def can_edit(assignment):
    """True while the assignment is submitted, its item still needs judgments and its study
    is not paused or closed."""
    return (assignment.completed_at is not None and not assignment.skipped
            and assignment.study.status not in (PAUSED, CLOSED)
            and assignment.item.n_completed < assignment.study.annotations_per_item)


def edit(assignment_id, user, answers, comment=None, blinded=False):
    """Replaces the values of some questions (and the comment, when given) of a submitted
    assignment while its item is not complete. Returns (assignment, judgments); logs one AuditLog
    row (values and comment before and after, who, when) when anything changed.
    `blinded`: as in submit."""
    with transaction.atomic():
        assignment = _locked_assignment(assignment_id, user)
        if assignment.completed_at is None or assignment.skipped:
            raise EditNotAllowed("submit the item before editing it")
        study = assignment.study
        if study.status in (PAUSED, CLOSED):
            raise EditNotAllowed(f"the study is {study.status}; answers can no longer be edited")
        if assignment.participant_finished:
            raise EditNotAllowed(COMPLETED)
        item = Item.objects.select_for_update().get(pk=assignment.item_id)
        assignment.item = item
        if not can_edit(assignment):
            raise EditNotAllowed("the item is complete; its answers can no longer be edited")
        if comment is not None and answers == {}:
            values = {}
        else:
            values = checked_answers(assignment, answers, blinded, partial=True)
        new_comment = None if comment is None else checked_comment(assignment.study, comment)
        stored = {j.question: j for j in stored_judgments(assignment)}
        if values:  # the edited screen as a whole (errors keyed as the annotator knows them)
            try:
                screen_check(study, assignment_item(assignment), {**{q: j.value for q, j in stored.items()}, **values})
            except SubmissionError as exc:
                raise SubmissionError(blinding_for(assignment).errors(exc.errors) if blinded else exc.errors) from None
        before, after = {}, {}
        for qid, value in values.items():
            judgment = stored.get(qid)
            if judgment is None or judgment.value == value:
                continue
            before[qid], after[qid] = judgment.value, value
            judgment.value = value
            judgment.save(update_fields=["value"])
        old_comment = next((j.comment for j in stored.values()), "")
        changes = {"values": after} if after else {}
        if new_comment is not None and new_comment != old_comment:
            Judgment.objects.filter(pk__in=[j.pk for j in stored.values()]).update(comment=new_comment)
            changes["comment"] = new_comment
        if changes:
            previous = {"values": before, **({"comment": old_comment} if "comment" in changes else {})}
            AuditLog.objects.create(study=study, user=user, action=EDIT_ACTION, object_type="assignment",
                                    object_id=str(assignment.pk),
                                    before={"item_id": item.item_id, **previous},
                                    after={"item_id": item.item_id, "values": after,
                                           **({"comment": new_comment} if "comment" in changes else {})})
        return assignment, stored_judgments(assignment)


class SkipRefused(Exception):
    """The assignment was already answered: it cannot be skipped any more."""


def skip(assignment_id, user, reason, comment=None, seconds=None, now=None):
    """Closes an assignment as "I can't judge this". Returns (assignment, skip judgment,
    created); a repeat returns the stored skip with created False. Raises SubmissionError
    (bad reason or comment), AssignmentGone, NotAllowed or SkipRefused (already answered)."""
    now = now or timezone.now()
    with transaction.atomic():
        assignment = _locked_assignment(assignment_id, user)
        if assignment.skipped:
            stored = Judgment.objects.get(item_id=assignment.item_id, annotator=user, question=SKIP_QUESTION,
                                          repeat_of__isnull=not assignment.repeat_of_id)
            return assignment, stored, False
        if assignment.completed_at is not None:
            raise SkipRefused("the item was already answered; edit the answers instead")
        if assignment.participant_finished:
            raise EditNotAllowed(COMPLETED)
        try:
            value = answer_value(SKIP, reason)
        except InvalidAnswer:  # the reasons are no secret (unlike option ids): name them
            message = "not answered" if is_empty(reason) else f"must be one of {', '.join(SKIP['options'])}"
            raise SubmissionError({"reason": message}) from None
        comment = parse_comment(comment)
        seconds = stored_seconds(assignment, parse_seconds(seconds), now)
        judgment = Judgment.objects.create(study=assignment.study, item=assignment.item, assignment=assignment,
                                           annotator=user, question=SKIP_QUESTION, value=value, seconds=seconds,
                                           submitted_at=now, comment=comment,
                                           repeat_of_id=first_answers(assignment).get(""))
        assignment.completed_at, assignment.seconds, assignment.skipped = now, seconds, True
        assignment.save(update_fields=["completed_at", "seconds", "skipped"])
        if not assignment.repeat_of_id:  # a repeat took no slot
            Item.objects.filter(pk=assignment.item_id, n_assigned__gt=0).update(n_assigned=F("n_assigned") - 1)
        return assignment, judgment, True


def _extension_minutes(assignment, user) -> int:
    """One study timeout; for a recruited participant still without an answer, only their
    place's hold (annotate/participants/recruitment.py), so extending cannot stretch the hold."""
    from annotate.participants.recruitment import hold_minutes, recruits

    study = assignment.study
    if (assignment.participant and recruits(study)
            and not Assignment.objects.filter(study=study, annotator=user).completed().exists()):
        return min(study.assignment_timeout_minutes, hold_minutes(study))
    return study.assignment_timeout_minutes


def extend(assignment_id, user, now=None):
    """Moves an open assignment's expiry to one study timeout from now, at most
    MAX_EXTENSIONS times. Returns (assignment, extended): extended False when the limit
    was reached (nothing changed, so a repeated click is harmless). Raises AssignmentGone
    when the assignment is not the user's open one (expired, reclaimed, answered, skipped)."""
    now = now or timezone.now()
    with transaction.atomic():
        assignment = _locked_assignment(assignment_id, user)
        if assignment.completed_at is not None or assignment.expires_at is None or assignment.expires_at <= now:
            raise AssignmentGone(f"assignment {assignment_id} is not open")
        if assignment.extensions >= MAX_EXTENSIONS:
            return assignment, False
        assignment.expires_at = now + timedelta(minutes=_extension_minutes(assignment, user))
        assignment.extensions += 1
        assignment.save(update_fields=["expires_at", "extensions"])
        return assignment, True
