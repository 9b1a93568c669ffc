"""Why a participant is screened out, and the `quality_gate` (issue 31, item 7).

A participant gets the screen-out code instead of the completion code when (1) no place or
no item was left before they answered anything, (2) they failed the comprehension check
twice (annotate/comprehension.py), or (3) the study's `recruitment.quality_gate` is on
(off by default) and they are flagged by the study's `quality` thresholds when they reach
the end (annotate/quality.py). Off, a flagged participant gets the completion code as
before and is only left out of the report. docs/running-a-study.md says when Prolific's
rules allow the gate.
"""
from __future__ import annotations

from annotate.models import Participant, Study
from annotate.participants.comprehension import ATTEMPTS
from annotate.reports.quality import flagged_annotators

PLACES, COMPREHENSION, QUALITY = "places", "comprehension", "quality"


def quality_gate(study: Study) -> bool:
    return bool((study.recruitment or {}).get("quality_gate"))


def gated(study: Study, participant: Participant) -> bool:
    """Whether the quality gate screens this participant out at the end: the gate is on
    and the study's thresholds flag them now."""
    if not quality_gate(study) or not study.quality:
        return False
    return participant.user.username in flagged_annotators(study)


def screenout_reason(study: Study, store) -> str:
    """PLACES, COMPREHENSION or QUALITY for the screen-out page of `store` (a participant's
    or the preview's flow store, annotate/participants/views.py)."""
    from annotate.participants.participation import answered_count

    if store.preview:
        state = store.state()
        failed = state.get("comprehension_attempts", 0) >= ATTEMPTS and not state.get("comprehension_passed")
        return COMPREHENSION if failed else PLACES
    participant = store.participant
    if participant.comprehension_attempts >= ATTEMPTS and participant.comprehension_passed_at is None:
        return COMPREHENSION
    return QUALITY if answered_count(study, participant.user) else PLACES
