"""The annotation web app (Django app label `annotate`), in rooms:

- annotate/studies/: batch format, import/export, backups, demo (what a study holds);
- annotate/desk/: the annotator's hot path (assignment, submission, blinding, pages);
- annotate/participants/: recruitment links, participation flow, participant pages;
- annotate/reports/: report data, cache, triggers, quality, dashboard, report API.

Shared by every room, at this level: models.py (+ querysets.py, access_rules.py),
kinds/ (study kinds), access.py and roles.py (who may do what), prepared.py (compiled
statements), api/ (REST plumbing: serializers, token auth, permissions), services.py (the
one door for models_runtime), urls.py and api_urls.py. docs/architecture.md draws the
picture.
"""
