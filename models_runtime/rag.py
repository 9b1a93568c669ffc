"""The `rag` job (`manage.py generate rag`): LaMP-style personalized candidates.

For each LaMP record (`{"id", "input", "profile": [...], "output"}`) retrieve k profile
items, build the LaMP prompt, generate, and write an alignment batch (the runtime's ALIGNMENT_KIND) with the
expected output as `reference`. Two models: one candidate each, both with the profile
(ids `<model>-<retriever>`). One model: with and without the profile (`<model>-<retriever>`,
`<model>-noprofile`). Each record's candidates are the checkpointed result of its item, so
a resumed job writes the same file without generating again.
"""
import os
from pathlib import Path
from typing import Any

from models_runtime.plan_support.plan_kinds import ALIGNMENT_KIND

from .backends.base import SamplingParams
from .backends.config import model_spec
from .job_support.job_inputs import LinesInvalid, check_lines
from .job_support.kinds import ItemError, JobKind, JobParamsError, file_sha256
from .lamp import DEFAULT_BUDGET, build_prompt, corpus_text, detect_task, retrieval_query
from .metrics.registry import get_metric
from .models import JobItem
from .plan_support.plan_checks import Check, check_generation
from .records import LAMP_HINT, index_jsonl, is_lamp_file, record_errors
from .retrieval import RETRIEVERS, retrieve
from .step import counting

DEFAULT_DISCRIMINATIVE_METRICS = ["rouge1", "rougeL", "bleu", "meteor"]
_records_cache: dict[Any, Any] = {}
def load_records(path):
    """Records by id in file order, each read from disk when used (records.py)."""
    return _records_of(path, index_jsonl)


def _records_of(path, index):
    stat = os.stat(path)
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _records_cache:
        _records_cache.clear()
        _records_cache[key] = index(str(path), None)
    return _records_cache[key]


def check_input(path) -> None:
    """The records checked a line at a time (job_inputs.check_lines), as every job upload is:
    the web request builds no index and keeps none (the worker indexes the file when the job
    runs). Indexed here, a 40 MiB upload of short records took 13-18 s and kept +100 MB in
    the web process for its life (issue 31, item 10). LinesInvalid naming each bad line."""
    name = Path(path).name
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).lstrip()
    except OSError as exc:
        raise JobParamsError(f"cannot read {name}: {exc.strerror}") from None
    if is_lamp_file(head):
        raise JobParamsError(f"{name}: {LAMP_HINT}")
    seen: set[str] = set()

    def check(number, record):
        errors = record_errors(record, seen)
        if isinstance(record, dict) and isinstance(record.get("id"), (str, int)):
            seen.add(str(record["id"]))
        return errors
    try:
        good = check_lines(path, check)
    except LinesInvalid as exc:
        raise LinesInvalid([f"{name} {e}" for e in exc.errors], exc.total) from None
    if not good:
        raise JobParamsError(f"{name}: the input file has no records")


def lamp_retrieve(record, retriever, k, *, seed, encoder=None):
    """Indices of the k profile items LaMP would retrieve for this record (its query and
    corpus texts, lamp.py)."""
    profile = record.get("profile") or []
    task = detect_task(record)
    return retrieve(retriever, retrieval_query(record), profile, k, seed=seed, encoder=encoder,
                    corpus=[corpus_text(item, task) for item in profile])


def candidate_plan(models, retriever):
    """[(candidate id, model, with_profile)] for one record."""
    if len(models) == 1:
        return [(f"{models[0]}-{retriever}", models[0], True), (f"{models[0]}-noprofile", models[0], False)]
    return [(f"{m}-{retriever}", m, True) for m in models]


def validate_rag_params(params):
    models = params.get("models")
    models = [m.strip() for m in (models.split(",") if isinstance(models, str) else models or []) if m.strip()]
    if len(models) not in (1, 2) or len(set(models)) != len(models):
        raise JobParamsError("--models takes one or two different model names")
    for name in models:
        model_spec(name)
    if params.get("retriever") not in RETRIEVERS:
        raise JobParamsError(f"--retriever must be one of {', '.join(RETRIEVERS)}")
    for key in ("input", "out", "slug"):
        if not params.get(key):
            raise JobParamsError(f"generate rag needs --{key}")
    check = Check()
    options = {"max_tokens": params.get("max_new_tokens", 64), "temperature": params.get("temperature", 0.0),
               "stop": params.get("stop") or [], "postprocess": params.get("postprocess") or "",
               "budget": params.get("budget", DEFAULT_BUDGET)}
    gen = check_generation(check, options, where="generate rag")
    k = check.number({"k": params.get("k", 1)}, "k", "generate rag")
    if check.errors:
        raise JobParamsError("; ".join(e.replace("generate rag.", "--").replace("max_tokens", "max-new-tokens")
                                       for e in check.errors))
    out_dir = Path(params["out"]).resolve().parent
    if not out_dir.is_dir():
        raise JobParamsError(f"the directory of --out ({out_dir.name}) does not exist")
    check_input(params["input"])  # LinesInvalid: every bad line
    discriminative = params.get("discriminative")
    if discriminative is not None:
        discriminative = int(discriminative)
        if discriminative < 1:
            raise JobParamsError("--discriminative must be at least 1")
    metrics = params.get("metrics") or DEFAULT_DISCRIMINATIVE_METRICS
    metrics = metrics.split(",") if isinstance(metrics, str) else list(metrics)
    for name in metrics:
        get_metric(name)
    return dict(params, models=models, k=k, discriminative=discriminative, metrics=metrics,
                input=str(Path(params["input"]).resolve()), input_sha256=file_sha256(params["input"]),
                out=str(Path(params["out"]).resolve()), max_new_tokens=gen["max_tokens"], budget=gen["budget"],
                temperature=gen["temperature"], stop=gen["stop"], postprocess=gen["postprocess"])


def rag_items(job):
    return list(load_records(job.params["input"]))


def rag_sampling(p) -> SamplingParams:
    return SamplingParams(max_new_tokens=p["max_new_tokens"], temperature=float(p.get("temperature", 0.0)),
                          stop=tuple(p.get("stop") or ()), postprocess=p.get("postprocess") or "")


def rag_chunk(job, keys):
    from .backends.registry import get_backend, get_encoder

    p = job.params
    records = load_records(p["input"])
    encoder = get_encoder(p.get("encoder"), device=p.get("device")) if p["retriever"] == "dense" else None
    plan = candidate_plan(p["models"], p["retriever"])
    retrieved, prompts, results = {}, {}, {}
    for key in keys:
        record = records[key]
        profile = record.get("profile") or []
        if not profile:  # nothing to retrieve: with and without the profile would be one prompt
            results[key] = {"left_out": "empty profile (the system retrieves)"}
            continue
        picked = lamp_retrieve(record, p["retriever"], p["k"], seed=key, encoder=encoder)
        retrieved[key] = [profile[i].get("id", i) for i in picked]
        prompts[key] = {True: build_prompt(record, [profile[i] for i in picked], p["budget"]),
                        False: build_prompt(record, [], p["budget"])}
    todo = [key for key in keys if key not in results]
    texts = {}
    with counting(len(todo) * len(plan), "generations"):  # per generation, inside the chunk
        for model in dict.fromkeys(m for _, m, _ in plan):
            backend = get_backend(model, device=p.get("device"))
            wanted = [(key, with_profile) for key in todo for _, m, with_profile in plan if m == model]
            outputs = backend.generate([prompts[key][wp] for key, wp in wanted], rag_sampling(p)) if wanted else []
            for (key, wp), gens in zip(wanted, outputs):
                texts[(key, model, wp)] = gens[0]
    for key in todo:
        candidates = []
        for cid, model, wp in plan:
            gen = texts[(key, model, wp)]
            candidates.append({"id": cid, "text": gen.text, "model": model, "profile": wp, "prompt": prompts[key][wp],
                               "tokens_in": gen.tokens_in, "tokens_out": gen.tokens_out, "cached": gen.cached})
        empty = [c["id"] for c in candidates if not c["text"].strip()]
        if empty:
            results[key] = ItemError(f"empty generation for {', '.join(empty)}")
        elif candidates[0]["text"].strip() == candidates[1]["text"].strip():
            results[key] = {"left_out": "identical candidates", "candidates": candidates}
        else:
            results[key] = {"candidates": candidates, "retrieved": retrieved[key]}
    return results


def disagreement(scores_a, scores_b):
    """(metrics preferring the minority side, metrics tied): how much the metrics disagree
    about which of two candidates is better. scores_*: {metric: score or None}."""
    both = [m for m in scores_a if scores_a[m] is not None and scores_b.get(m) is not None]
    a = sum(1 for m in both if scores_a[m] > scores_b[m])
    b = sum(1 for m in both if scores_a[m] < scores_b[m])
    return min(a, b), max(a, b)


def pick_discriminative(items, n):
    """The n items whose metrics split most evenly (largest minority, then smallest
    majority), in input order among equals; returned in input order."""
    ranked = sorted(range(len(items)), key=lambda i: (-items[i]["_split"][0], items[i]["_split"][1], i))
    keep = set(ranked[:n])
    return [item for i, item in enumerate(items) if i in keep]


def _metric_scores(items, metrics, device):
    records = [{"input": it["input"], "output": c["text"], "reference": it["reference"]}
               for it in items for c in it["candidates"]]
    table = {}
    for metric in metrics:
        table[metric] = get_metric(metric)(records, device=device)
    for n, it in enumerate(items):
        it["metric_scores"] = {m: {c["id"]: table[m][2 * n + j] for j, c in enumerate(it["candidates"])}
                               for m in metrics}
        a, b = (it["candidates"][0]["id"], it["candidates"][1]["id"])
        it["_split"] = disagreement({m: s[a] for m, s in it["metric_scores"].items()},
                                    {m: s[b] for m, s in it["metric_scores"].items()})


def rag_finish(job):
    from .job_support.job_files import write_lines

    p = job.params
    records = load_records(p["input"])
    done = {ji.key: ji for ji in JobItem.objects.filter(job=job)}
    items, left_out, failed = [], [], 0
    for key, record in records.items():
        ji = done.get(key)
        if ji is None or ji.error or not ji.result:
            failed += 1
            continue
        if "left_out" in ji.result:
            left_out.append({"id": key, "why": ji.result["left_out"]})
            continue
        cands = ji.result["candidates"]
        meta = {"retriever": p["retriever"], "k": p["k"], "retrieved": ji.result["retrieved"],
                "models": {c["id"]: c["model"] for c in cands}, "with_profile": {c["id"]: c["profile"] for c in cands}}
        if record.get("task"):
            meta["task"] = record["task"]
        items.append({"item_id": key, "input": record["input"], "reference": record["output"],
                      "candidates": [{"id": c["id"], "text": c["text"]} for c in cands], "meta": meta})
    if not items:  # never an empty batch reported as done (a model server down, every answer empty)
        first = f"; first left out: {left_out[0]['id']}: {left_out[0]['why']}" if left_out else ""
        raise JobParamsError(f"no record made an item ({failed} of {len(records)} failed, {len(left_out)} left out"
                             f"{first}): no batch written; see the job's item errors")
    if p.get("discriminative"):
        _metric_scores(items, p["metrics"], p.get("device"))
        items = pick_discriminative(items, p["discriminative"])
    header = {"study": {"slug": p["slug"], "kind": ALIGNMENT_KIND,
                        "title": p.get("title") or "Which response is closer to the user's own text?",
                        "instructions": p.get("instructions") or (
                            "Read the request and the user's own expected output, then pick the response "
                            "that is closer to it in content and writing style.")}}
    for item in items:
        item.pop("_split", None)
        if "metric_scores" in item:  # unscorable values are left out, never written as null
            item["metric_scores"] = {m: {c: v for c, v in s.items() if v is not None}
                                     for m, s in item["metric_scores"].items()}
    write_lines(p["out"], [header, *items])
    return {"out": p["out"], "slug": p["slug"], "n_records": len(records), "n_items": len(items), "failed": failed,
            "n_left_out": len(left_out), "left_out": left_out}


RAG = JobKind("rag", items=rag_items, process_chunk=rag_chunk, finish=rag_finish, validate=validate_rag_params,
              chunk_size=16, inputs=("input",), outputs=(("out", "batch.jsonl"),))
