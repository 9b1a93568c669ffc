"""The `score` job: automatic metric scores for every candidate of a study's items.

Each (item, candidate) becomes a record {"input", "output", "reference"}; every metric
scores all records of a chunk in one call (so model-based metrics batch). Scores are
upserted as predictions through annotate.services (evaluator = metric, annotator = "",
question = candidate id, value = the number; empty = could not be computed), so the report
shows each metric's alignment with the human majority. Re-running overwrites, never
duplicates. Metrics over the whole study run once in `finish`: EGISES, and the judges
registered with scope "study" (e.g. `perse_scalar`, which needs the annotators' earlier
judgments), each with its options from the params' `options` {metric: {...}}.
"""
from annotate import services
from evaluation.lamp_metrics import METRIC_TASKS, canonical_task

from .egises_scores import EVALUATOR as EGISES
from .egises_scores import egises_scores
from .job_support.kinds import JobKind, JobParamsError
from .metrics.lamp import STUDY_LEVEL as LAMP_F1
from .metrics.lamp import check_task, lamp_f1_scores, lamp_summary
from .metrics.registry import get_metric

# Metrics computed over the whole study once every item is done (EGISES needs user groups,
# LaMP's macro F1 every item of a system).
STUDY_METRICS = {EGISES, LAMP_F1}


def study_scoped(name):
    """A metric run once over the whole study (EGISES; a judge registered with scope "study")."""
    return name in STUDY_METRICS or getattr(get_metric(name), "scope", "record") == "study"


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
    study = services.get_study(slug)
    if study is None:
        raise JobParamsError(f"study {slug!r} does not exist")
    if not study.n_items:
        raise JobParamsError(f"study {slug!r} has no items")
    metrics = parse_metrics(params.get("metrics") or DEFAULT_METRICS)
    for name in metrics:  # a study judge may not apply to this study (e.g. another kind)
        reason = getattr(get_metric(name), "refuses", lambda info: None)(study) if name not in STUDY_METRICS else None
        if reason:
            raise JobParamsError(reason)
    if params.get("task") is not None:  # the LaMP task of every item (else each item's meta.task)
        task = canonical_task(params["task"])
        if task is None:
            raise JobParamsError(f"task {params['task']!r} is not a LaMP task (LaMP-1 ... LaMP-7)")
        for name in metrics:
            if name in METRIC_TASKS:
                check_task(name, task)
        params = dict(params, task=task)
    if not study.items_have_candidates and [m for m in metrics if not study_scoped(m)]:
        raise JobParamsError(f"study {slug!r} is {study.kind}: its items have no candidates to score "
                             f"(only {', '.join(sorted(STUDY_METRICS))} applies)")
    out = dict(params, study=slug, metrics=metrics)
    out.pop("slug", None)
    return out


def score_items(job):
    return services.study_item_keys(job.params["study"])


def item_records(item, task=None):
    """The metric records of one services.ScoringItem: one per candidate (`task`: the
    LaMP task the score job was given, for the lamp_* metrics)."""
    extra = {"task": task} if task else {}
    return [{"input": item.input, "output": c.text, "reference": item.reference, "item_id": item.item_id,
             "candidate_id": c.id, "meta": item.meta, **extra} for c in item.candidates]


def score_chunk(job, keys):
    slug = job.params["study"]
    records, owners = [], []
    for item in services.items_for_scoring(slug, keys):
        for record in item_records(item, job.params.get("task")):
            records.append(record)
            owners.append(item.key)
    rows = []
    per_item = {key: {} for key in keys}
    for metric in job.params["metrics"]:
        if study_scoped(metric):
            continue
        fn = get_metric(metric)
        model = job.params.get("encoder") if getattr(fn, "model_kind", "llm") == "encoder" else job.params.get("model")
        scores = fn(records, model=model or None, device=job.params.get("device"))
        if len(scores) != len(records):
            raise RuntimeError(f"metric {metric} returned {len(scores)} scores for {len(records)} records")
        notes = getattr(scores, "notes", None) or [{}] * len(records)
        for record, key, score, note in zip(records, owners, scores, notes):
            rows.append(services.PredictionRow(item_key=key, evaluator=metric, question=record["candidate_id"],
                                               value=format_score(score)))
            per_item[key].setdefault(metric, {})[record["candidate_id"]] = score
            for name, count in note.items():  # e.g. G-Eval's unparsed samples, summed in score_finish
                sums = per_item[key].setdefault("_samples", {}).setdefault(metric, {})
                sums[name] = sums.get(name, 0) + count
    services.upsert_predictions(slug, rows)
    return per_item


def store_egises(study_slug):
    rows, summary = egises_scores(services.study_items(study_slug))
    services.upsert_predictions(study_slug, [
        services.PredictionRow(item_key=item.key, evaluator=EGISES, question=question, value=format_score(value))
        for item, question, value in rows])
    return summary


def study_records(slug, task=None):
    """(item key, record) for every candidate of the study's non-gold items (the outputs
    its kind names: StudyKind.score_targets)."""
    keys = [item.key for item in services.study_items(slug) if not item.is_gold]
    return [(item.key, record) for item in services.items_for_scoring(slug, keys)
            for record in item_records(item, task)]


def store_lamp_f1(study_slug, task=None):
    """LaMP's macro F1 per system, stored as each item's share of it (metrics/lamp.py)."""
    rows = study_records(study_slug, task)
    values, summary = lamp_f1_scores([record for _, record in rows])
    services.upsert_predictions(study_slug, [
        services.PredictionRow(item_key=key, evaluator=LAMP_F1, question=record["candidate_id"],
                               value=format_score(value)) for (key, record), value in zip(rows, values)])
    return summary


def sample_counts(job) -> dict[str, dict[str, int]]:
    """{metric: {"samples", "unparsed_samples"}} summed over the job's items (G-Eval)."""
    from .models import JobItem

    out: dict[str, dict[str, int]] = {}
    for result in JobItem.objects.filter(job=job).exclude(result=None).values_list("result", flat=True):
        for metric, counts in (result.get("_samples") or {}).items():
            for name, count in counts.items():
                out.setdefault(metric, {}).setdefault(name, 0)
                out[metric][name] += count
    return out


def score_finish(job):
    p = job.params
    extra = store_egises(p["study"]) if EGISES in p["metrics"] else None
    if LAMP_F1 in p["metrics"]:
        store_lamp_f1(p["study"], p.get("task"))
    judged = {m: get_metric(m)(p["study"], model=p.get("model") or None, device=p.get("device"),
                               options=(p.get("options") or {}).get(m))
              for m in p["metrics"] if m not in STUDY_METRICS and study_scoped(m)}
    lamp = [m for m in p["metrics"] if m.startswith("lamp_")]
    per_item = [m for m in p["metrics"] if not study_scoped(m)]
    counts = services.prediction_counts(p["study"], p["metrics"])
    # A judge answer with no score in it is stored empty (never a guessed number): count them.
    result = {"study": p["study"], "metrics": p["metrics"], "n_scores": counts["total"],
              "unparsed": {m: counts["empty_by_evaluator"].get(m, 0) for m in per_item},
              "coverage": services.metric_coverage(p["study"], per_item)}
    if extra is not None:
        result[EGISES] = extra
    result.update(judged)  # each study judge's own counts (its unparsed answers among them)
    samples = sample_counts(job)
    if samples:
        result["samples"] = samples
    if lamp:  # the corpus values LaMP's eval/evaluation.py prints, per system
        result["lamp"] = lamp_summary([r for _, r in study_records(p["study"], p.get("task"))], lamp)
    return result


SCORE = JobKind("score", items=score_items, process_chunk=score_chunk, finish=score_finish,
                validate=validate_score_params, chunk_size=32)
