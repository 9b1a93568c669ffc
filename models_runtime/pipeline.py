"""The `pipeline` job (`manage.py pipeline PLAN.json`, `POST /api/pipelines/`): a study
plan run as one chain of resumable steps.

    generate  -> a `plan_generate` job: every system's candidate for every question
    batch     -> the pairwise_alignment batch file (items left out are listed, with why)
    import    -> the batch into the study, through annotate.services
    score     -> a `score` job: every metric and judge into the study's predictions

The pipeline's items are its steps, processed outside the checkpoint transaction
(JobKind.atomic False): a step runs its own job in this process, whose checkpoints commit
as they go, so a worker killed mid-step resumes that step's job where it stopped. The
running pipeline's `result` shows each step's job and progress (the study dashboard).
Re-running a finished plan starts new step jobs whose generations come from the cache.
"""
import json
import os
from pathlib import Path

from annotate import services

from .backends.base import SamplingParams
from .ip.plan import PLAN_JUDGE, step_ip
from .jobs import ItemError, JobKind, JobParamsError, prepare_job, run_job
from .models import Job, JobItem
from .plans import load_records
from .rag import lamp_retrieve

STEPS = ["generate", "batch", "import", "score"]
BATCH_NAME = "batch.jsonl"


class StepFailed(JobParamsError):
    """A step that cannot go on (its job failed, every item failed, an empty batch): the
    chain fails with this message; re-running the plan resumes at this step."""


# ---- generate: one job, an item per question --------------------------------------------

def generate_items(job) -> list[str]:
    return list(load_records(job.params["input"]))


def sampling(gen: dict) -> SamplingParams:
    return SamplingParams(max_new_tokens=gen["max_tokens"], temperature=gen["temperature"],
                          stop=tuple(gen["stop"]), postprocess=gen["postprocess"])


def _prompts(record, systems, gen, encoder):
    """{system id: (prompt, retrieved profile ids)}, or a reason to leave the item out."""
    from .lamp import build_prompt

    profile = record.get("profile") or []
    out = {}
    for system in systems:
        if system["retriever"] == "none":
            out[system["id"]] = (build_prompt(record, [], gen["budget"]), [])
            continue
        if not profile:
            return f"empty profile (system {system['id']} retrieves)"
        picked = lamp_retrieve(record, system["retriever"], system["k"], seed=record["id"], encoder=encoder)
        out[system["id"]] = (build_prompt(record, [profile[i] for i in picked], gen["budget"]),
                             [profile[i].get("id", i) for i in picked])
    return out


def generate_chunk(job, keys):
    from .backends.registry import get_backend, get_encoder

    p = job.params
    records, systems = load_records(p["input"]), p["systems"]
    dense = any(s["retriever"] == "dense" for s in systems)
    encoder = get_encoder(device=p.get("device")) if dense else None
    prompts = {key: _prompts(records[key], systems, p["generation"], encoder) for key in keys}
    results = {key: {"left_out": why} for key, why in prompts.items() if isinstance(why, str)}
    todo = [key for key in keys if key not in results]
    texts = {}
    for model in dict.fromkeys(s["model"] for s in systems):
        wanted = [(key, s["id"]) for key in todo for s in systems if s["model"] == model]
        if not wanted:
            continue
        backend = get_backend(model, device=p.get("device"))
        outputs = backend.generate([prompts[key][sid][0] for key, sid in wanted], sampling(p["generation"]))
        texts.update({w: gens[0].text for w, gens in zip(wanted, outputs)})
    for key in todo:
        empty = [s["id"] for s in systems if not texts[(key, s["id"])].strip()]
        results[key] = ItemError(f"empty generation for {', '.join(empty)}") if empty else {
            "candidates": [{"id": s["id"], "text": texts[(key, s["id"])], "retrieved": prompts[key][s["id"]][1]}
                           for s in systems]}
    return results


PLAN_GENERATE = JobKind("plan_generate", items=generate_items, process_chunk=generate_chunk, chunk_size=8)


# ---- the chain ---------------------------------------------------------------------------

def _note(job, step, child):
    """Show a step's job and progress on the running pipeline (its `result`)."""
    job.refresh_from_db(fields=["result"])
    steps = dict((job.result or {}).get("steps") or {})
    steps[step] = {"job": child.pk, "state": child.state, "done": child.done, "total": child.total}
    Job.objects.filter(pk=job.pk).update(result={"steps": steps})


def run_step_job(job, step, kind, params) -> Job:
    """Run (or resume) the step's own job here; StepFailed unless it finished with at
    least one item done."""
    child, _ = prepare_job(kind, params, user=job.created_by)
    _note(job, step, child)

    def progress(done, total):
        child.done, child.total = done, total
        _note(job, step, child)

    child = run_job(child.pk, on_progress=progress)
    _note(job, step, child)
    if child.state == Job.FAILED:
        last = (child.errors or [{}])[-1].get("error", "unknown error")
        raise StepFailed(f"step {step}: job {child.pk} failed: {last}")
    if child.total and child.n_errors == child.total:
        first = JobItem.objects.filter(job=child).exclude(error="").order_by("position").first()
        raise StepFailed(f"step {step}: every item failed (job {child.pk}; first: {first.key}: {first.error})")
    return child


def generate_params(p) -> dict:
    return {"study": p["study"], "input": p["input"], "systems": p["systems"],
            "generation": p["generation"], "device": p.get("device")}


def step_generate(job) -> dict:
    child = run_step_job(job, "generate", "plan_generate", generate_params(job.params))
    return {"job": child.pk, "done": child.done, "failed": child.n_errors}


def generate_job(job) -> Job:
    """The job the generate step of this pipeline ran (named in the step's checkpoint)."""
    row = JobItem.objects.filter(job=job, key="generate").first()
    if row is None or not row.result:
        raise StepFailed("step batch: the generate step has not finished")
    return Job.objects.get(pk=row.result["job"])


def batch_items(p, checkpoints) -> tuple[list[dict], list[dict], int]:
    """(items, left out [{"id", "why"}], failed) from the generate job's checkpoints."""
    records = load_records(p["input"])
    items, left_out, failed = [], [], 0
    for key, record in records.items():
        row = checkpoints.get(key)
        if row is None or row.error:
            failed += 1
            continue
        if "left_out" in row.result:
            left_out.append({"id": key, "why": row.result["left_out"]})
            continue
        cands = row.result["candidates"]
        if cands[0]["text"].strip() == cands[1]["text"].strip():
            left_out.append({"id": key, "why": "identical candidates"})
            continue
        items.append({"item_id": key, "input": record["input"], "reference": record["output"],
                      "candidates": [{"id": c["id"], "text": c["text"]} for c in cands],
                      "meta": {"systems": {s["id"]: s for s in p["systems"]},
                               "retrieved": {c["id"]: c["retrieved"] for c in cands}}})
    return items, left_out, failed


def batch_path(p) -> str:
    return str(Path(p["workdir"]) / p["study"] / BATCH_NAME)


def step_batch(job) -> dict:
    p = job.params
    child = generate_job(job)
    checkpoints = {row.key: row for row in JobItem.objects.filter(job=child)}
    items, left_out, failed = batch_items(p, checkpoints)
    if not items:
        raise StepFailed(f"step batch: no item to put in the batch ({len(left_out)} left out, {failed} failed"
                         + (f"; first left out: {left_out[0]['id']}: {left_out[0]['why']}" if left_out else "") + ")")
    header = {"study": {k: v for k, v in p["study_header"].items() if k in (
        "slug", "kind", "title", "instructions", "annotations_per_item", "allow_tie")}}
    header["study"].setdefault("instructions", "Read the request and the user's own expected output, then pick "
                                               "the response that is closer to it in content and writing style.")
    out = batch_path(p)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".part", "w", encoding="utf-8") as handle:
        for line in [header, *items]:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    os.replace(out + ".part", out)
    return {"out": out, "n_items": len(items), "n_left_out": len(left_out), "left_out": left_out,
            "failed": failed}


def step_import(job) -> dict:
    try:
        return services.import_batch_file(batch_path(job.params), expected_slug=job.params["study"])
    except services.BatchRefused as refused:
        raise StepFailed(f"step import: the batch was refused: {refused}") from refused


def step_score(job) -> dict:
    p = job.params
    names = p["metrics"] + [j for j in p["judges"] if j != PLAN_JUDGE]  # `ip` is a step of its own
    if not names:
        return {"skipped": "no metrics or judges in the plan"}
    params = {"study": p["study"], "metrics": names, "model": p.get("judge_model"),
              "device": p.get("device")}
    child = run_step_job(job, "score", "score", params)
    return {"job": child.pk, "result": child.result}


STEP_FUNCTIONS = {"generate": step_generate, "batch": step_batch, "import": step_import, "score": step_score,
                  "ip": step_ip}


def pipeline_items(job) -> list[str]:
    return list(STEPS) + (["ip"] if job.params.get("ip") else [])  # the plan judge `ip` (models_runtime/ip)


def pipeline_chunk(job, keys):
    return {key: STEP_FUNCTIONS[key](job) for key in keys}


def pipeline_finish(job) -> dict:
    steps = {row.key: row.result for row in JobItem.objects.filter(job=job)}
    return {"study": job.params["study"], "steps": steps}


def validate_pipeline_params(params) -> dict:
    """Params come from plans.validate_plan (the command and the API check the plan)."""
    for key in ("study", "study_header", "input", "systems", "generation", "workdir"):
        if key not in params:
            raise JobParamsError(f"pipeline params lack {key!r}: build them with plans.validate_plan")
    return params


PIPELINE = JobKind("pipeline", items=pipeline_items, process_chunk=pipeline_chunk, finish=pipeline_finish,
                   validate=validate_pipeline_params, chunk_size=1, atomic=False)
