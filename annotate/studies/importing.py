"""Writes a batch file into the database: all or nothing, bounded memory, idempotent.

Everything runs in one transaction. Pass 1 validates every line (annotate.studies.batch_format)
and keeps only item_id -> (line, hash); the database checks come next (existing study,
existing item_ids, usernames) with the study row locked, so two imports into one study
queue up. Pass 2 reads the file again and bulk-inserts items (and their metric_scores as
Prediction rows) in chunks. Any error raises BatchInvalid and rolls everything back.
"""
import hashlib
import io
import logging
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Max

from annotate.kinds import get_kind
from annotate.models import AuditLog, Batch, Item, Prediction, Study
from annotate.participants.recruitment import new_entry_key
from annotate.studies.allocation import allocation_clash, too_few_systems
from annotate.studies.batch_format import (
    PARTICIPANT_HEADER_KEYS,
    BatchInvalid,
    ErrorList,
    Header,
    iter_items,
    read_header,
)
from annotate.studies.bulk_copy import copy_rows
from annotate.studies.human_draw import draw_batch
from annotate.studies.human_items import CONFIG_KEY as HUMAN_ITEMS
from annotate.studies.human_items import existing_flaw as human_items_flaw
from annotate.studies.json_lines import iter_lines

log = logging.getLogger(__name__)
CHUNK = 5000


@dataclass
class ImportResult:
    study: Study
    batch: Batch
    created: int
    skipped: int

    def as_json(self):
        return {"study": self.study.slug, "created": self.created, "skipped": self.skipped}


class _Hashing:
    """Iterates a binary file's lines while hashing the bytes."""

    def __init__(self, binary_file):
        self.file, self.sha = binary_file, hashlib.sha256()

    def __iter__(self):
        for raw in self.file:
            self.sha.update(raw)
            yield raw


def import_batch_path(path, **kwargs):
    with open(path, "rb") as handle:
        return import_batch(handle, source=kwargs.pop("source", str(path)), **kwargs)


def import_batch_bytes(data, **kwargs):
    return import_batch(io.BytesIO(data), **kwargs)


def import_batch(binary_file, *, source="", user=None, expected_slug=None, allow_empty=True):
    """Import a seekable binary JSONL file. Returns ImportResult or raises BatchInvalid.
    `expected_slug` (API and upload form for a given study) must match the header's slug.
    `allow_empty=False` (the import_batch command, the runtime): a header without items is
    refused, so a failed generation never leaves an empty study behind."""
    slug, errors = expected_slug, ErrorList()
    try:
        with transaction.atomic():
            binary_file.seek(0)
            hashing = _Hashing(binary_file)
            lines = iter_lines(hashing)
            header_line, header, header_errors = read_header(lines)
            errors.extend_from(header_errors)
            study = None
            if header is not None:
                slug = header.slug
                study, header = _resolve_study(header, header_line, expected_slug, errors)
            systems: set = set()
            seen = _validate_items(lines, header, errors, systems)
            if header is not None and (refusal := too_few_systems(header.config, systems, study)):
                errors.add(header_line, refusal)
            if not allow_empty and header is not None and not seen and not errors:
                errors.add(header_line, "the batch has no items: nothing to import (no study is created)")
            to_skip = _check_existing(study, seen, errors) if study is not None and study.pk else set()
            if errors:
                raise BatchInvalid(errors.final())
            digest = hashing.sha.hexdigest()
            if study.pk is None:
                _create_study(study, header, header_line)
            elif header.extra:
                _update_settings(study, header.extra, user)
            batch = Batch.objects.create(study=study, source=source[:500], sha256=digest, uploaded_by=user)
            created = _insert_items(binary_file, study, header, batch, to_skip, digest, seen)
            draw_batch(study, batch)  # which of the new items humans are offered (human_share, judge_uncertain)
            batch.created, batch.skipped = created, len(to_skip)
            batch.save(update_fields=["created", "skipped"])
            AuditLog.objects.create(study=study, user=user, action="import_batch", object_type="batch",
                                    object_id=str(batch.pk),
                                    after={"source": batch.source, "sha256": digest, "created": created,
                                           "skipped": len(to_skip)})
    except BatchInvalid as refused:
        n_errors = len(errors) + errors.dropped if errors else len(refused.errors)
        log.info("batch refused: user=%s source=%r study=%s errors=%d first=%r",
                    _who(user), source, slug or "-", n_errors, refused.errors[0] if refused.errors else "")
        raise
    log.info("batch imported: user=%s source=%r study=%s batch=%d created=%d skipped=%d",
             _who(user), source, study.slug, batch.pk, created, len(to_skip))
    return ImportResult(study=study, batch=batch, created=created, skipped=len(to_skip))


def batch_errors(binary_file, *, expected_slug=None):
    """The `line N: ...` errors import_batch would refuse this file with (its header, its
    items, the existing study's kind and settings), writing nothing. [] = it would load."""
    errors = ErrorList()
    with transaction.atomic():
        binary_file.seek(0)
        lines = iter_lines(binary_file)
        header_line, header, header_errors = read_header(lines)
        errors.extend_from(header_errors)
        if header is not None:
            _study, header = _resolve_study(header, header_line, expected_slug, errors)
        systems: set = set()
        _validate_items(lines, header, errors, systems)
        if header is not None and (refusal := too_few_systems(header.config, systems, _study)):
            errors.add(header_line, refusal)
    return list(errors.final())


def _who(user):
    return user.get_username() if user is not None else "-"


def _resolve_study(header, line, expected_slug, errors):
    """The target study (locked if it exists, unsaved if new) and the header that governs
    item validation: an existing study's own kind settings win, and must not be contradicted."""
    if expected_slug is not None and header.slug != expected_slug:
        errors.add(line, f"header slug {header.slug!r} does not match the study {expected_slug!r}")
        return None, None
    study = Study.objects.select_for_update().filter(slug=header.slug).first()
    if study is None:
        if "title" not in header.given:
            errors.add(line, "'title' is required to create a new study")
        _check_usernames(header, line, errors)
        return Study(slug=header.slug, kind=header.kind), header
    if study.kind != header.kind:
        errors.add(line, f"study {study.slug!r} is {study.kind}, the header says {header.kind}")
        return None, None
    kind = header.study_kind
    given, stored = kind.report_config(header.config), kind.report_config(study.config)
    for key in kind.header_keys:
        if key in header.given and given.get(key) != stored.get(key):
            errors.add(line, f"'{key}' {_show(given.get(key))} differs from the existing "
                             f"study's {_show(stored.get(key))}")
    for clash in allocation_clash(header.config, study.config):
        errors.add(line, clash)

    if reason := human_items_flaw(header.config.get(HUMAN_ITEMS), study.config.get(HUMAN_ITEMS),
                                     header.given):
        errors.add(line, reason)
    if "allow_tie" in header.given and header.allow_tie != study.allow_tie:
        errors.add(line, f"'allow_tie' differs from the existing study's {study.allow_tie}")
    if "recruitment" in header.extra and study.annotators.exists():
        errors.add(line, "'recruitment' cannot be combined with 'annotators': study "
                         f"{study.slug!r} lists its annotators, so it takes no participants from links")
    governing = Header(slug=study.slug, kind=study.kind, allow_tie=study.allow_tie, config=dict(study.config),
                       extra={k: v for k, v in header.extra.items() if k in PARTICIPANT_HEADER_KEYS})
    return study, governing


def _update_settings(study, settings, user):
    """A later batch's participant keys (status, consent, ...) update the study: the
    header is where a study run is opened, paused and closed. Audited."""
    before = {key: getattr(study, key) for key in settings}
    if before == settings:
        return
    for key, value in settings.items():
        setattr(study, key, value)
    fields = list(settings)
    if study.recruitment and not study.entry_key:  # opting in draws the link's key
        study.entry_key = new_entry_key()
        fields.append("entry_key")
    study.save(update_fields=fields)
    AuditLog.objects.create(study=study, user=user, action="study.settings", object_type="study",
                            object_id=study.slug, before=before, after=settings)


def _show(value):
    """A kind setting in an error message: aspect keys, or the scale."""
    return ", ".join(a["key"] for a in value) if value and isinstance(value[0], dict) else str(value)


def _check_usernames(header, line, errors):
    for key in ("annotators", "researchers"):
        names = getattr(header, key) or []
        known = set(get_user_model().objects.filter(username__in=names).values_list("username", flat=True))
        for name in names:
            if name not in known:
                errors.add(line, f"'{key}' names unknown user {name!r}")


def _validate_items(lines, header, errors, systems=None):
    """Pass 1: every item line checked; returns {item_id: (line, content_hash)}. `systems`
    (a set) gathers the candidate ids of the real items (an adaptive study needs 3)."""
    seen = {}
    for result in iter_items(lines, header):
        if isinstance(result, list):
            errors.extend_from(result)
            continue
        if systems is not None and not result.is_gold:
            systems.update(c.get("id") for c in result.data.get("candidates") or [] if isinstance(c, dict))
        first = seen.get(result.item_id)
        if first is not None:
            errors.add(result.line, f"duplicate item_id {result.item_id!r} (first on line {first[0]})")
        else:
            seen[result.item_id] = (result.line, result.content_hash)
    return seen


def _check_existing(study, seen, errors):
    """Item ids already in the study: identical content is skipped, different is an error."""
    to_skip, clashes = set(), []
    rows = Item.objects.filter(study=study).values_list("item_id", "content_hash")
    for item_id, content_hash in rows.iterator(chunk_size=10000):
        hit = seen.get(item_id)
        if hit is None:
            continue
        if hit[1] == content_hash:
            to_skip.add(item_id)
        else:
            clashes.append((hit[0], item_id))
    for line, item_id in sorted(clashes):
        errors.add(line, f"item_id {item_id!r} already exists in study {study.slug!r} with different content")
    return to_skip


def _create_study(study, header, line):
    study.title = header.title
    study.instructions = header.instructions
    study.annotations_per_item = header.annotations_per_item
    study.randomize_order = header.randomize_order
    study.allow_tie = header.allow_tie
    study.config = dict(header.config)
    for key, value in header.extra.items():
        setattr(study, key, value)
    if study.recruitment:  # opting in draws the link's key (annotate/participants/recruitment.py)
        study.entry_key = new_entry_key()
    try:
        with transaction.atomic():
            study.save()
    except IntegrityError:
        raise BatchInvalid([f"line {line}: study {study.slug!r} was created by another import just now; "
                            "retry"]) from None
    for key in ("annotators", "researchers"):
        if getattr(header, key):
            getattr(study, key).set(get_user_model().objects.filter(username__in=getattr(header, key)))


def _insert_items(binary_file, study, header, batch, to_skip, digest, hashes):
    """Pass 2: re-read the file and bulk-insert new items in chunks."""
    binary_file.seek(0)
    hashing = _Hashing(binary_file)
    lines = iter_lines(hashing)
    read_header(lines)
    position = (Item.objects.filter(study=study).aggregate(m=Max("position"))["m"] or 0) + 1
    created, chunk, practice = 0, [], []
    for row in iter_items(lines, header):
        if isinstance(row, list):  # the file changed between the passes
            raise BatchInvalid(row)
        if row.item_id in to_skip:
            continue
        if row.practice:
            practice.append(row)
            continue
        chunk.append(row)
        if len(chunk) >= CHUNK:
            created += _flush(chunk, study, batch, position + created, hashes)
            chunk = []
    created += _flush(chunk, study, batch, position + created, hashes)
    created += _add_practice(study, practice, to_skip)
    if hashing.sha.hexdigest() != digest:
        raise BatchInvalid(["line 1: the file changed while it was being imported; nothing was written"])
    return created


def _add_practice(study, rows, skipped):
    """Practice items go to Study.practice_items (never Item rows: never served, counted
    or reported). An item_id already there is skipped (and counted as skipped)."""
    have = {p["item_id"] for p in study.practice_items}
    new = [row for row in rows if row.item_id not in have]
    skipped.update(row.item_id for row in rows if row.item_id in have)
    if new:
        study.practice_items = study.practice_items + [
            {"item_id": row.item_id, "data": row.data, "gold": row.gold, "feedback": row.feedback} for row in new]
        study.save(update_fields=["practice_items"])
    return len(new)


def _flush(rows, study, batch, position, hashes):
    """Insert one chunk of items, then their metric scores as Prediction rows."""
    if not rows:
        return 0
    copy_rows(Item, [
        {"study_id": study.pk, "batch_id": batch.pk, "item_id": row.item_id, "position": position + n,
         "data": row.data, "meta": row.meta, "gold": row.gold, "is_gold": row.is_gold,
         "content_hash": hashes[row.item_id][1]}
        for n, row in enumerate(rows)])
    scored = [row for row in rows if row.metric_scores]
    if scored:
        pks = dict(Item.objects.filter(study=study, item_id__in=[row.item_id for row in scored])
                   .values_list("item_id", "pk"))
        copy_rows(Prediction, metric_predictions(study, [(pks[row.item_id], row.data, row.metric_scores)
                                                         for row in scored]))
    return len(rows)


def metric_predictions(study, items):
    """The Prediction rows (dicts) of items' `metric_scores`, as the study's kind reads them
    (StudyKind.metric_score_rows): items are (item pk, display data, metric_scores)."""
    kind = get_kind(study.kind)
    return [{"study_id": study.pk, "item_id": pk, "evaluator": metric, "annotator": "", "question": cid,
             "value": value}
            for pk, data, scores in items for metric, cid, value in kind.metric_score_rows(scores, data)]
