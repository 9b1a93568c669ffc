"""The `score` job: automatic metric scores for every candidate of a study's items.

Each (item, candidate) becomes a record {"input", "output", "reference"}; every metric
scores all records of a chunk in one call (so model-based metrics batch). Scores are
upserted as annotate.Prediction rows (evaluator = metric, annotator = "", question =
candidate id, value = the number; empty = could not be computed), so the study report
shows each metric's alignment with the human majority. Re-running overwrites, never
duplicates.
"""
from annotate.models import Item, Prediction, Study

from .egises_scores import EVALUATOR as EGISES, egises_scores
from .jobs import JobParamsError, register_job_kind
from .metrics.registry import get_metric

# Metrics computed over the whole study once every item is done (they need user groups).
STUDY_METRICS = {EGISES}

DEFAULT_METRICS = ["rouge1", "rougeL", "bleu", "meteor", "bertscore"]


def format_score(value):
    return "" if value is None else format(float(value), ".10g")


def parse_metrics(value):
    names = value.split(",") if isinstance(value, str) else list(value or [])
    names = [n.strip() for n in names if n and n.strip()]
    if not names:
        raise JobParamsError("no metrics given (e.g. --metrics rougeL,bleu)")
    for name in names:
        if name not in STUDY_METRICS:
            get_metric(name)  # raises UnknownMetric with the known names
    return list(dict.fromkeys(names))


def validate_score_params(params):
    slug = params.get("study") or params.get("slug")
    if not slug:
        raise JobParamsError("score needs a study slug")
    study = Study.objects.filter(slug=slug).first()
    if study is None:
        raise JobParamsError(f"study {slug!r} does not exist")
    if not study.items.exists():
        raise JobParamsError(f"study {slug!r} has no items")
    metrics = parse_metrics(params.get("metrics") or DEFAULT_METRICS)
    first = study.items.first().data
    if not isinstance(first.get("candidates"), list) and set(metrics) - STUDY_METRICS:
        raise JobParamsError(f"study {slug!r} is {study.kind}: its items have no candidates to score "
                             f"(only {', '.join(sorted(STUDY_METRICS))} applies)")
    out = dict(params, study=slug, metrics=metrics)
    out.pop("slug", None)
    return out


def score_items(job):
    return [str(pk) for pk in Item.objects.filter(study__slug=job.params["study"]).order_by("position", "pk")
            .values_list("pk", flat=True)]


def item_records(item):
    data = item.data
    source = data.get("input") or data.get("premise") or ""
    return [{"input": source, "output": c.get("text", ""), "reference": data.get("reference") or "",
             "item_id": item.item_id, "candidate_id": c["id"], "meta": item.meta}
            for c in data.get("candidates", [])]


def score_chunk(job, keys):
    items = {str(i.pk): i for i in Item.objects.filter(pk__in=[int(k) for k in keys])}
    records, owners = [], []
    for key in keys:
        for record in item_records(items[key]):
            records.append(record)
            owners.append(items[key])
    rows = []
    per_item = {key: {} for key in keys}
    for metric in job.params["metrics"]:
        if metric in STUDY_METRICS:
            continue
        fn = get_metric(metric)
        model = job.params.get("encoder") if getattr(fn, "model_kind", "llm") == "encoder" else job.params.get("model")
        scores = fn(records, model=model or None, device=job.params.get("device"))
        if len(scores) != len(records):
            raise RuntimeError(f"metric {metric} returned {len(scores)} scores for {len(records)} records")
        for record, item, score in zip(records, owners, scores):
            rows.append(Prediction(study_id=item.study_id, item=item, evaluator=metric, annotator="",
                                   question=record["candidate_id"], value=format_score(score)))
            per_item[str(item.pk)].setdefault(metric, {})[record["candidate_id"]] = score
    Prediction.objects.bulk_create(rows, update_conflicts=True,
                                   unique_fields=["item", "evaluator", "annotator", "question"],
                                   update_fields=["value"])
    return per_item


def store_egises(study_slug):
    items = list(Item.objects.filter(study__slug=study_slug).order_by("position"))
    rows, summary = egises_scores(items)
    Prediction.objects.bulk_create(
        [Prediction(study_id=item.study_id, item=item, evaluator=EGISES, annotator="", question=question,
                    value=format_score(value)) for item, question, value in rows],
        update_conflicts=True, unique_fields=["item", "evaluator", "annotator", "question"], update_fields=["value"])
    return summary


def score_finish(job):
    extra = store_egises(job.params["study"]) if EGISES in job.params["metrics"] else None
    n = Prediction.objects.filter(study__slug=job.params["study"], evaluator__in=job.params["metrics"],
                                  annotator="").count()
    result = {"study": job.params["study"], "metrics": job.params["metrics"], "n_scores": n}
    if extra is not None:
        result[EGISES] = extra
    return result


register_job_kind("score", items=score_items, process_chunk=score_chunk, finish=score_finish,
                  validate=validate_score_params, chunk_size=32)
