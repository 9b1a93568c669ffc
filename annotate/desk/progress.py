"""How far a study and each annotator are: the counts the annotator pages, the dashboard
and the report show, built on the definitions of free, open, completed and complete in
annotate/querysets.py (one statement per annotator, annotate.prepared).
"""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.db.models import Exists, F, Func, Subquery, Sum
from django.db.models.functions import Coalesce, Least
from django.utils import timezone

from annotate.models import Assignment, Item, Participant, Study
from annotate.prepared import Prepared

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


def _count(queryset):
    """COUNT(*) of a queryset as a scalar subquery (0 when empty)."""
    return Coalesce(Subquery(queryset.order_by().annotate(n=Func(F("pk"), function="COUNT")).values("n")), 0)


def _progress_statement(study_id, overlap, user_id, now, quota):
    from django.contrib.auth import get_user_model

    mine = Assignment.objects.filter(study=study_id, annotator=user_id)
    counts = {"done": _count(mine.completed()), "open": _count(mine.open(now).filter(repeat_of__isnull=True)),
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
    assert row is not None  # one row: the user's own
    done, open_ = row["done"], row["open"]
    remaining = row["free"] + open_
    if quota is not None and row["participant"]:
        remaining = max(0, min(remaining, quota - done))
    return {"done": done, "assigned": done + open_, "total": done + remaining, "remaining": remaining}


def study_progress(study: Study) -> dict:
    """The dashboard's counts: {"n_items", "n_gold", "n_real", "n_offered", "complete",
    "done", "needed", "percent"}. n_offered = real items humans are offered (all of them
    unless `human_share` or judge_uncertain held some back for evaluators alone); done =
    completed assignments of offered items, each item counted up to the overlap; needed =
    n_offered x overlap, so 100% means every offered item is done."""
    overlap = study.annotations_per_item
    items = Item.objects.filter(study=study)
    n_items = items.count()
    n_real = items.real().count()
    offered = items.for_humans()
    n_offered = offered.count()
    done = offered.aggregate(n=Sum(Least(F("n_completed"), overlap)))["n"] or 0
    needed = n_offered * overlap
    return {"n_items": n_items, "n_gold": n_items - n_real, "n_real": n_real, "n_offered": n_offered,
            "complete": Item.objects.complete_in(study).count(), "done": done, "needed": needed,
            "percent": round(100 * done / needed, 1) if needed else 0.0}
