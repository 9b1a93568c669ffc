"""Planning a study before it runs: power by simulation (`manage.py design`).

This room owns the design file (design_spec), an in-memory replay of the assignment
engine's rules (replay: the kind's own `shown_order` and the engine's item order, proven
equal to the database engine by a test) and the simulation of whole studies through the
report's own statistics (power, scalar, stopping), and the runs started from the web: the
API (api: POST /api/designs/) and the study's Plan page (views, plan_form), each run a file
(runs) simulated on humeval.background's capped pool. It may import annotate.kinds,
annotate.models, annotate.access, annotate.roles, annotate.api (plumbing),
annotate.reports.data (a pilot's report), humeval.background and evaluation/; nothing
imports it but its command and the URLs.
"""
