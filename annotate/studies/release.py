"""A study as a public data release: a Hugging Face `datasets` directory or Parquet files.

Why a second format beside the JSONL backup (annotate/backup.py): a backup moves a study
between servers with everything, usernames and the audit log included; a release is what a
lab publishes with its paper. It keeps items, judgments (real system ids, the shown order,
seconds) and predictions, and replaces every annotator by a pseudonym (`annotator-001`, ...)
that is stable within one release. Usernames, e-mails, platform ids and the audit log never
leave the server this way. The Arrow files are written by `datasets`/`pyarrow`, so readers
use the consumer's own library (`datasets.load_from_disk`, `pyarrow.parquet.read_table`).

Layout of DIR:
- `hf`: `datasets.DatasetDict(items, judgments, predictions).save_to_disk(DIR)`;
- `parquet`: `items.parquet`, `judgments.parquet`, `predictions.parquet`;
- both: `README.md` (the dataset card) and `humeval_study.json` (the study's settings, so
  `import_study DIR` can read the release back as a new study).
"""
import io
import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.dateparse import parse_datetime

from annotate.models import Item, Judgment, Prediction, Study
from annotate.studies.backup import STUDY_FIELDS, BackupError, _plain
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.judgments_csv import JudgmentRows, write_judgments, write_predictions
from annotate.studies.judgments_io import import_judgments, import_predictions

FORMATS = ("hf", "parquet")
TABLES = ("items", "judgments", "predictions")
STUDY_FILE = "humeval_study.json"
CARD_FILE = "README.md"
PSEUDONYM = "annotator-{:03d}"
# Settings kept in a release: the design, not who ran it.
RELEASED_STUDY_FIELDS = tuple(name for name in STUDY_FIELDS if name != "created_at")


def pseudonyms(study):
    """{user id: pseudonym}: every annotator who judged, numbered in user-id order."""
    ids = sorted(set(Judgment.objects.filter(study=study).values_list("annotator_id", flat=True)))
    return {user_id: PSEUDONYM.format(number) for number, user_id in enumerate(ids, start=1)}


def release_tables(study):
    """{table: list of row dicts} with the pseudonyms applied; JSON fields as JSON text."""
    names = pseudonyms(study)
    by_username = dict(get_user_model().objects.filter(id__in=names).values_list("username", "id"))
    items = [{"item_id": item_id, "position": position, "is_gold": is_gold, "content_hash": content_hash,
              "data": json.dumps(data, ensure_ascii=False, sort_keys=True),
              "meta": json.dumps(meta, ensure_ascii=False, sort_keys=True),
              "gold": json.dumps(gold, ensure_ascii=False, sort_keys=True)}
             for item_id, position, is_gold, content_hash, data, meta, gold in
             study.items.order_by("position", "id").values_list(
                 "item_id", "position", "is_gold", "content_hash", "data", "meta", "gold")]
    judgments = [{"item_id": item_id, "annotator": names[user_id], "question": question, "value": value,
                  "shown_order": shown_order, "seconds": seconds,
                  "submitted_at": submitted_at.isoformat() if submitted_at else None, "comment": comment,
                  "repeat": repeat_of is not None}  # a test-retest repeat of the same annotator's answer
                 for item_id, user_id, question, value, shown_order, seconds, submitted_at, comment, repeat_of in
                 Judgment.objects.filter(study=study).order_by("item__position", "annotator_id", "id").values_list(
                     "item__item_id", "annotator_id", "question", "value", "shown_order", "seconds",
                     "submitted_at", "comment", "repeat_of_id")]
    predictions = [{"item_id": item_id, "evaluator": evaluator, "question": question, "value": value,
                    "annotator": _prediction_annotator(annotator, by_username, names)}
                   for item_id, evaluator, annotator, question, value in
                   Prediction.objects.filter(study=study).order_by("item__position", "evaluator", "id").values_list(
                       "item__item_id", "evaluator", "annotator", "question", "value")]
    return {"items": items, "judgments": judgments, "predictions": predictions}


def _prediction_annotator(username, by_username, names):
    """'' stays '' (a prediction for everyone); a username becomes that annotator's pseudonym,
    or 'annotator-unknown' for someone who never judged (no name leaves the server)."""
    if not username:
        return ""
    user_id = by_username.get(username)
    return names[user_id] if user_id is not None else "annotator-unknown"


FEATURES = {
    "items": {"item_id": "string", "position": "int64", "is_gold": "bool", "content_hash": "string",
              "data": "string", "meta": "string",
              "gold": "string"},
    "judgments": {"item_id": "string", "annotator": "string", "question": "string", "value": "string",
                  "shown_order": "string", "seconds": "float64", "submitted_at": "string", "comment": "string",
                  "repeat": "bool"},
    "predictions": {"item_id": "string", "evaluator": "string", "question": "string", "value": "string",
                    "annotator": "string"},
}


def _arrow_table(name, rows):
    import pyarrow as pa

    schema = pa.schema([(column, pa.type_for_alias(kind)) for column, kind in FEATURES[name].items()])
    return pa.Table.from_pylist(rows, schema=schema)


def write_release(study, out_dir, fmt, card_text):
    """Write the release of `study` into `out_dir` (created; must be empty or absent)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty: choose a new directory")
    out.mkdir(parents=True, exist_ok=True)
    tables = {name: _arrow_table(name, rows) for name, rows in release_tables(study).items()}
    if fmt == "hf":
        from datasets import Dataset, DatasetDict

        DatasetDict({name: Dataset(table) for name, table in tables.items()}).save_to_disk(str(out))
    else:
        import pyarrow.parquet as pq

        for name, table in tables.items():
            pq.write_table(table, out / f"{name}.parquet")
    settings = {name: _plain(getattr(study, name)) for name in RELEASED_STUDY_FIELDS}
    (out / STUDY_FILE).write_text(json.dumps({"format": "humeval-release", "version": 1, "study": settings},
                                             ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (out / CARD_FILE).write_text(card_text, encoding="utf-8")
    return {name: table.num_rows for name, table in tables.items()}


def dataset_card(study):
    """The release's README.md: the Hub's metadata block, what the files hold, the privacy
    rule, then the study's datasheet (annotate/datasheet.py), so the card and the paper
    state the same numbers."""
    from annotate.reports.datasheet import datasheet, to_markdown

    sheet = datasheet(study)
    front = ["---", "pretty_name: " + json.dumps(study.title, ensure_ascii=False), "tags:", "- human-evaluation",
             "- personalization", f"- {study.kind}", "configs:"]
    front += [f"- config_name: {name}\n  data_files: {name}/*.arrow" for name in TABLES]
    body = [f"# {study.title}", "",
            f"Human judgments from the humeval study `{study.slug}` ({study.kind}).", "",
            "Tables: `items` (the items shown, JSON fields as text), `judgments` (one row per annotator, item "
            "and question: the answer, the options in the order shown joined by `|`, seconds; `repeat` true for a "
            "test-retest repeat of the annotator's own earlier answer, to leave out of any other statistic), "
            "`predictions` "
            "(automatic evaluators' scores and picks).", "",
            "Load it with `datasets.load_from_disk(DIR)` (format hf) or `pyarrow.parquet.read_table` (parquet).", "",
            "Privacy: annotators appear only as pseudonyms (`annotator-001`, ...) stable within this release; "
            "usernames, e-mail addresses and recruiting-platform ids are not included.", ""]
    return "\n".join(front + ["---", ""] + body) + "\n" + to_markdown(sheet)


def is_release(path):
    return (Path(path) / STUDY_FILE).is_file()


def read_release(path):
    """(study settings, {table: rows}) of a release directory in either format."""
    path = Path(path)
    try:
        header = json.loads((path / STUDY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackupError(f"{STUDY_FILE}: cannot read ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != "humeval-release":
        raise BackupError(f"{STUDY_FILE}: not a humeval release")
    if (path / "dataset_dict.json").is_file():
        from datasets import load_from_disk

        loaded = load_from_disk(str(path))
        tables = {name: loaded[name].to_list() for name in TABLES}
    else:
        import pyarrow.parquet as pq

        tables = {name: pq.read_table(path / f"{name}.parquet").to_pylist() for name in TABLES}
    return header["study"], tables


def import_release(path, *, replace=False):
    """A release read back as a new study, all or nothing like import_study: the study and
    its items from the release, then its judgments and predictions through the same doors as
    any lab's files (`import_judgments`, `import_predictions`: the same checks, assignments
    completed as theirs are; pseudonyms become users without a password)."""
    settings, tables = read_release(path)
    slug = settings.get("slug")
    with transaction.atomic():
        existing = Study.objects.filter(slug=slug).first()
        if existing is not None:
            if not replace:
                raise BackupError(f"study {existing.slug!r} already exists (use --replace)")
            existing.delete()
        try:
            study = Study.objects.create(**{k: settings[k] for k in RELEASED_STUDY_FIELDS if k in settings})
            Item.objects.bulk_create([
                Item(study=study, item_id=row["item_id"], position=row["position"], is_gold=row["is_gold"],
                     content_hash=row["content_hash"], data=json.loads(row["data"]), meta=json.loads(row["meta"]),
                     gold=json.loads(row["gold"])) for row in tables["items"]])
            judgments = io.StringIO()
            rows = ({**row, "study": slug, "submitted_at": parse_datetime(row["submitted_at"] or "")}
                    for row in tables["judgments"])
            write_judgments(JudgmentRows(rows, repeat_column=True), judgments, "jsonl")
            predictions = io.StringIO()
            write_predictions(({**row, "study": slug} for row in tables["predictions"]), predictions)
            source = f"release:{Path(path).name}"
            import_judgments(io.BytesIO(judgments.getvalue().encode("utf-8")), source=source)
            if tables["predictions"]:
                import_predictions(io.BytesIO(predictions.getvalue().encode("utf-8")), source=source,
                                   only_study=slug)
        except BatchInvalid as exc:
            more = f" (and {exc.total - 5} more)" if exc.total > 5 else ""
            raise BackupError("; ".join(exc.errors[:5]) + more) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise BackupError(f"malformed release ({exc!r})") from None
    return study
