"""Judge runs as resumable jobs (models_runtime.jobs): the `perse`, `expert`,
`expert_batch` and `probes` commands submit these, and so can `POST /api/jobs/`.

- `perse`: params {study, model?, k?, evaluator?, device?}; one item per annotator.
- `expert`: params {input, out?, model?, device?, max_attempts?, extract_tokens?,
  judge_tokens?}; one item per record (key = its 0-based position); `finish` builds the
  corpus document and writes it to `out`.
- `expert_batch`: params {input, out, slug?, model?, device?}; one item per batch item;
  `finish` writes the explanation batch (kind EXPLANATION_CHOICE) to `out`.
- `probes`: params {input, metrics, suffix?, swap?, model?, device?}; one item per
  suffix-probed metric (`suffix:<metric>`) plus `order_swap`.
Input files are fingerprinted in the params (`input_sha256`): an edited file starts a new
job instead of resuming one made from other contents.
"""
import json
from pathlib import Path

from django.core.management.base import CommandError

from annotate import services
from evaluation.vocabulary import DEFAULT_MODEL
from models_runtime.job_support.job_inputs import check_lines, is_header, text_fields_missing
from models_runtime.job_support.kinds import JobKind, JobParamsError, file_sha256
from models_runtime.metrics.registry import get_metric
from models_runtime.models import JobItem

from .cli import read_jsonl
from .expert import ExpertConfig, corpus_result, explain
from .expert_batch import explanation_batch, write_batch
from .perse import predict, store, study_info
from .probes import SUFFIX, order_probe, records_from_lines, suffix_probe
from .steps import RetryPolicy


def _backend(params):
    """The judge model of a job (tests replace this function with a scripted backend)."""
    from models_runtime.backends.registry import get_backend

    return get_backend(params.get("model") or DEFAULT_MODEL, device=params.get("device"))


def _read(path, required=()):
    try:
        return read_jsonl(path, required=required)
    except CommandError as exc:
        raise JobParamsError(str(exc)) from exc


def _input_params(params, required_keys=("input",)):
    """Required keys present; `input` resolved and fingerprinted; `out` resolved."""
    for key in required_keys:
        if not params.get(key):
            raise JobParamsError(f"--{key.replace('_', '-')} is required")
    out = dict(params, input=str(Path(params["input"]).resolve()))
    if Path(out["input"]).is_file():
        out["input_sha256"] = file_sha256(out["input"])
    if params.get("out"):
        out["out"] = str(Path(params["out"]).resolve())
        if not Path(out["out"]).parent.is_dir():
            raise JobParamsError(f"the directory of {out['out']} does not exist")
    return out


def _results(job):
    """{key: result} of the job's successful items."""
    return {ji.key: ji.result for ji in JobItem.objects.filter(job=job, error="")}


# ---- perse -------------------------------------------------------------------------------

PERSE_COUNTS = ("predictions", "unparsed", "na", "skipped", "created", "updated")


def validate_perse(params):
    slug = params.get("study") or params.get("slug")
    if not slug:
        raise JobParamsError("perse needs a study slug")
    try:
        study_info(slug)
    except ValueError as exc:
        raise JobParamsError(str(exc)) from exc
    k = int(params.get("k") or 1)
    if k < 1:
        raise JobParamsError("k must be at least 1")
    model = params.get("model") or DEFAULT_MODEL
    return {"study": slug, "model": model, "k": k, "evaluator": params.get("evaluator") or f"perse-{model}",
            "device": params.get("device"), "chunk_size": params.get("chunk_size", 4)}


def perse_items(job):
    return services.judging_annotators(job.params["study"])


def perse_chunk(job, usernames):
    """One batched LLM call for the chunk's annotators; predictions stored per annotator."""
    p = job.params
    info = study_info(p["study"])
    rows, skipped = predict(info, _backend(p), k=p["k"], evaluator=p["evaluator"], annotators=usernames)
    return {u: store(info.slug, [r for r in rows if r.annotator == u], {u: skipped[u]}) for u in usernames}


def perse_finish(job):
    """The counts of `perse_predict`, summed over the annotators."""
    results = _results(job).values()
    return {"study": job.params["study"], "evaluator": job.params["evaluator"],
            **{n: sum(r[n] for r in results) for n in PERSE_COUNTS}}


PERSE = JobKind("perse", items=perse_items, process_chunk=perse_chunk, finish=perse_finish, validate=validate_perse,
                chunk_size=4)


# ---- expert ------------------------------------------------------------------------------

def batch_records(item):
    """A pairwise batch item (what `generate rag` and `pipeline` write) as one ExPerT record
    per candidate, id `<item_id>/<candidate id>`."""
    return [{"id": f"{item['item_id']}/{c.get('id')}", "input": item.get("input", ""), "output": c.get("text", ""),
             "reference": item.get("reference", "")} for c in item.get("candidates") or [] if isinstance(c, dict)]


def _expert_records(path):
    """Records {id, input, output, reference}, or a batch file's items expanded to one
    record per candidate."""
    try:
        rows = [r for r in _read(path) if "item_id" in r]
    except JobParamsError:  # the record read below lists every bad line
        rows = []
    if rows and all(isinstance(r.get("candidates"), list) for r in rows):
        return [record for r in rows for record in batch_records(r)]
    return [r for r in _read(path, required=("output", "reference")) if "study" not in r]


def _expert_check(shape: dict):
    """A line of an `expert` input: records {id, output, reference}, or a pairwise batch's
    items (each with its candidates), one shape per file (the first row's)."""

    def check(number, row):
        if not isinstance(row, dict):
            return ["expected a JSON object"]
        if is_header(row):
            return []
        kind = "batch items" if "item_id" in row and isinstance(row.get("candidates"), list) else "records"
        if shape.setdefault("kind", kind) != kind:
            return [f"one of {kind} in a file of {shape['kind']} (line {shape['first']})"]
        shape.setdefault("first", number)
        shape["rows"] = shape.get("rows", 0) + 1
        return text_fields_missing(row, ("output", "reference")) if kind == "records" else []

    return check


def validate_expert(params):
    out = _input_params(params)
    shape: dict = {}
    check_lines(out["input"], _expert_check(shape))
    if not shape.get("rows"):
        raise JobParamsError(f"{params['input']}: no records")
    for key, default in (("max_attempts", 3), ("extract_tokens", ExpertConfig.extract_tokens),
                         ("judge_tokens", ExpertConfig.judge_tokens)):
        out[key] = int(default if params.get(key) is None else params[key])
        if out[key] < 1:
            raise JobParamsError("--max-attempts, --extract-tokens and --judge-tokens must be at least 1")
    return dict(out, model=params.get("model") or DEFAULT_MODEL, chunk_size=params.get("chunk_size") or 64)


def expert_items(job):
    return [str(n) for n in range(len(_expert_records(job.params["input"])))]


def expert_chunk(job, keys):
    p = job.params
    records = _expert_records(p["input"])
    config = ExpertConfig(extract_tokens=p["extract_tokens"], judge_tokens=p["judge_tokens"],
                          policy=RetryPolicy(max_attempts=p["max_attempts"]),
                          shared_checks=bool(p.get("shared_checks", False)))
    chosen = [records[int(k)] for k in keys]
    explanations = explain(chosen, _backend(p), config)
    return {k: {"id": str(r.get("id", int(k) + 1)), **e} for k, r, e in zip(keys, chosen, explanations)}


def expert_finish(job):
    results = _results(job)
    document = corpus_result([results[k] for k in sorted(results, key=int)])
    if job.params.get("out"):
        with open(job.params["out"], "w", encoding="utf-8") as handle:
            json.dump(document, handle, ensure_ascii=False)
    return document


EXPERT = JobKind("expert", items=expert_items, process_chunk=expert_chunk, finish=expert_finish,
                 validate=validate_expert, chunk_size=64, inputs=("input",),
                 outputs=(("out", "expert.json"),))


# ---- expert_batch ------------------------------------------------------------------------

def _pair_problems(row: dict, what: str) -> list[str]:
    """Why a pairwise batch item cannot be judged: it needs a text reference and exactly 2
    candidates {id, text}."""
    candidates = row.get("candidates")
    if not isinstance(candidates, list) or len(candidates) != 2:
        return [f"{what} {row.get('item_id', row.get('id'))}: expected exactly 2 candidates"]
    if not all(isinstance(c, dict) and isinstance(c.get("text"), str) and "id" in c for c in candidates):
        return [f"{what} {row.get('item_id', row.get('id'))}: every candidate needs an id and a text"]
    return text_fields_missing(row, ("reference",))


def _batch_item_check(count: dict):
    def check(number, row):
        if not isinstance(row, dict):
            return ["expected a JSON object"]
        if is_header(row):
            return []
        if "item_id" not in row:
            return ["expected a batch item {item_id, reference, candidates}"]
        count["items"] = count.get("items", 0) + 1
        return _pair_problems(row, "item")

    return check


def validate_expert_batch(params):
    out = _input_params(params, ("input", "out"))
    count: dict = {}
    check_lines(out["input"], _batch_item_check(count))
    if not count.get("items"):
        raise JobParamsError(f"{params['input']}: no items")
    return dict(out, model=params.get("model") or DEFAULT_MODEL, chunk_size=params.get("chunk_size") or 32)


def expert_batch_items(job):
    return [str(r["item_id"]) for r in _read(job.params["input"]) if "item_id" in r]


def expert_batch_chunk(job, keys):
    wanted = set(keys)
    rows = [r for r in _read(job.params["input"]) if str(r.get("item_id")) in wanted]
    _, items, _ = explanation_batch(rows, _backend(job.params), job.params.get("slug"))
    return {str(item["item_id"]): item for item in items}


def expert_batch_finish(job):
    rows = _read(job.params["input"])
    header, _, _ = explanation_batch([r for r in rows if "item_id" not in r], None, job.params.get("slug"))
    failed = JobItem.objects.filter(job=job).exclude(error="").count()
    items = [ji.result for ji in JobItem.objects.filter(job=job, error="").order_by("position") if ji.result]
    write_batch(job.params["out"], header, items)
    calls = sum(e["llm_calls"] for item in items for e in item["explanations"].values())
    return {"study": header["study"]["slug"], "items": len(items), "failed": failed, "llm_calls": calls,
            "out": job.params["out"]}


EXPERT_BATCH = JobKind("expert_batch", items=expert_batch_items, process_chunk=expert_batch_chunk,
                       finish=expert_batch_finish, validate=validate_expert_batch, chunk_size=32,
                       inputs=("input",), outputs=(("out", "batch.jsonl"),))


# ---- probes ------------------------------------------------------------------------------

ORDER_SWAP = "order_swap"


def _probe_records(path):
    try:
        return records_from_lines(_read(path))
    except ValueError as exc:
        raise JobParamsError(str(exc)) from exc


def _probe_check(count: dict):
    """A line of a `probes` input: a pairwise batch item (the order swap and one suffix
    record per candidate) or a record {id, output, reference}."""

    def check(number, row):
        if not isinstance(row, dict):
            return ["expected a JSON object"]
        if is_header(row):
            return []
        if "candidates" in row:
            count["pairs"] = count.get("pairs", 0) + 1
            return _pair_problems(row, "record")
        count["singles"] = count.get("singles", 0) + 1
        return text_fields_missing(row, ("output", "reference"))

    return check


def validate_probes(params):
    out = _input_params(params)
    if params.get("study") and services.get_study(params["study"]) is None:  # kept with that study
        raise JobParamsError(f"unknown study {params['study']!r}")
    count: dict = {}
    check_lines(out["input"], _probe_check(count))
    pairs = count.get("pairs", 0)
    if not pairs and not count.get("singles"):
        raise JobParamsError(f"{params['input']}: no records")
    metrics = params.get("metrics") or "gemba,geval,expert"
    metrics = [m.strip() for m in (metrics.split(",") if isinstance(metrics, str) else metrics) if m.strip()]
    for name in metrics:
        get_metric(name)  # UnknownMetric names the known ones
    return dict(out, metrics=list(dict.fromkeys(metrics)), suffix=params.get("suffix") or SUFFIX,
                swap=bool(params.get("swap", True)) and bool(pairs), model=params.get("model") or DEFAULT_MODEL,
                chunk_size=1)


def probes_items(job):
    return [f"suffix:{m}" for m in job.params["metrics"]] + ([ORDER_SWAP] if job.params["swap"] else [])


def probes_chunk(job, keys):
    p = job.params
    singles, pairs = _probe_records(p["input"])
    out = {}
    for key in keys:
        if key == ORDER_SWAP:
            out[key] = order_probe(pairs, _backend(p))
        else:
            name = key.removeprefix("suffix:")
            out[key] = suffix_probe(singles, [name], model=p["model"], device=p.get("device"), suffix=p["suffix"])[name]
    return out


def probes_finish(job):
    results = _results(job)
    swap = {"pairwise": results[ORDER_SWAP]} if ORDER_SWAP in results else None
    return {"suffix": {"text": job.params["suffix"],
                       "metrics": {m: results[f"suffix:{m}"] for m in job.params["metrics"]}},
            "order_swap": swap}


PROBES = JobKind("probes", items=probes_items, process_chunk=probes_chunk, finish=probes_finish,
                 validate=validate_probes, chunk_size=1, inputs=("input",))
