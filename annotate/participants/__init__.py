"""Room `participants`: people who arrive through a participant link (crowd platforms).

Owns recruitment (entry keys, places, platform parameters, completion codes),
participation (consent, screening, quotas, the flow from link to code), the
participant pages and the participants CSV API.

May import: annotate.models, annotate.kinds, annotate.access, annotate.roles, the desk
room (handing out and submitting items) and reports.quality (screening out annotators
below a study's quality thresholds).
"""
