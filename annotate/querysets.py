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
- only *offered* items (Item.offered: `human_share`, `allocation: "judge_uncertain"`,
  annotate/studies/human_draw.py) are ever free: the others are scored by evaluators alone,
  and a study is complete when its offered items are;
- a study's *complete* items are its offered real items with `annotations_per_item` completed
  assignments (Item.n_completed, kept in step with the Assignment rows by the engine,
  the submit path and the importers). Gold items are never counted: they are attention
  checks, not data;
- a test-retest *repeat* (Assignment.repeat_of set) is open while open, but never
  completed in this sense: answered-item counts, quotas, places, completion codes and
  progress count first showings only, and a repeat takes no slot.
"""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.db import models
from django.db.models import Q
from django.utils import timezone

from annotate.desk.ordering import item_order_key, item_order_of

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from annotate.models import Study


class ItemQuerySet(models.QuerySet):
    def real(self) -> ItemQuerySet:
        return self.filter(is_gold=False)

    def for_humans(self) -> ItemQuerySet:
        """Real items humans are offered (the others are for evaluators alone)."""
        return self.filter(is_gold=False, offered=True)

    def complete_in(self, study: Study) -> ItemQuerySet:
        """Offered real items of `study` with `annotations_per_item` completed assignments."""
        return self.filter(study=study, is_gold=False, offered=True, n_completed__gte=study.annotations_per_item)

    def free_for(self, study: Study, user: AbstractBaseUser, gold: bool = False,
                 seed: int | None = None) -> ItemQuerySet:
        """Items of `study` that `user` could be given, fullest first, then import order
        (the order of the item_pool_idx index the engine scans), or with a participant's
        `seed` their own random order among equally full items (annotate/desk/ordering.py)."""
        order = item_order_key(*item_order_of(seed)) if seed is not None else None
        return self.free_in(study.pk, study.annotations_per_item, user.pk, gold, order)

    def free_in(self, study_id: int, overlap: int, user_id: int, gold: bool = False, order=None) -> ItemQuerySet:
        """`free_for` by ids (the engine's compiled statements); `order`: an item order key
        (annotate.desk.ordering.item_order_key) in place of import order."""
        assignments = self.model._meta.get_field("assignments").related_model  # no import: models imports us
        mine = assignments.objects.filter(annotator=user_id, study=study_id).values("item_id")
        items = self.filter(study=study_id, is_gold=gold, offered=True).exclude(pk__in=mine)
        if not gold:
            items = items.filter(n_assigned__lt=overlap)
        return items.order_by("-n_assigned", "position" if order is None else order, "id")


def open_q(now: datetime | None = None, relation: str = "") -> Q:
    """Open assignments (handed out, not answered, not expired) as a Q; `relation`
    ("assignments__") when they are reached through a relation."""
    return Q(**{f"{relation}completed_at__isnull": True, f"{relation}expires_at__gt": now or timezone.now()})


class AssignmentQuerySet(models.QuerySet):
    def completed(self) -> AssignmentQuerySet:
        """Answered (closed and not skipped) first showings: a test-retest repeat
        (`repeat_of`, annotate/desk/retest.py) is never counted as an answered item."""
        return self.filter(completed_at__isnull=False, skipped=False, repeat_of__isnull=True)

    def open(self, now: datetime | None = None) -> AssignmentQuerySet:
        """Handed out, not answered, not expired."""
        return self.filter(open_q(now))

    def expired(self, now: datetime | None = None) -> AssignmentQuerySet:
        """Handed out, not answered, past expiry: waiting to be reclaimed."""
        return self.filter(completed_at__isnull=True, expires_at__lte=now or timezone.now())
