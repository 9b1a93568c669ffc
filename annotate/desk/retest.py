"""Test-retest repeats (studies.md, "Repeats for test-retest"): which of an annotator's
own judged items the engine shows them again, and when.

A study with header `retest: {"share": s, "after": k}` re-shows about a share `s` of each
annotator's judged (first-shown, answered, non-gold) items, each at most once, and only
after at least `k` other items were answered since the first showing. When: the repeats
due after `n` judged items are floor(s * n + u), with `u` a uniform phase drawn once per
(study, annotator) under a SECRET_KEY-derived key, so the realized share is s (to within
one repeat, plus the lag of `after`) and the schedule is reproducible but not
predictable. Which: a seeded draw among the eligible items. A due repeat comes before a
new item; nothing is served for retest alone once an annotator has no new item left or
reached a participant's quota (the engine stops first).

The repeat is a new Assignment (`repeat_of` = the first one) of the same item with the
first's shown order reversed (StudyKind.reversed_order: A/B swapped, N outputs' order
reversed) and its own blinding tokens (made from its own id), so the annotator cannot
recognise it by its tokens. It takes no slot (Item.n_assigned), counts toward no item's
completion, no quota, no progress, no place or completion code (querysets: `completed()`
counts first showings only) and no statistic but the report's `retest`.
"""
from __future__ import annotations

import math
from datetime import timedelta

from annotate.desk.blinding import blinding_for
from annotate.desk.ordering import seeded_rng
from annotate.kinds import get_kind
from annotate.models import Assignment
from annotate.secrets import secret

RETEST_KEY = "retest"  # the header key, kept in Study.config


def retest_setting(study) -> dict | None:
    """{"share", "after"} of a study with repeats, else None."""
    value = (study.config or {}).get(RETEST_KEY)
    return value if isinstance(value, dict) and value.get("share") else None


def repeats_due(share: float, judged: int, phase: float) -> int:
    """How many repeats are due after `judged` first showings: floor(share * judged + phase).

    >>> [repeats_due(0.25, n, 0.5) for n in range(9)]
    [0, 0, 1, 1, 1, 1, 2, 2, 2]
    """
    return math.floor(share * judged + phase)


def _phase(study, user) -> float:
    return seeded_rng(secret("retest").hex(), "phase", study.pk, user.pk).random()


def due_first(study, user) -> Assignment | None:
    """The annotator's first assignment to repeat now (with its item), or None: none due
    yet, or none eligible (judged, not gold, not repeated, `after` answers since)."""
    setting = retest_setting(study)
    if setting is None:
        return None
    rows = list(Assignment.objects.filter(study=study, annotator=user, completed_at__isnull=False)
                .order_by("completed_at", "id").values_list("id", "repeat_of_id", "skipped", "item__is_gold"))
    repeated = set(Assignment.objects.filter(study=study, annotator=user, repeat_of__isnull=False)
                   .values_list("repeat_of_id", flat=True))
    answered = [row for row in rows if not row[2]]  # in answer order; skips are not answers
    firsts = [(k, row[0]) for k, row in enumerate(answered) if row[1] is None and not row[3]]
    if len(repeated) >= repeats_due(float(setting["share"]), len(firsts), _phase(study, user)):
        return None
    after = int(setting.get("after", 0))
    eligible = [pk for k, pk in firsts if pk not in repeated and len(answered) - 1 - k >= after]
    if not eligible:
        return None
    pick = seeded_rng(secret("retest").hex(), "pick", study.pk, user.pk, len(repeated)).choice(eligible)
    return Assignment.objects.select_related("item").get(pk=pick)


def serve_repeat(study, user, now, timeout_minutes: int) -> Assignment | None:
    """The repeat due now, stored (the engine holds the user's row lock, so one request at
    a time; the unique constraint allows one repeat per item and annotator), or None."""
    first = due_first(study, user)
    if first is None:
        return None
    repeat = Assignment.objects.create(
        study=study, item=first.item, annotator=user, repeat_of=first,
        expires_at=now + timedelta(minutes=timeout_minutes),
        shown_order=get_kind(study.kind).reversed_order(first.shown_order))
    blinding_for(repeat)  # its own tokens, from its own id
    return repeat
