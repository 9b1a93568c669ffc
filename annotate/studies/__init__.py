"""Room `studies`: what a study is made of and how it gets in and out.

Owns the batch format (parsing, checks, line-numbered errors), batch import (bulk COPY),
the answer values every door shares, judgment and prediction import/export (CSV),
study backups (export/import of a whole study), the demo data and the upload pages and
study API. The models themselves live in annotate/models.py and the study kinds in
annotate/kinds/ (both shared by every room).

May import: annotate.models, annotate.kinds, annotate.access, annotate.roles,
annotate.prepared, annotate.api (plumbing), evaluation. Never the desk or reports rooms;
from participants only recruitment's entry keys (made where a study is created) and the
participant username pattern (judgments import).
"""
