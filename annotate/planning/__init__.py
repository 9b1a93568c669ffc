"""Planning a study before it runs: power by simulation (`manage.py design`).

This room owns the design file (design_spec), an in-memory replay of the assignment
engine's rules (replay: the kind's own `shown_order` and the engine's item order, proven
equal to the database engine by a test) and the simulation of whole studies through the
report's own statistics (power). It may import annotate.kinds, annotate.models (a pilot
study's judgments) and evaluation/; nothing outside this room imports it but its command.
"""
