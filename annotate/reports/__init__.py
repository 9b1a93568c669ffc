"""Room `reports`: what researchers read about a study.

Owns fetching a study's rows for a report (data, columns), the report cache with its
versions and background refreshes, the database triggers that bump a report's version
on every write, annotator quality, the researcher dashboard, the quality page and the
report API. The statistics themselves are evaluation/ (Django-free).

May import: annotate.models, annotate.kinds, annotate.access, annotate.roles,
humeval.background, evaluation, and for the dashboard the desk (progress, expiry) and
participants (recruitment) rooms. Nothing imports reports except the dashboard's URLs,
the API URLs, participants (quality flags) and management commands.
"""
