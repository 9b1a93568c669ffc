"""The `pipeline` job (`manage.py pipeline PLAN.json`, `POST /api/pipelines/`): a study
plan run as one chain of resumable steps.

    generate  -> a `plan_generate` job: every system's candidate for every question
    batch     -> the study's batch file (plan_kinds.py: one item per question with every
                 system's candidate for the pairwise kinds), the prompts file, and the
                 questions left out, with why
    import    -> the batch into the study, through annotate.services
    score     -> a `score` job: every metric and judge into the study's predictions

The pipeline's items are its steps, processed outside the checkpoint transaction
(JobKind.atomic False): a step runs its own job (a child: `Job.parent`) in this process,
whose checkpoints commit as they go, so a worker killed mid-step resumes that step's job
where it stopped. The chain is one unit: cancelling any of its jobs cancels it (state
`cancelled`, what was imported stays and is listed in the result), and a lost worker's
chain is requeued once, through the pipeline. The running pipeline shows each step's job,
state and progress in its `result`, and the step's own count (generations) in `step`.
"""
from pathlib import Path

from annotate import services

from .backends.base import SamplingParams
from .job_support.job_files import write_lines
from .job_support.kinds import ItemError, JobCancelled, JobKind, JobParamsError
from .jobs import prepare_job, run_job
from .models import Job, JobItem
from .plan_support.plan_judges import PLAN_JUDGES
from .plan_support.plan_kinds import PLAN_KINDS, identical_outputs
from .rag import lamp_retrieve
from .records import load_records
from .step import Step, counting, listener

STEPS = ["generate", "batch", "import", "score"]
BATCH_NAME, PROMPTS_NAME = "batch.jsonl", "prompts.jsonl"


class StepFailed(JobParamsError):
    """A step that cannot go on (its job failed, every item failed, an empty batch): the
    chain fails with this message. `resumable`: re-running can succeed as it is (the step's
    job stopped on a lost server), or something must be fixed first."""

    def __init__(self, message, resumable=False):
        super().__init__(message)
        self.resumable = resumable


# ---- generate: one job, an item per question --------------------------------------------

def generate_items(job) -> list[str]:
    return list(load_records(job.params["input"]))


def sampling(gen: dict) -> SamplingParams:
    return SamplingParams(max_new_tokens=gen["max_tokens"], temperature=gen["temperature"],
                          stop=tuple(gen["stop"]), postprocess=gen["postprocess"])


def prompts_for(record, systems, gen, encoder):
    """{system id: (prompt, retrieved profile ids)}, or why the question is left out."""
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


def plan_encoder(p):
    from .backends.registry import get_encoder

    return get_encoder(device=p.get("device")) if any(s["retriever"] == "dense" for s in p["systems"]) else None


def generate_chunk(job, keys):
    from .backends.registry import get_backend

    p = job.params
    records, systems = load_records(p["input"]), p["systems"]
    encoder = plan_encoder(p)
    prompts = {key: prompts_for(records[key], systems, p["generation"], encoder) for key in keys}
    results = {key: {"left_out": why} for key, why in prompts.items() if isinstance(why, str)}
    todo = [key for key in keys if key not in results]
    texts = {}
    with counting(len(todo) * len(systems), "generations"):  # the step's progress inside the chunk
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
            "candidates": [{"id": s["id"], "text": texts[(key, s["id"])], "prompt": prompts[key][s["id"]][0],
                            "retrieved": prompts[key][s["id"]][1]} for s in systems]}
    return results


PLAN_GENERATE = JobKind("plan_generate", items=generate_items, process_chunk=generate_chunk, chunk_size=8)


def dry_run(params, n: int = 2) -> dict:
    """The first `n` prompts of each system, built as the generate step would (retrieval
    included), without a job or a model: `pipeline --dry-run`."""
    records = load_records(params["input"])
    encoder = plan_encoder(params)
    shown: dict[str, list] = {s["id"]: [] for s in params["systems"]}
    left_out = []
    for key in records:
        if all(len(v) >= n for v in shown.values()):
            break
        built = prompts_for(records[key], params["systems"], params["generation"], encoder)
        if isinstance(built, str):
            left_out.append({"id": key, "why": built})
            continue
        for sid, (prompt, retrieved) in built.items():
            shown[sid].append({"id": key, "prompt": prompt, "retrieved": retrieved})
    return {"study": params["study"], "task": params["input"].get("task") or None,
            "n_questions": len(records), "prompts": shown, "left_out": left_out}


# ---- the chain ---------------------------------------------------------------------------

class StepProgress:
    """A step's job reporting to its pipeline: the step's job, state and items in the
    pipeline's `result`, and the count inside its chunk (generations) in the pipeline's
    `step`. That count goes to the pipeline's own heartbeat, which writes it with its next
    beat: written here it would lock the pipeline's row inside the step's chunk transaction
    until the chunk commits, and the pipeline's heartbeat would wait behind it (issue 31:
    a running chain looked lost and could be requeued while it ran)."""

    def __init__(self, job, step, child):
        self.job, self.step, self.child = job, step, child
        self.show = listener()  # the pipeline's heartbeat (None when nothing beats)

    def note(self, state=None):
        """Outside any chunk transaction: before, between and after the step's chunks."""
        self.job.refresh_from_db(fields=["result"])
        steps = dict((self.job.result or {}).get("steps") or {})
        steps[self.step] = {"job": self.child.pk, "state": state or self.child.state, "done": self.child.done,
                            "total": self.child.total}
        Job.objects.filter(pk=self.job.pk).update(result={"steps": steps}, step={
            "done": self.child.done, "total": self.child.total, "unit": f"items (step {self.step})"})

    def __call__(self, done, total):
        self.child.done, self.child.total = done, total
        self.note(state=Job.RUNNING)

    def show_step(self, current):
        if self.show is not None:
            shown = Step(current.total, f"{current.unit} (step {self.step})")
            shown.done = current.done
            self.show(shown)

    def close(self):
        if self.show is not None:
            self.show(None)


def run_step_job(job, step, kind, params) -> Job:
    """Run (or resume) the step's own job here, as a child of the pipeline; StepFailed
    unless it finished with at least one item done; JobCancelled when it was cancelled."""
    child, _ = prepare_job(kind, params, user=job.created_by)
    Job.objects.filter(pk=child.pk).update(parent=job)
    progress = StepProgress(job, step, child)
    progress.note()
    try:
        child = run_job(child.pk, on_progress=progress)
    finally:
        progress.close()
    progress.child = child
    progress.note()
    if child.state == Job.CANCELLED:
        raise JobCancelled(f"step {step}: job {child.pk} was cancelled at {child.done}/{child.total} items")
    if child.state == Job.FAILED:
        last = (child.errors or [{}])[-1]
        raise StepFailed(f"step {step}: job {child.pk} failed: {last.get('error', 'unknown error')}",
                         resumable=bool(last.get("resumable")))
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


def batch_items(p, checkpoints) -> tuple[list[dict], list[dict], list[dict], int]:
    """(items, prompt rows, left out [{"id", "why"}], failed) from the generate job's
    checkpoints, the items built by the study kind's builder (plan_kinds.py)."""
    records = load_records(p["input"])
    build = PLAN_KINDS[p["study_header"]["kind"]].items
    systems = {s["id"]: s for s in p["systems"]}
    items, prompts, left_out, failed = [], [], [], 0
    for key in records:
        row = checkpoints.get(key)
        if row is None or row.error:
            failed += 1
            continue
        if "left_out" in row.result:
            left_out.append({"id": key, "why": row.result["left_out"]})
            continue
        cands = row.result["candidates"]
        prompts += [{"id": key, "system": c["id"], "model": systems[c["id"]]["model"], "prompt": c["prompt"],
                     "retrieved": c["retrieved"], "output": c["text"]} for c in cands]
        meta = {"systems": systems, "retrieved": {c["id"]: c["retrieved"] for c in cands}}
        if p["input"].get("task"):
            meta["task"] = p["input"]["task"]
        built = build(records[key], [{"id": c["id"], "text": c["text"]} for c in cands], meta)
        if isinstance(built, str):
            left_out.append({"id": key, "why": built})
        else:
            items += built
    return items, prompts, left_out, failed


def output_path(p, name) -> Path:
    """A file of the plan's study folder, HUMEVAL_PIPELINE_DIR/<slug>/ (the slug is checked
    with the plan; this refuses anything outside the folder all the same)."""
    root = Path(p["workdir"]).resolve()
    path = (root / p["study"] / name).resolve()
    if not path.is_relative_to(root):
        raise StepFailed(f"study slug {p['study']!r} would write outside the pipeline folder")
    return path


def batch_path(p) -> str:
    return str(output_path(p, BATCH_NAME))


def step_batch(job) -> dict:
    p = job.params
    child = generate_job(job)
    checkpoints = {row.key: row for row in JobItem.objects.filter(job=child)}
    items, prompts, left_out, failed = batch_items(p, checkpoints)
    if not items:
        raise StepFailed(f"step batch: no item to put in the batch ({len(left_out)} left out, {failed} failed"
                         + (f"; first left out: {left_out[0]['id']}: {left_out[0]['why']}" if left_out else "") + ")")
    out = output_path(p, BATCH_NAME)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StepFailed(f"step batch: cannot make the study's folder: {exc.strerror} (HUMEVAL_PIPELINE_DIR)") \
            from None
    write_lines(str(out), [{"study": p["study_header"]}, *items])
    write_lines(str(output_path(p, PROMPTS_NAME)), prompts)
    Job.objects.filter(pk=job.pk).update(files=[BATCH_NAME, PROMPTS_NAME])
    return {"n_items": len(items), "item_ids": [i["item_id"] for i in items], "n_left_out": len(left_out),
            "left_out": left_out, "failed": failed, "files": [BATCH_NAME, PROMPTS_NAME],
            "identical_outputs": identical_outputs(items)}


def step_import(job) -> dict:
    try:
        return services.import_batch_file(batch_path(job.params), expected_slug=job.params["study"])
    except services.BatchRefused as refused:
        raise StepFailed(f"step import: the batch was refused: {refused}") from refused


def step_score(job) -> dict:
    p = job.params
    scored_by_score = [n for n in p["judges"] if PLAN_JUDGES[n].job == "score"]
    names = p["metrics"] + scored_by_score
    out: dict = {}
    if names:
        params = {"study": p["study"], "metrics": names, "model": p.get("judge_model"), "device": p.get("device")}
        child = run_step_job(job, "score", "score", params)
        out = {"job": child.pk, "result": child.result}
    for name in p["judges"]:
        judge = PLAN_JUDGES[name]
        if judge.job != "score" and judge.params is not None:
            child = run_step_job(job, "score", judge.job, judge.params(p))
            out.setdefault("judges", {})[name] = {"job": child.pk, "result": child.result}
    return out or {"skipped": "no metrics or judges in the plan"}


def step_ip(job) -> dict:
    """The pipeline step of the plan judge `ip`: the probe's own job, run here."""
    child = run_step_job(job, "ip", "ip", dict(job.params["ip"], server_paths=True))
    result = child.result or {}
    return {"job": child.pk, "effects": [{k: e[k] for k in ("model", "cues", "score", "delta", "ci95", "ci_method",
                                                              "p_value", "n_questions", "n_samples")}
                                         for e in result.get("effects", [])],
            "files": result.get("files", {}), "human_study": result.get("human_study")}


STEP_FUNCTIONS = {"generate": step_generate, "batch": step_batch, "import": step_import, "score": step_score,
                  "ip": step_ip}


def pipeline_items(job) -> list[str]:
    return list(STEPS) + (["ip"] if job.params.get("ip") else [])  # the plan judge `ip` (models_runtime/ip)


def pipeline_chunk(job, keys):
    return {key: STEP_FUNCTIONS[key](job) for key in keys}


def pipeline_finish(job) -> dict:
    steps = {row.key: row.result for row in JobItem.objects.filter(job=job)}
    return {"study": job.params["study"], "steps": steps}


def pipeline_stopped(job) -> dict:
    """A chain that was cancelled or failed: the steps so far, and the items it imported
    (they stay in the study)."""
    job.refresh_from_db(fields=["result"])
    steps = dict((job.result or {}).get("steps") or {})
    finished = {row.key: row.result for row in JobItem.objects.filter(job=job)}
    steps.update(finished)
    imported = finished.get("batch", {}).get("item_ids", []) if "import" in finished else []
    return {"study": job.params["study"], "steps": steps, "imported": imported,
            "stopped_at": next((s for s in STEPS if s not in finished), None)}


def validate_pipeline_params(params) -> dict:
    """Params come from plans.validate_plan (the command and the API check the plan)."""
    for key in ("study", "study_header", "input", "systems", "generation", "workdir"):
        if key not in params:
            raise JobParamsError(f"pipeline params lack {key!r}: build them with plans.validate_plan")
    return params


PIPELINE = JobKind("pipeline", items=pipeline_items, process_chunk=pipeline_chunk, finish=pipeline_finish,
                   validate=validate_pipeline_params, chunk_size=1, atomic=False, stopped=pipeline_stopped)
