"""Where a participant's flow keeps its progress (annotate/participants/views.py): the
Participant row, or for a researcher's preview the session (nothing is written)."""
from django.utils import timezone

from annotate.participants.participation import next_step, participant_step

PREVIEW_KEY = "participant_preview"  # session: {slug: preview state}


class FlowStore:
    """Where a flow's progress is kept: the Participant row, or (preview) the session."""

    def __init__(self, participant=None, session=None, study=None):
        self.participant, self.session = participant, session
        self.slug = study.slug if study is not None else None
        self.key = study.entry_key if study is not None else None

    @property
    def preview(self):
        return self.participant is None

    def state(self):
        return self.session.get(PREVIEW_KEY, {}).get(self.slug, {}) if self.preview else None

    def update(self, **values):
        if self.participant is not None:
            now = timezone.now()
            fields = {"consented": ("consented_at", now), "declined": ("declined_at", now),
                      "instructions_seen": ("instructions_seen_at", now), "finished": ("finished_at", now),
                      "comprehension_passed": ("comprehension_passed_at", now)}
            for key, value in values.items():
                name, stored = fields.get(key, (key, value))
                setattr(self.participant, name, stored)
            self.participant.save(update_fields=[fields.get(k, (k,))[0] for k in values])
            return
        previews = self.session.get(PREVIEW_KEY, {})
        previews[self.slug] = {**previews.get(self.slug, {}), **values}
        self.session[PREVIEW_KEY] = previews

    def step(self, study):
        if self.preview:
            return next_step(study, self.state())
        return participant_step(self.participant)

    def practice_done(self):
        return self.state().get("practice_done", 0) if self.preview else self.participant.practice_done

    def comprehension_attempts(self):
        return (self.state().get("comprehension_attempts", 0) if self.preview
                else self.participant.comprehension_attempts)
