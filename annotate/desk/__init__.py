"""Room `desk`: the annotator's hot path.

Owns the assignment engine (which item next, in one row-locked transaction), the
prepared statements it runs, submission/edit/skip/extend, blinding (tokens in place of
ids), the order options are shown in, progress counts, what the task page shows
(display, drafts, markdown), the annotator's pages (home, task, my judgments) and the
assignments API. Every request here is counted in bench/cycle_bench.py: 7 transactions,
13 statements per cycle.

May import: annotate.models, annotate.kinds, annotate.access, annotate.roles,
annotate.prepared, annotate.secrets, annotate.api (plumbing), the studies room (answer
values, text checks), participants.recruitment (whether an assignment holds a
participant's place) and participants.participation (the task page sends a participant
back to their flow). Never reports.
"""
