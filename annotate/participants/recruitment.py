"""Launch-safe recruitment (interfaces.md "Launch-safe recruitment"; docs/running-a-study.md).

- Participant links work only in a study whose header opts in with `recruitment`
  ({"platform": "prolific" | "mturk" | "link", "places"?, "screenout_code"?}). Opting in
  draws an unguessable `entry_key` (192 random bits) that the link carries:
  `/p/<slug>/<entry_key>/?...`; the study's researchers rotate it from the dashboard.
  `recruiting_study` is the one lookup of a link: an unknown slug, a wrong key, a study
  that does not recruit or one in draft are all None (the same 404).
- Places: `Study.places_taken` counts the participants holding one. A participant takes a
  place with their first item, at first only held: until their first answer their item
  expires after `hold_minutes` (recruitment header, default HOLD_MINUTES; the study's item
  timeout when shorter), and then the place goes back like any timed-out one. So entries
  that never answer hold places only briefly (issue 31, item 6); new entries per address
  are limited too (annotate/entry_limits.py). The engine calls `take_place` after it
  locked the item: one UPDATE of the study row re-checks the limit on the row it updates, so two
  participants cannot both take the last place. They give it back when they return, time
  out (their item expired: annotate.desk.assignment.reclaim_expired) or are screened out
  (`end`); completing keeps it. A timed-out participant who comes back takes a place
  again if one is left.
"""
from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from urllib.parse import urlencode, urlsplit, urlunsplit

from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest

from annotate.models import DRAFT, Item, Participant, Study

PLATFORMS = ("prolific", "mturk", "link")
# platform: (the parameter naming the participant, the platform's study id, its session id)
PLATFORM_PARAMS = {
    "prolific": ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    "mturk": ("workerId", "hitId", "assignmentId"),
    "link": ("pid", "study_id", "session_id"),
}
# What to paste after the link on each platform (Prolific fills in its placeholders; MTurk
# appends its own parameters to an ExternalQuestion's URL; a plain link names the person).
LINK_QUERY = {
    "prolific": "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
    "mturk": "",
    "link": "?pid=PARTICIPANT_ID",
}
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"  # MTurk's assignmentId while a worker previews a HIT
KEY_BYTES = 24  # 192 bits
HOLD_MINUTES = 10  # a place is held this long for a participant's first answer (recruitment.hold_minutes)
RETURN_INSTRUCTIONS = {
    "prolific": "Please return your submission on Prolific (\u201cReturn\u201d on the study's page), so that "
                "your place goes to someone else.",
    "mturk": "Please return the HIT on Mechanical Turk.",
    "link": "Please tell the person who sent you the link.",
}


def new_entry_key() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def recruits(study: Study) -> bool:
    """Whether participant links work in `study` (a valid `recruitment` and its key)."""
    recruitment = study.recruitment
    return (isinstance(recruitment, dict) and recruitment.get("platform") in PLATFORMS
            and bool(study.entry_key))


def recruiting_study(slug, key) -> Study | None:
    """The study a participant link names, or None for anything that must look like no
    study at all (unknown slug, wrong key, no recruitment, draft)."""
    if not isinstance(slug, str) or not isinstance(key, str):
        return None
    study = Study.objects.filter(slug=slug).exclude(status=DRAFT).exclude(entry_key="").first()
    if study is None or not recruits(study) or not hmac.compare_digest(study.entry_key, key):
        return None
    if study.annotators.exists():  # listed annotators later in the admin: a listed study takes no link
        return None
    return study


def link_path(study: Study) -> str:
    """The link to paste into the platform, after the host: path and query template."""
    return f"/p/{study.slug}/{study.entry_key}/{LINK_QUERY[study.recruitment['platform']]}"


def code_redirect(url: str, code: str) -> str | None:
    """`<url>?cc=<code>` (added to any query the URL has), or None without a URL."""
    if not url:
        return None
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode({"cc": code})) if q)
    return urlunsplit(parts._replace(query=query))


def screenout_redirect(study: Study) -> str | None:
    """`<completion_url>?cc=<screenout_code>` when the study has both (Prolific takes a
    screen-out code at the completion URL), else None."""
    code = (study.recruitment or {}).get("screenout_code")
    return code_redirect(study.completion_url, code) if code else None


def rotate_key(study: Study, user) -> None:
    """A new entry key: the old link answers 404 from now on; participants who entered keep
    their sessions (the flow's pages do not carry the key). Audited."""
    from annotate.models import AuditLog

    study.entry_key = new_entry_key()
    study.save(update_fields=["entry_key"])
    AuditLog.objects.create(study=study, user=user, action="study.rotate_entry_key", object_type="study",
                            object_id=study.slug)


def browser_hash(token: str) -> str:
    """What a Participant keeps of a `link` participant's browser cookie."""
    return hashlib.sha256(token.encode()).hexdigest()


# --- places --------------------------------------------------------------------------------

def places_limit(study: Study, n_real: int | None = None) -> int:
    """`recruitment.places`, or what the items' overlap allows: offered real items x overlap /
    quota, rounded up (every slot can be filled), or the overlap when there is no quota
    (each participant may judge every item)."""
    places = (study.recruitment or {}).get("places")
    if places is not None:
        return places
    if not study.max_items_per_participant:
        return study.annotations_per_item
    if n_real is None:
        n_real = Item.objects.filter(study=study).for_humans().count()
    return math.ceil(n_real * study.annotations_per_item / study.max_items_per_participant)


def _limit_sql(study: Study) -> tuple[str, list]:
    places = (study.recruitment or {}).get("places")
    if places is not None or not study.max_items_per_participant:
        return "%s", [places_limit(study)]
    return ("(SELECT CEIL(COUNT(*) * %s / %s::numeric) FROM annotate_item WHERE study_id = %s AND NOT is_gold "
            "AND offered)",
            [study.annotations_per_item, study.max_items_per_participant, study.pk])


# PostgreSQL: the study's counter and the participant's row in one statement.
TAKE_PG = """WITH place AS (
    UPDATE annotate_study SET places_taken = places_taken + 1 WHERE id = %s AND places_taken < {limit} RETURNING id
)
UPDATE annotate_participant SET place_taken_at = %s, ended = '', ended_at = NULL
WHERE id = %s AND EXISTS (SELECT 1 FROM place) RETURNING id"""


def take_place(study: Study, participant_id: int, now) -> bool:
    """Takes a place for the participant (inside the engine's transaction); False when
    none is left. One statement on PostgreSQL."""
    if connection.vendor == "postgresql":
        limit, params = _limit_sql(study)
        with connection.cursor() as cursor:
            cursor.execute(TAKE_PG.format(limit=limit), [study.pk, *params, now, participant_id])
            return cursor.fetchone() is not None
    if not Study.objects.filter(pk=study.pk, places_taken__lt=places_limit(study)).update(
            places_taken=F("places_taken") + 1):
        return False
    Participant.objects.filter(pk=participant_id).update(place_taken_at=now, ended="", ended_at=None)
    return True


HOLDS_PLACE = Q(place_taken_at__isnull=False, ended="")


def holds_place(place_taken_at, ended: str) -> bool:
    """HOLDS_PLACE of one participant's columns: a place taken and not given back."""
    return place_taken_at is not None and not ended


def end(study: Study, participants, ending: str, now) -> int:
    """Ends the unfinished participants among `participants` (a queryset of this study's)
    with `ending` (returned, screened_out, timed_out) and gives their places back.
    Returns how many places came back."""
    with transaction.atomic():
        rows = list(participants.filter(study=study, finished_at__isnull=True, declined_at__isnull=True)
                    .exclude(ended=ending).select_for_update().values_list("id", "place_taken_at", "ended"))
        if not rows:
            return 0
        held = sum(1 for _, taken, ended in rows if holds_place(taken, ended))
        Participant.objects.filter(pk__in=[pk for pk, _, _ in rows]).update(ended=ending, ended_at=now)
        if held:
            Study.objects.filter(pk=study.pk).update(places_taken=Greatest(F("places_taken") - held, 0))
        return held


def on_hold(study: Study) -> int:
    """Places held by participants who have not answered an item yet (they go back when
    the hold runs out)."""
    from annotate.models import Assignment

    answered = Assignment.objects.filter(study=study).completed().values("annotator_id")
    return Participant.objects.filter(HOLDS_PLACE, study=study).exclude(user__in=answered).count()


def hold_minutes(study: Study) -> int:
    """How long a participant's first item (and so their place) waits for their first answer."""
    return (study.recruitment or {}).get("hold_minutes", HOLD_MINUTES)


def places_left(study: Study) -> int:
    return max(0, places_limit(study) - study.places_taken)
