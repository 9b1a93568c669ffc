"""How far a study and each annotator are: the one definition of free, open, completed
and complete, used by the assignment engine, the annotator pages, the dashboard and the
report.

- an assignment is *open* while not completed and not expired, *completed* once its
  answers are stored; an expired open assignment is neither (it is reclaimed); a
  *skipped* one ("I can't judge this") is closed (completed_at set) but not completed:
  its slot went back to the pool, and the item is never served to that annotator again;
- a real (non-gold) item is *free* for a user while it has a slot left
  (n_assigned < annotations_per_item) and the user never had it; a gold item is free for
  every user who never had it (gold is not capped by the overlap);
- a study's *complete* items are its real items with `annotations_per_item` completed
  assignments (Item.n_completed, kept in step with the Assignment rows by the engine,
  the submit path and the importers). Gold items are never counted: they are attention
  checks, not data.
"""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.db import models
from django.db.models import Exists, F, Func, Q, Subquery, Sum
from django.db.models.functions import Coalesce, Least
from django.utils import timezone

from annotate.prepared import Prepared

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from annotate.models import Study


class ItemQuerySet(models.QuerySet):
    def real(self) -> ItemQuerySet:
        return self.filter(is_gold=False)

    def complete_in(self, study: Study) -> ItemQuerySet:
        """Real items of `study` with `annotations_per_item` completed assignments."""
        return self.filter(study=study, is_gold=False, n_completed__gte=study.annotations_per_item)

    def free_for(self, study: Study, user: AbstractBaseUser, gold: bool = False,
                 seed: int | None = None) -> ItemQuerySet:
        """Items of `study` that `user` could be given, fullest first, then import order
        (the order of the item_pool_idx index the engine scans), or with a participant's
        `seed` their own random order among equally full items (annotate/desk/ordering.py)."""
        from annotate.desk.ordering import item_order_key, item_order_of

        order = item_order_key(*item_order_of(seed)) if seed is not None else None
        return self.free_in(study.pk, study.annotations_per_item, user.pk, gold, order)

    def free_in(self, study_id: int, overlap: int, user_id: int, gold: bool = False, order=None) -> ItemQuerySet:
        """`free_for` by ids (the engine's compiled statements); `order`: an item order key
        (annotate.desk.ordering.item_order_key) in place of import order."""
        from annotate.models import Assignment

        mine = Assignment.objects.filter(annotator=user_id, study=study_id).values("item_id")
        items = self.filter(study=study_id, is_gold=gold).exclude(pk__in=mine)
        if not gold:
            items = items.filter(n_assigned__lt=overlap)
        return items.order_by("-n_assigned", "position" if order is None else order, "id")


def open_q(now: datetime | None = None, relation: str = "") -> Q:
    """Open assignments (handed out, not answered, not expired) as a Q; `relation`
    ("assignments__") when they are reached through a relation."""
    return Q(**{f"{relation}completed_at__isnull": True, f"{relation}expires_at__gt": now or timezone.now()})


class AssignmentQuerySet(models.QuerySet):
    def completed(self) -> AssignmentQuerySet:
        """Answered (closed and not skipped)."""
        return self.filter(completed_at__isnull=False, skipped=False)

    def open(self, now: datetime | None = None) -> AssignmentQuerySet:
        """Handed out, not answered, not expired."""
        return self.filter(open_q(now))

    def expired(self, now: datetime | None = None) -> AssignmentQuerySet:
        """Handed out, not answered, past expiry: waiting to be reclaimed."""
        return self.filter(completed_at__isnull=True, expires_at__lte=now or timezone.now())


def _count(queryset):
    """COUNT(*) of a queryset as a scalar subquery (0 when empty)."""
    return Coalesce(Subquery(queryset.order_by().annotate(n=Func(F("pk"), function="COUNT")).values("n")), 0)


def _progress_statement(study_id, overlap, user_id, now, quota):
    from django.contrib.auth import get_user_model

    from annotate.models import Assignment, Item, Participant

    mine = Assignment.objects.filter(study=study_id, annotator=user_id)
    counts = {"done": _count(mine.completed()), "open": _count(mine.open(now)),
              "free": _count(Item.objects.free_in(study_id, overlap, user_id))}
    if quota:  # a quota applies to participants only
        counts["participant"] = Exists(Participant.objects.filter(study=study_id, user=user_id))
    return get_user_model().objects.filter(pk=user_id).order_by().annotate(**counts).values(*counts)


PROGRESS = Prepared(_progress_statement)


def annotator_progress(study: Study, user: AbstractBaseUser, now: datetime | None = None) -> dict:
    """{"done", "assigned", "total", "remaining"} for one annotator in one study, as the
    annotator sees it, with gold items invisible: done = items they completed (gold
    included: counting it apart would mark which items were gold); assigned = done +
    open; remaining = their open item (whatever it is) + real items still free for them,
    capped by a participant's quota (`max_items_per_participant`; staff-made annotators
    have none); total = done + remaining. So every submit moves one from remaining to
    done, and done never exceeds total. One statement (annotate.prepared)."""
    quota = study.max_items_per_participant
    row = PROGRESS.first(study_id=study.pk, overlap=study.annotations_per_item, user_id=user.pk,
                         now=now or timezone.now(), quota=quota is not None)
    done, open_ = row["done"], row["open"]
    remaining = row["free"] + open_
    if quota is not None and row["participant"]:
        remaining = max(0, min(remaining, quota - done))
    return {"done": done, "assigned": done + open_, "total": done + remaining, "remaining": remaining}


def study_progress(study: Study) -> dict:
    """The dashboard's counts: {"n_items", "n_gold", "n_real", "complete", "done",
    "needed", "percent"}. done = completed assignments of real items, each item counted
    up to the overlap; needed = n_real x overlap."""
    from annotate.models import Item

    overlap = study.annotations_per_item
    items = Item.objects.filter(study=study)
    n_items = items.count()
    real = items.real()
    n_real = real.count()
    done = real.aggregate(n=Sum(Least(F("n_completed"), overlap)))["n"] or 0
    needed = n_real * overlap
    return {"n_items": n_items, "n_gold": n_items - n_real, "n_real": n_real,
            "complete": Item.objects.complete_in(study).count(), "done": done, "needed": needed,
            "percent": round(100 * done / needed, 1) if needed else 0.0}
