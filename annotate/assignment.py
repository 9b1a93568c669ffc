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
- participants (annotate/participation.py) get items in their own seeded random order
  among equally full items (Participant.seed) and at most `max_items_per_participant`
  items (gold included; practice items are never served here), and nothing before they
  accept the study's consent text.

Concurrency: expired assignments are reclaimed in a transaction of their own. Then the
asking user's row is locked (one request per user at a time, so a double-click cannot
open two assignments) and a candidate item is taken with SELECT ... FOR UPDATE SKIP
LOCKED, so simultaneous annotators each lock a different row and the overlap check is
made on the locked, current row. While it waits, a request holds only its user row
(failed tries are rolled back to a savepoint, releasing their row locks) and waits for
one item by key, so waits cannot form a cycle. On SQLite `select_for_update`
is a no-op; a process-wide lock serializes the engine there instead (the dev server).
"""
import logging
import threading
from contextlib import contextmanager
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from .access import NotAllowed, may_annotate
from .blinding import blinding_for, secret
from .models import OPEN, Assignment, Item, Participant
from .ordering import seeded_rng, shown_order_for

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
                   .order_by("id").values_list("id", "item_id")[:RECLAIM_LIMIT])
    for _, item_id in sorted(expired, key=lambda row: row[1]):  # one lock order: no deadlocks
        Item.objects.filter(pk=item_id, n_assigned__gt=0).update(n_assigned=F("n_assigned") - 1)
    if expired:
        Assignment.objects.filter(pk__in=[a for a, _ in expired]).delete()
        log.info("assignments reclaimed: study=%s expired=%d", study.slug, len(expired))
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
    """Locks and returns the first free item, or None when none is left.

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


def _gold_drawn(study, user):
    """Whether this request serves a gold item: a Bernoulli(gold_rate) draw seeded by
    `gold_seed`."""
    if study.gold_rate <= 0:
        return False
    served = Assignment.objects.filter(study=study, annotator=user).count()
    return seeded_rng(*gold_seed(study, user, served)).random() < study.gold_rate


def release_expired(study, now=None):
    """reclaim_expired in a transaction of its own, after a cheap check (usually none):
    its item locks are released before anything is picked. Also run by the task page's
    GET, which reserves nothing but must not count expired slots as taken ("All done")."""
    now = now or timezone.now()
    if Assignment.objects.filter(study=study).expired(now).exists():
        with _serialized():
            reclaim_expired(study, now)


def next_assignment(study, user, now=None):
    """The assignment the user should work on now (existing open one first), or None when
    nothing is left for them. Raises NotAllowed for users outside the study."""
    if not may_annotate(user, study):
        raise NotAllowed(f"{user} may not annotate {study.slug}")
    now = now or timezone.now()
    release_expired(study, now)
    with _serialized():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        current = open_assignment(study, user, now)
        if current:
            return current
        if study.status != OPEN:
            return None
        participant = Participant.objects.filter(study=study, user=user).first()
        if participant and study.consent and participant.consented_at is None:
            return None  # nothing is served before a participant accepts the consent text
        seed = participant.seed if participant else None
        quota = study.max_items_per_participant if participant else None
        if quota is not None and Assignment.objects.filter(study=study, annotator=user).count() >= quota:
            return None
        item = None
        if _gold_drawn(study, user) and Item.objects.free_for(study, user).exists():
            item = _lock_free_item(study, user, gold=True, seed=seed)
        if item is None:
            item = _lock_free_item(study, user, gold=False, seed=seed)
        if item is None:
            return None
        previous = list(item.assignments.values_list("shown_order", flat=True))
        assignment = Assignment.objects.create(
            study=study, item=item, annotator=user,
            shown_order=shown_order_for(study, item, user.pk, previous),
            expires_at=now + timedelta(minutes=study.assignment_timeout_minutes),
        )
        Item.objects.filter(pk=item.pk).update(n_assigned=F("n_assigned") + 1)
        assignment.item = item
        blinding_for(assignment)  # the annotator's tokens, stored with the assignment
        return assignment
