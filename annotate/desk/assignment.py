"""The assignment engine: which item an annotator judges next.

Rules (studies.md, issue 4):
- an annotator gets an item they have never been assigned, that still has a free slot
  (Item.n_assigned < annotations_per_item), preferring items closest to completion so
  items finish instead of every item being half-judged;
- asking again while an assignment is open returns that same assignment;
- an open assignment expires after the study's `assignment_timeout_minutes`; expired ones
  are reclaimed lazily here (deleted, slot returned) under the same row locks;
- gold items are mixed in with probability `gold_rate` (seeded per annotator) and are not
  capped by the overlap: every annotator may see each gold item once, so attention checks
  never take a slot from a real item and never run out;
- only `open` studies hand out new items (a paused or closed study still takes the
  answers of items already handed out);
- participants (annotate/participants/participation.py) get items in their own seeded random order
  among equally full items (Participant.seed) until they answered
  `max_items_per_participant` items (gold included, skips not; practice items are never
  served here), nothing before they passed every step before the items (consent,
  instructions, comprehension check, pre questions, practice: participation.may_have_items),
  nothing after they completed, stopped or were screened out; in a study that recruits,
  their first item also takes a place (annotate/participants/recruitment.py, after the item is locked),
  held only until their first answer (their items expire after `hold_minutes` until then),
  and an item that expires gives the place back (reclaim_expired: the participant timed out).

One request, few statements (issue 27): a request decides access once, in the statement
that reads the study (`desk_for`: the study, the access decision, the participant row and
whether expired assignments wait to be reclaimed). The engine's transaction then locks the
user's row (in that same statement when the request has no desk yet), reads the user's
open assignment and count, locks a free item, reads the item's earlier shown orders, and
stores the assignment; on PostgreSQL the last two also draw the new id and bump the item's
counter, so a new assignment costs BEGIN + 5 statements + COMMIT. The reads are
`annotate.prepared` statements: written with the ORM, compiled once per connection.
An item with more than two candidates (issue 22) shows the pair the whole study has shown
least, so its assignments take turns on the study's row: one statement more (the lock),
and the earlier orders are read with the study's shown pairs (`_store`).

The steps of `_serve`, in order: (1) the user's open assignment, (2) what the study and
the participant allow, (3) gold or not, (4) lock a free item, (5) the order the options
are shown in (`choose_shown_order`: the one replaceable step that decides it from the
item's earlier orders), (6) store.

Concurrency: expired assignments are reclaimed in a transaction of their own. Then the
asking user's row is locked (one request per user at a time, so a double-click cannot
open two assignments), and only then is the user's open assignment read (a statement of
its own: PostgreSQL reads a statement's rows as of its start, before a lock wait). A
candidate item is taken with SELECT ... FOR UPDATE SKIP LOCKED, so simultaneous annotators
each lock a different row and the overlap check is made on the locked, current row. When
every free row is locked by others, the transaction is rolled back and run again in
"patient" mode: it holds only its user row (failed tries are rolled back to a savepoint,
releasing their row locks) and waits for one item by key, so waits cannot form a cycle,
and nobody is told "nothing left" while slots remain. On SQLite `select_for_update` is a
no-op; a process-wide lock serializes the engine there instead (the dev server).
"""
from __future__ import annotations

import json
import logging
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Count, Exists, F, FilteredRelation, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotate.access import NotAllowed, access_flags, refuse
from annotate.access import may_read as reads_results
from annotate.desk.adaptive_pairs import adaptive_shown_order, study_outcomes
from annotate.desk.blinding import blinding_for, build_mapping
from annotate.desk.ordering import item_order_key, item_order_of, seeded_rng, shown_order_for
from annotate.desk.retest import serve_repeat
from annotate.kinds import assignment_item, get_kind, study_config
from annotate.models import OPEN, RETURNED, SCREENED_OUT, TIMED_OUT, Assignment, Item, Participant, Study
from annotate.participants.participation import may_have_items
from annotate.participants.recruitment import HOLDS_PLACE, end, hold_minutes, holds_place, recruits, take_place
from annotate.prepared import Prepared, columns, instance
from annotate.querysets import open_q
from annotate.secrets import secret
from annotate.studies.allocation import is_adaptive

log = logging.getLogger(__name__)
RECLAIM_LIMIT = 500  # expired assignments reclaimed per call, to bound one request's work
_sqlite_lock = threading.Lock()


@contextmanager
def _serialized():
    """A transaction; on SQLite (no row locks) also a process-wide lock."""
    if connection.vendor == "sqlite":
        with _sqlite_lock, transaction.atomic():
            yield
    else:
        with transaction.atomic():
            yield


# --- the desk: one request's study and access decision, in one statement -------------------

# The user's Participant row, when there is one: their order, consent, finish and place.
SEAT_FIELDS = ("id", "seed", "consented_at", "finished_at", "place_taken_at", "ended", "instructions_seen_at",
               "comprehension_passed_at", "pre_answers", "practice_done")


@dataclass
class Desk:
    """What a request of `user` in one study needs before anything else, read by one
    statement: the study (None: no such slug), whether the user may annotate it, the
    user's Participant row (`seat`: id, seed, consented_at; None for staff-made
    annotators) and whether expired assignments wait to be reclaimed. Whether they may
    read its results is asked only of a refused request (404 or 403), by a second query."""

    user: object
    study: Study | None
    may_annotate: bool = False
    seat: dict | None = None
    expired_waiting: bool = False

    @cached_property
    def may_read(self) -> bool:
        return self.study is not None and reads_results(self.user, self.study)

    def refuse(self, purpose: str | None = "annotate") -> None:
        """Raises Http404 / PermissionDenied as annotate.access.refuse says."""
        if self.study is not None and purpose == "annotate" and self.may_annotate:
            return
        refuse(self.study, self.may_annotate, self.may_read, purpose)


def _desk_statement(slug, user_id, now, superuser, lock):
    study = (Study.objects.filter(slug=slug).order_by()
             .annotate(may_annotate=access_flags(user_id, superuser)["may_annotate"],
                       expired_waiting=Exists(Assignment.objects.filter(study=OuterRef("pk")).expired(now)),
                       seat=FilteredRelation("participants", condition=Q(participants__user=user_id))))
    names = [*columns(Study), "may_annotate", "expired_waiting", *(f"seat__{f}" for f in SEAT_FIELDS)]
    if lock:  # the engine's user lock, taken by the same statement
        study = study.annotate(locked=Subquery(get_user_model().objects.filter(pk=user_id)
                                               .select_for_update().values("pk")))
        names.append("locked")
    return study.values(*names)


DESK = Prepared(_desk_statement)


def desk_for(user, slug: str, now=None, lock: bool = False) -> Desk:
    """The request's one access decision (see Desk). `lock` (inside a transaction): also
    lock the user's row, as the engine does first."""
    row = DESK.first(slug=slug, user_id=user.pk, now=now or timezone.now(), superuser=bool(user.is_superuser),
                     lock=lock)
    if row is None:
        return Desk(user, None)
    seat = {f: row[f"seat__{f}"] for f in SEAT_FIELDS} if row["seat__id"] is not None else None
    return Desk(user, instance(Study, row), bool(row["may_annotate"]), seat, bool(row["expired_waiting"]))


# --- the statements of a new assignment -------------------------------------------------------

OPEN_FIELDS = [f.name for f in Assignment._meta.concrete_fields]
ITEM_FIELDS = ["id", "study", "data", "is_gold", "n_completed"]  # what the annotator's doors read of an item


def _lock_user_statement(user_id):
    return get_user_model().objects.filter(pk=user_id).select_for_update().values("pk")


def _mine_statement(study_id, user_id, now):
    """The user's open assignment in the study (with its item), how many items they had
    (the gold draw's seed) and how many they answered (a participant's quota)."""
    theirs = Assignment.objects.filter(study=study_id, annotator=OuterRef("pk")).order_by()
    had = theirs.values("annotator").annotate(n=Count("pk")).values("n")
    answered = theirs.completed().values("annotator").annotate(n=Count("pk")).values("n")
    mine = (get_user_model().objects.filter(pk=user_id).order_by()
            .annotate(had=Coalesce(Subquery(had), 0), answered=Coalesce(Subquery(answered), 0),
                      current=FilteredRelation("assignments", condition=Q(assignments__study=study_id)
                                               & open_q(now, "assignments__"))))
    return mine.values("had", "answered", *(f"current__{f}" for f in OPEN_FIELDS),
                       *(f"current__item__{f}" for f in ITEM_FIELDS))


def _pick_statement(study_id, overlap, user_id, gold, m, c, lock):
    """The first free item (see ItemQuerySet.free_in); gold only while real items remain."""
    order = item_order_key(m, c) if m is not None else None
    items = Item.objects.free_in(study_id, overlap, user_id, gold, order)
    if gold:
        items = items.filter(Exists(Item.objects.free_in(study_id, overlap, user_id)))
    if lock:
        items = items.select_for_update(skip_locked=True, of=("self",))
    return items.values(*ITEM_FIELDS)[:1]


def _previous_statement(item_id):
    return Assignment.objects.filter(item=item_id).order_by("pk").values("shown_order")


LOCK_USER, MINE, PICK, PREVIOUS = (Prepared(_lock_user_statement), Prepared(_mine_statement),
                                   Prepared(_pick_statement), Prepared(_previous_statement))


def _study_pairs(study_id):
    """[(shown candidates, n)] over the study's assignments (the path off PostgreSQL)."""
    return (Assignment.objects.filter(study=study_id).order_by().values_list("shown_order__candidates")
            .annotate(n=Count("pk")))

# PostgreSQL: the new id is drawn with the earlier orders, so the blinding tokens (made
# from the id) are stored by the INSERT itself, which also bumps the item's counter.
PREVIOUS_AND_ID_PG = ("SELECT nextval(pg_get_serial_sequence('annotate_assignment', 'id')), "
                      "(SELECT jsonb_agg(shown_order ORDER BY id) FROM annotate_assignment WHERE item_id = %s)")
# An item with more than two candidates (its kind's `needs_study_pairs`): the pair shown
# depends on what the whole study has shown, so these assignments take turns on the
# study's row (FOR NO KEY UPDATE: it does not block inserts that reference the study),
# and the next statement, which starts after the lock is granted, reads the study's pairs
# as committed. One statement more than a two-candidate item; the item lock comes first.
LOCK_STUDY_PG = "SELECT 1 FROM annotate_study WHERE id = %s FOR NO KEY UPDATE"
PREVIOUS_PAIRS_AND_ID_PG = (
    "SELECT nextval(pg_get_serial_sequence('annotate_assignment', 'id')), "
    "(SELECT jsonb_agg(shown_order ORDER BY id) FROM annotate_assignment WHERE item_id = %s), "
    "(SELECT jsonb_agg(jsonb_build_array(pair, n)) FROM (SELECT shown_order -> 'candidates' AS pair, count(*) AS n "
    "FROM annotate_assignment WHERE study_id = %s GROUP BY 1) AS pairs)")
INSERT_PG = ("WITH bump AS (UPDATE annotate_item SET n_assigned = n_assigned + 1 WHERE id = %s) "
             "INSERT INTO annotate_assignment (id, study_id, item_id, annotator_id, shown_order, blind, created_at, "
             "expires_at, skipped, extensions, probability) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, false, 0, %s)")


def open_assignment(study, user, now=None):
    """The user's open, unexpired assignment in `study`, or None."""
    return (Assignment.objects.filter(study=study, annotator=user).open(now)
            .select_related("item").order_by("id").first())


def reclaim_expired(study, now=None):
    """Deletes open assignments past their expiry and gives their slots back.
    Returns how many were reclaimed. Rows another transaction holds are skipped (it is
    reclaiming or completing them)."""
    now = now or timezone.now()
    expired = list(Assignment.objects.select_for_update(skip_locked=True)
                   .filter(study=study).expired(now)
                   .order_by("id").values_list("id", "item_id", "annotator_id", "repeat_of_id")[:RECLAIM_LIMIT])
    for _, item_id, _, repeat_of in sorted(expired, key=lambda row: row[1]):  # one lock order: no deadlocks
        if repeat_of is None:  # a repeat took no slot
            Item.objects.filter(pk=item_id, n_assigned__gt=0).update(n_assigned=F("n_assigned") - 1)
    if expired:
        Assignment.objects.filter(pk__in=[a for a, _, _, _ in expired]).delete()
        log.info("assignments reclaimed: study=%s expired=%d", study.slug, len(expired))
        # Participants whose item expired time out: their places go back (annotate/participants/recruitment.py).
        holders = Participant.objects.filter(HOLDS_PLACE, user__in={user for _, _, user, _ in expired})
        if recruits(study) and (returned := end(study, holders, TIMED_OUT, now)):
            log.info("places returned: study=%s timed_out=%d", study.slug, returned)
    return len(expired)


class _NoRow(Exception):
    pass


def _first_in_savepoint(queryset):
    """queryset.first() inside a savepoint that is rolled back when no row comes back:
    PostgreSQL keeps row locks taken on rows that then failed the re-check, and rolling
    back the savepoint releases them, so a request never holds an item it did not get."""
    try:
        with transaction.atomic():
            row = queryset.first()
            if row is None:
                raise _NoRow
            return row
    except _NoRow:
        return None


def _lock_free_item(study, user, gold, seed=None):
    """Patient mode: locks and returns the first free item, or None when none is left.

    SKIP LOCKED first, so simultaneous requests spread over different rows without
    waiting. If every free row is held by someone else, wait for the best one by primary
    key (PostgreSQL re-checks the slot filter on the row as committed by the holder), so
    nobody is told "nothing left" while slots remain. Each failed wait means that row
    filled up, so the loop ends after at most as many rounds as there are free items."""
    while True:
        free = Item.objects.free_for(study, user, gold, seed)
        item = _first_in_savepoint(free.select_for_update(skip_locked=True, of=("self",)))
        if item is not None:
            return item
        best = free.values_list("pk", flat=True).first()
        if best is None:
            return None
        best_row = Item.objects.free_for(study, user, gold, seed).filter(pk=best)
        item = _first_in_savepoint(best_row.select_for_update(of=("self",)))
        if item is not None:
            return item


def gold_seed(study, user, served):
    """The seed of the gold draw: (study, user, items had) under a SECRET_KEY-derived key,
    so a rerun serves the same sequence but an annotator cannot predict the next gold item."""
    return (secret("gold").hex(), "gold", study.pk, user.pk, served)


def _gold_drawn(study, user, served=None):
    """Whether this request serves a gold item: a Bernoulli(gold_rate) draw seeded by
    `gold_seed` (`served`: the items the user had in the study; counted when not given)."""
    if study.gold_rate <= 0:
        return False
    if served is None:
        served = Assignment.objects.filter(study=study, annotator=user).count()
    return seeded_rng(*gold_seed(study, user, served)).random() < study.gold_rate


def release_expired(study, now=None) -> int:
    """reclaim_expired in a transaction of its own, after a cheap check (usually none):
    its item locks are released before anything is picked. Also run by the task page's
    GET, which reserves nothing but must not count expired slots as taken ("All done"),
    and by the dashboard's Recruitment panel (places come back). Returns how many."""
    now = now or timezone.now()
    if Assignment.objects.filter(study=study).expired(now).exists():
        with _serialized():
            return reclaim_expired(study, now)
    return 0


class _Contended(Exception):
    """Every free row is locked by another request: run again in patient mode."""


def choose_shown_order(study, item, user, previous_orders, study_pairs=None,
                       outcomes=None) -> tuple[dict, float | None]:
    """Step 5 of `_serve`: (the `shown_order` of a new assignment of `item` (which the caller
    has locked), the probability its pair was drawn with (adaptive studies; else None)),
    from the item's earlier orders, and for an item with more than two candidates from the
    pairs the whole study has shown (`study_pairs`) and, in an adaptive study, its answers
    (`outcomes`), both read by `_store` under the study's lock (annotate/desk/adaptive_pairs.py).
    The one place that decides what is shown in which order."""
    if outcomes is not None:
        return adaptive_shown_order(study, item, user.pk, previous_orders, study_pairs, outcomes)
    return shown_order_for(study, item, user.pk, previous_orders, study_pairs), (
        1.0 if is_adaptive(study.config) else None)  # adaptive, two candidates: the item's one pair


def next_for(user, slug: str | None = None, desk: Desk | None = None, now=None) -> tuple[Desk, Assignment | None]:
    """(desk, the assignment the user should work on now or None when nothing is left for
    them). Give the request's `desk` when it has one; else the engine decides access in its
    first statement (no assignment for a user who may not annotate: see desk.refuse)."""
    now = now or timezone.now()
    patient = False
    while True:
        if desk is not None and desk.expired_waiting:
            with _serialized():  # its own transaction, before anything is picked
                reclaim_expired(desk.study, now)
            desk.expired_waiting = False
        try:
            with _serialized():
                if desk is None:
                    assert slug is not None  # without a desk, the caller names the study
                    desk = desk_for(user, slug, now, lock=True)
                    if desk.study is None or not desk.may_annotate:
                        return desk, None
                    if desk.expired_waiting:
                        continue  # leaves the transaction (nothing written): reclaim first
                else:
                    LOCK_USER.rows(user_id=user.pk)
                return desk, _serve(desk, user, now, patient)
        except _Contended:
            patient = True


def next_assignment(study, user, now=None):
    """The assignment the user should work on now (existing open one first), or None when
    nothing is left for them. Raises NotAllowed for users outside the study."""
    desk, assignment = next_for(user, slug=study.slug, now=now)
    if desk.study is None or not desk.may_annotate:
        raise NotAllowed(f"{user} may not annotate {study.slug}")
    return assignment


def _serve(desk, user, now, patient):
    study, seat = desk.study, desk.seat
    if seat and seat["ended"] in (RETURNED, SCREENED_OUT):
        return None  # a participant who left, or was screened out, is given nothing (not even an open item)
    mine = MINE.rows(study_id=study.pk, user_id=user.pk, now=now)
    current = instance(Assignment, mine[0], "current__", OPEN_FIELDS)  # (1) the open one
    if current is not None:
        current.study, current.item = study, instance(Item, mine[0], "current__item__", ITEM_FIELDS)
        return current
    had = mine[0]["had"]
    if study.status != OPEN:  # (2) what the study and the participant allow
        return None
    needs_place, timeout = False, study.assignment_timeout_minutes
    if seat:
        if not may_have_items(study, seat):
            return None  # nothing before consent, instructions, comprehension check, pre questions, practice
        if seat["finished_at"] is not None:
            return None  # completed
        quota = study.max_items_per_participant
        if quota is not None and mine[0]["answered"] >= quota:  # answered items only: a skip earns nothing
            return None
        needs_place = recruits(study) and not holds_place(seat["place_taken_at"], seat["ended"])
        if recruits(study) and mine[0]["answered"] == 0:
            timeout = min(timeout, hold_minutes(study))  # the place is only held until the first answer
    if not needs_place and (repeat := serve_repeat(study, user, now, timeout)) is not None:
        return repeat  # a test-retest repeat (annotate/desk/retest.py): no slot, no place
    item = None
    if _gold_drawn(study, user, had):  # (3)
        item = _pick(study, user, seat, patient, gold=True)
    if item is None:  # (4)
        item = _pick(study, user, seat, patient, gold=False)
    if item is None:
        return None
    if needs_place and not take_place(study, seat["id"], now):  # with the first item (recruitment.py)
        return None
    return _store(study, item, user, now, timeout)


def _pick(study, user, seat, patient, gold):
    """A free item, locked (step 4); None when none is left."""
    seed = seat["seed"] if seat else None
    m, c = item_order_of(seed) if seed is not None else (None, None)
    args = {"study_id": study.pk, "overlap": study.annotations_per_item, "user_id": user.pk, "gold": gold,
            "m": m, "c": c}
    if patient:
        if gold and not Item.objects.free_for(study, user).exists():
            return None  # gold only while real items remain
        return _lock_free_item(study, user, gold, seed)
    row = PICK.first(**args, lock=True)
    if row is None and PICK.first(**args, lock=False) is not None:
        raise _Contended  # rows that failed the re-check may still be locked: roll back, wait patiently
    return instance(Item, row, fields=ITEM_FIELDS) if row else None


def _store(study, item, user, now, timeout):
    """Steps 5 and 6: the shown order from the item's earlier orders (read under the item's
    lock, so they are all there), then the assignment with its blinding tokens, open for
    `timeout` minutes."""
    expires = now + timedelta(minutes=timeout)
    kind = get_kind(study.kind)
    whole_study = kind.needs_study_pairs(item.data, study_config(study))  # e.g. more than two candidates
    if connection.vendor != "postgresql":  # serialized by _serialized's process-wide lock
        previous = [row["shown_order"] for row in PREVIOUS.rows(item_id=item.pk)]
        pairs = kind.study_screen_counts(_study_pairs(study.pk)) if whole_study else None
        outcomes = study_outcomes(study.pk) if whole_study and is_adaptive(study.config) else None
        order, probability = choose_shown_order(study, item, user, previous, pairs, outcomes)
        assignment = Assignment.objects.create(study=study, item=item, annotator=user, expires_at=expires,
                                               shown_order=order, probability=probability)
        Item.objects.filter(pk=item.pk).update(n_assigned=F("n_assigned") + 1)
        blinding_for(assignment)  # the annotator's tokens, stored with the assignment
        return assignment
    with connection.cursor() as cursor:
        pairs = outcomes = None
        if whole_study:
            cursor.execute(LOCK_STUDY_PG, [study.pk])
            cursor.execute(PREVIOUS_PAIRS_AND_ID_PG, [item.pk, study.pk])
            new_id, previous, pairs = cursor.fetchone()
            pairs = kind.study_screen_counts(json.loads(pairs or "[]"))
            outcomes = study_outcomes(study.pk) if is_adaptive(study.config) else None  # under the lock
        else:
            cursor.execute(PREVIOUS_AND_ID_PG, [item.pk])
            new_id, previous = cursor.fetchone()
        order, probability = choose_shown_order(study, item, user, json.loads(previous or "[]"), pairs, outcomes)
        assignment = Assignment(pk=new_id, study=study, item=item, annotator=user, created_at=timezone.now(),
                                expires_at=expires, shown_order=order, probability=probability)
        assignment.blind = build_mapping(assignment, get_kind(study.kind).questions(study_config(study),
                                                                                    assignment_item(assignment)))
        adapt = connection.ops
        cursor.execute(INSERT_PG, [item.pk, new_id, study.pk, item.pk, user.pk,
                                   adapt.adapt_json_value(assignment.shown_order, None),
                                   adapt.adapt_json_value(assignment.blind, None), assignment.created_at, expires,
                                   probability])
    assignment._state.adding = False
    return assignment
