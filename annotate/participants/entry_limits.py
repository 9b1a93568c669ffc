"""New participants per address and study (issue 31, item 6; docs/running-a-study.md).

One link holder must not take every place: a study admits at most `per_address` new
participants (recruitment header, default PER_ADDRESS) from one address per
WINDOW_MINUTES; more are refused with a "try again later" page that still tells them how
to return the study (never a dead end). Participants already in are never limited (a
reload, a new device). The address is kept as a keyed hash (`address_hash`), never as
such. Each (study, address) is one EntryAddress row, locked while it is counted, so
simultaneous entries cannot all slip under the limit.

The Recruitment panel lists `bursts`: addresses that were refused at least once, or
admitted `per_address` or more, with how many entries they made and over how many seconds.
"""
from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q

from annotate.models import EntryAddress, Study
from annotate.secrets import secret

PER_ADDRESS = 5  # new participants per address and study per window (recruitment.per_address)
WINDOW_MINUTES = 10
BURSTS_SHOWN = 20


def per_address(study: Study) -> int:
    return (study.recruitment or {}).get("per_address", PER_ADDRESS)


def address_hash(address: str | None) -> str:
    """A keyed hash of the client's address (SECRET_KEY-derived key): equal addresses
    match, and the stored value names nobody. "" when the address is unknown."""
    if not address:
        return ""
    return hmac.new(secret("entry-address"), address.encode(), hashlib.sha256).hexdigest()


def admit(study: Study, address: str, now: datetime) -> bool:
    """Counts one new participant from `address` (a hash) in `study`; False when the
    address already brought `per_address` in the current window (counted as refused).
    An unknown address ("") is admitted: there is nothing to count it by."""
    if not address:
        return True
    with transaction.atomic():
        EntryAddress.objects.bulk_create(  # the row, once, even under simultaneous entries
            [EntryAddress(study=study, address=address, window_start=now, first_at=now, last_at=now)],
            ignore_conflicts=True)
        row = EntryAddress.objects.select_for_update().get(study=study, address=address)
        if now - row.window_start >= timedelta(minutes=WINDOW_MINUTES):
            row.window_start, row.in_window = now, 0
        admitted = row.in_window < per_address(study)
        if admitted:
            row.in_window += 1
            row.admitted += 1
        else:
            row.refused += 1
        row.last_at = max(row.last_at, now)
        row.save()
    return admitted


@dataclass
class Burst:
    address: str  # the first 8 characters of the hash: enough to tell bursts apart
    entries: int
    admitted: int
    refused: int
    seconds: float  # from the first entry to the last


def bursts(study: Study) -> list[Burst]:
    """Suspicious addresses of `study`, most entries first: refused at least once, or
    admitted `per_address` or more (at most BURSTS_SHOWN)."""
    rows = (EntryAddress.objects.filter(study=study)
            .filter(Q(refused__gt=0) | Q(admitted__gte=per_address(study)))
            .order_by("-refused", "-admitted", "address")[:BURSTS_SHOWN])
    return [Burst(r.address[:8], r.admitted + r.refused, r.admitted, r.refused,
                  round((r.last_at - r.first_at).total_seconds(), 1)) for r in rows]
