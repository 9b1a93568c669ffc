"""Judge runs as resumable jobs (models_runtime.jobs), so the dashboard and
`POST /api/jobs/` can start them:

- `perse`: params {study, model?, k?, evaluator?, device?}; one job item per annotator.
- `expert_batch`: params {input, out, slug?, model?, device?}; one job item per batch
  item; `finish` writes the explanation_choice batch to `out`.
"""
import os

from annotate.models import Judgment, Study
from models_runtime.jobs import JobParamsError, register_job_kind
from models_runtime.models import JobItem


def _backend(params):
    from models_runtime.backends.registry import get_backend

    return get_backend(params.get("model") or "smollm2", device=params.get("device"))


# ---- perse -------------------------------------------------------------------------------

def validate_perse(params):
    slug = params.get("study") or params.get("slug")
    study = Study.objects.filter(slug=slug).first() if slug else None
    if study is None:
        raise JobParamsError(f"study {slug!r} does not exist")
    if study.kind != "aspect_pairwise":
        raise JobParamsError(f"study {slug!r} is {study.kind}; the PerSE evaluator needs aspect_pairwise")
    k = int(params.get("k") or 1)
    if k < 1:
        raise JobParamsError("k must be at least 1")
    model = params.get("model") or "smollm2"
    return {"study": slug, "model": model, "k": k, "evaluator": params.get("evaluator") or f"perse-{model}",
            "device": params.get("device"), "chunk_size": params.get("chunk_size", 4)}


def perse_items(job):
    return sorted(set(Judgment.objects.filter(study__slug=job.params["study"])
                      .values_list("annotator__username", flat=True)))


def perse_chunk(job, usernames):
    from .perse import perse_predict

    study = Study.objects.get(slug=job.params["study"])
    result = perse_predict(study, _backend(job.params), k=job.params["k"], evaluator=job.params["evaluator"],
                           annotators=usernames)
    return {u: {"chunk": result} for u in usernames}


def perse_finish(job):
    from annotate.models import Prediction

    rows = Prediction.objects.filter(study__slug=job.params["study"], evaluator=job.params["evaluator"])
    return {"study": job.params["study"], "evaluator": job.params["evaluator"], "predictions": rows.count(),
            "unparsed": rows.filter(value="").count()}


register_job_kind("perse", items=perse_items, process_chunk=perse_chunk, finish=perse_finish,
                  validate=validate_perse, chunk_size=4)


# ---- expert_batch ------------------------------------------------------------------------

def _read_batch(path):
    from django.core.management.base import CommandError

    from .cli import read_jsonl

    try:
        return read_jsonl(path)
    except CommandError as exc:
        raise JobParamsError(str(exc)) from exc


def validate_expert_batch(params):
    for key in ("input", "out"):
        if not params.get(key):
            raise JobParamsError(f"expert_batch needs {key!r}")
    if not os.path.isfile(params["input"]):
        raise FileNotFoundError(f"{params['input']} does not exist")
    rows = _read_batch(params["input"])
    items = [r for r in rows if "item_id" in r]
    if not items:
        raise JobParamsError(f"{params['input']}: no items")
    bad = [r["item_id"] for r in items if len(r.get("candidates") or []) != 2 or not isinstance(r.get("reference"), str)]
    if bad:
        raise JobParamsError(f"items without a reference and 2 candidates: {', '.join(map(str, bad))}")
    return dict(params, model=params.get("model") or "smollm2", chunk_size=params.get("chunk_size", 16))


def expert_batch_items(job):
    return [str(r["item_id"]) for r in _read_batch(job.params["input"]) if "item_id" in r]


def expert_batch_chunk(job, keys):
    from .expert_batch import explanation_batch

    rows = [r for r in _read_batch(job.params["input"]) if str(r.get("item_id")) in set(keys)]
    _, items, _ = explanation_batch(rows, _backend(job.params), job.params.get("slug"))
    return {str(item["item_id"]): item for item in items}


def expert_batch_finish(job):
    from .expert_batch import explanation_batch, write_batch

    rows = _read_batch(job.params["input"])
    header, _, _ = explanation_batch([r for r in rows if "item_id" not in r], None, job.params.get("slug"))
    failed = JobItem.objects.filter(job=job).exclude(error="").count()
    items = [ji.result for ji in JobItem.objects.filter(job=job, error="").order_by("position") if ji.result]
    write_batch(job.params["out"], header, items)
    calls = sum(e["llm_calls"] for item in items for e in item["explanations"].values())
    return {"study": header["study"]["slug"], "items": len(items), "failed": failed, "llm_calls": calls,
            "out": job.params["out"]}


register_job_kind("expert_batch", items=expert_batch_items, process_chunk=expert_batch_chunk,
                  finish=expert_batch_finish, validate=validate_expert_batch, chunk_size=16)
