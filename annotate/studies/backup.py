"""Whole-study backups: one JSONL stream with everything a study owns, so a study can
move between servers and come back identical (items, assignments, judgments,
predictions, audit log, timestamps).

Line 1 is {"type": "study", ...}; every other line is {"type": <record type>, ...}.
Records refer to items by `item_id` and to users by username, never by database ids.
"""
import contextlib
import json

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.dateparse import parse_datetime

from annotate.models import Assignment, AuditLog, Batch, Item, Judgment, Prediction, Study
from humeval.jsonl import json_lines

FORMAT = "humeval-study"
VERSION = 1
CHUNK = 5000
STUDY_FIELDS = ("slug", "kind", "title", "instructions", "annotations_per_item", "randomize_order",
                "allow_tie", "config", "gold_rate", "min_seconds", "assignment_timeout_minutes", "created_at")
BATCH_FIELDS = ("source", "sha256", "created", "skipped", "created_at")
ITEM_FIELDS = ("item_id", "position", "data", "meta", "gold", "is_gold", "content_hash", "n_assigned", "n_completed",
               "offered", "offer_probability")
ASSIGNMENT_FIELDS = ("shown_order", "created_at", "expires_at", "completed_at", "seconds", "skipped", "extensions")
JUDGMENT_FIELDS = ("question", "value", "shown_order", "seconds", "submitted_at", "comment", "pastes", "focus_losses")
PREDICTION_FIELDS = ("evaluator", "annotator", "question", "value")
AUDIT_FIELDS = ("action", "object_type", "object_id", "before", "after", "created_at")
DATETIME_FIELDS = {"created_at", "expires_at", "completed_at", "submitted_at"}


class BackupError(ValueError):
    """A backup file that cannot be restored; nothing was written."""


def _plain(value):
    return value.isoformat() if hasattr(value, "isoformat") else value


def _record(kind, obj, fields, **extra):
    row = {"type": kind}
    row.update({name: _plain(getattr(obj, name)) for name in fields})
    row.update(extra)
    return row


def export_study(study):
    """Yield the JSONL lines (as dicts) of one study, streaming table by table."""
    user_names = dict(get_user_model().objects.values_list("id", "username"))
    yield _record("study", study, STUDY_FIELDS, format=FORMAT, version=VERSION,
                  annotators=sorted(study.annotators.values_list("username", flat=True)),
                  researchers=sorted(study.researchers.values_list("username", flat=True)))
    batch_index = {}
    for index, batch in enumerate(study.batches.order_by("id")):
        batch_index[batch.id] = index
        yield _record("batch", batch, BATCH_FIELDS, index=index, uploaded_by=user_names.get(batch.uploaded_by_id))
    item_ids = {}
    for item in study.items.order_by("position", "id").iterator(chunk_size=CHUNK):
        item_ids[item.id] = item.item_id
        yield _record("item", item, ITEM_FIELDS, batch=batch_index.get(item.batch_id))
    for a in study.assignments.order_by("id").iterator(chunk_size=CHUNK):
        yield _record("assignment", a, ASSIGNMENT_FIELDS, item_id=item_ids[a.item_id],
                      annotator=user_names[a.annotator_id], **_repeat_mark(a))
    assignment_keys = dict(study.assignments.values_list("id", "item_id"))
    for j in study.judgments.order_by("id").iterator(chunk_size=CHUNK):
        yield _record("judgment", j, JUDGMENT_FIELDS, item_id=item_ids[j.item_id],
                      annotator=user_names[j.annotator_id], with_assignment=j.assignment_id in assignment_keys,
                      **_repeat_mark(j))
    for p in study.predictions.order_by("id").iterator(chunk_size=CHUNK):
        yield _record("prediction", p, PREDICTION_FIELDS, item_id=item_ids[p.item_id])
    for log in study.audit.order_by("id").iterator(chunk_size=CHUNK):
        yield _record("audit", log, AUDIT_FIELDS, user=user_names.get(log.user_id))


def _repeat_mark(obj) -> dict:
    """{"repeat": true} on a test-retest repeat (its first is the same annotator's row of the
    item, and question, restored before it); nothing on a first row (older backups)."""
    return {"repeat": True} if obj.repeat_of_id else {}


def write_study(study, stream):
    for row in export_study(study):
        stream.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


@contextlib.contextmanager
def _keep_given_timestamps(*models):
    """Restored rows keep their original created_at instead of 'now'."""
    fields = [m._meta.get_field("created_at") for m in models]
    saved = [f.auto_now_add for f in fields]
    for f in fields:
        f.auto_now_add = False
    try:
        yield
    finally:
        for f, value in zip(fields, saved):
            f.auto_now_add = value


def _values(row, fields):
    """The model fields of a backup row; a field an older backup lacks keeps its default."""
    out = {}
    for name in fields:
        if name not in row:
            continue
        value = row.get(name)
        if name in DATETIME_FIELDS and value is not None:
            value = parse_datetime(value)
        out[name] = value
    return out


def _read_lines(lines):
    for number, row, error in json_lines(lines):
        if error:
            raise BackupError(f"line {number}: not JSON ({error.msg})")
        if not isinstance(row, dict) or "type" not in row:
            raise BackupError(f"line {number}: expected an object with a 'type'")
        yield number, row


class _Restorer:
    """Writes one backup inside the caller's transaction, in chunks."""

    def __init__(self, header):
        self.users = {}
        self.study = Study.objects.create(**_values(header, STUDY_FIELDS))
        self.study.annotators.set([self.user(name) for name in header.get("annotators", [])])
        self.study.researchers.set([self.user(name) for name in header.get("researchers", [])])
        self.batches = {}
        self.items = {}
        self.assignments = {}
        self.first_judgments = {}  # (item, annotator[, question]) -> first judgment id (repeats point at it)
        self.pending = {"item": [], "assignment": [], "judgment": [], "prediction": [], "audit": []}

    def user(self, username):
        if username is None:
            return None
        if username not in self.users:
            model = get_user_model()
            user = model.objects.filter(username=username).first()
            if user is None:
                user = model(username=username)
                user.set_unusable_password()
                user.save()
            self.users[username] = user
        return self.users[username]

    def add(self, number, row):
        kind = row["type"]
        if kind == "batch":
            self.batches[row["index"]] = Batch.objects.create(
                study=self.study, uploaded_by=self.user(row.get("uploaded_by")), **_values(row, BATCH_FIELDS))
            return
        if kind not in self.pending:
            raise BackupError(f"line {number}: unknown record type {kind!r}")
        if kind != "item":
            self.flush("item")  # later records point at items
        if kind in ("judgment",):
            self.flush("assignment")
        self.pending[kind].append((number, row))
        if len(self.pending[kind]) >= CHUNK:
            self.flush(kind)

    def item_of(self, number, row):
        try:
            return self.items[row["item_id"]]
        except KeyError:
            raise BackupError(f"line {number}: unknown item_id {row.get('item_id')!r}") from None

    def flush(self, kind):
        rows, self.pending[kind] = self.pending[kind], []
        if not rows:
            return
        if kind == "item":
            objs = Item.objects.bulk_create([
                Item(study=self.study, batch=self.batches.get(row.get("batch")), **_values(row, ITEM_FIELDS))
                for _, row in rows])
            self.items.update({obj.item_id: obj for obj in objs})
        elif kind == "assignment":
            self._restore_assignments(rows)
        elif kind == "judgment":
            self._restore_judgments(rows)
        elif kind == "prediction":
            Prediction.objects.bulk_create([
                Prediction(study=self.study, item=self.item_of(n, row), **_values(row, PREDICTION_FIELDS))
                for n, row in rows])
        elif kind == "audit":
            AuditLog.objects.bulk_create([
                AuditLog(study=self.study, user=self.user(row.get("user")), **_values(row, AUDIT_FIELDS))
                for _, row in rows])

    def _restore_assignments(self, rows):
        """First showings, then test-retest repeats pointing at them."""
        for repeat in (False, True):
            objs = []
            for n, row in rows:
                if bool(row.get("repeat")) != repeat:
                    continue
                item, annotator = self.item_of(n, row), self.user(row["annotator"])
                first = self.assignments.get((item.id, annotator.id, False)) if repeat else None
                objs.append(Assignment(study=self.study, item=item, annotator=annotator, repeat_of=first,
                                       **_values(row, ASSIGNMENT_FIELDS)))
            Assignment.objects.bulk_create(objs)
            self.assignments.update({(o.item_id, o.annotator_id, repeat): o for o in objs})

    def _restore_judgments(self, rows):
        """First answers, then test-retest repeats pointing at them (same question, else any)."""
        firsts = self.first_judgments
        for repeat in (False, True):
            objs = []
            for n, row in rows:
                if bool(row.get("repeat")) != repeat:
                    continue
                item, annotator = self.item_of(n, row), self.user(row["annotator"])
                assignment = self.assignments.get((item.id, annotator.id, repeat)) if row.get("with_assignment") \
                    else None
                first = firsts.get((item.id, annotator.id, row.get("question")), firsts.get((item.id, annotator.id)))
                objs.append(Judgment(study=self.study, item=item, annotator=annotator, assignment=assignment,
                                     repeat_of_id=first if repeat else None, **_values(row, JUDGMENT_FIELDS)))
            for obj in Judgment.objects.bulk_create(objs):
                if not repeat:
                    firsts[(obj.item_id, obj.annotator_id, obj.question)] = obj.pk
                    firsts.setdefault((obj.item_id, obj.annotator_id), obj.pk)

    def finish(self):
        for kind in self.pending:
            self.flush(kind)


def import_study(lines, *, replace=False):
    """Restore a study from backup lines; all or nothing. Returns the new Study.

    An existing study with the same slug is an error unless `replace` is set, in which
    case it is deleted first (in the same transaction)."""
    rows = _read_lines(lines)
    try:
        number, header = next(rows)
    except StopIteration:
        raise BackupError("line 1: empty backup") from None
    if header.get("type") != "study" or header.get("format") != FORMAT:
        raise BackupError(f"line {number}: not a {FORMAT} backup header")
    if header.get("version") != VERSION:
        raise BackupError(f"line {number}: unsupported backup version {header.get('version')!r}")
    with transaction.atomic(), _keep_given_timestamps(Study, Batch, Assignment, AuditLog):
        existing = Study.objects.filter(slug=header.get("slug")).first()
        if existing is not None:
            if not replace:
                raise BackupError(f"line {number}: study {existing.slug!r} already exists (use --replace)")
            existing.delete()
        try:
            restorer = _Restorer(header)
            for number, row in rows:
                restorer.add(number, row)
            restorer.finish()
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, BackupError):
                raise
            raise BackupError(f"line {number}: malformed record ({exc})") from None
    return restorer.study
