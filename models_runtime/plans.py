"""Study plans (`manage.py pipeline PLAN.json`, `POST /api/pipelines/`): reading and
checking a plan, and reading its input records.

A plan names its input files by name: relative to the plan file for the command, the
names of the uploaded files for the API. `validate_plan` turns a plan into the pipeline
job's params: absolute paths with their SHA-256 (an edited file is a new job), the systems
and the generation options with their defaults filled in.

Input formats: `lamp` (LaMP's own files: a JSON array of questions `{id, input, profile}`
and an outputs file `{task, golds: [{id, output}]}`) and `jsonl` (our record format, one
`{"id", "input", "profile", "output"}` a line, models_runtime/rag.py).
"""
import json
import os
from pathlib import Path

from .backends.base import POSTPROCESSORS
from .backends.config import model_spec
from .ip import plan as ip_plan
from .jobs import JobParamsError, file_sha256
from .lamp import DEFAULT_BUDGET, TASKS
from .retrieval import RETRIEVERS

SYSTEM_RETRIEVERS = (*RETRIEVERS, "none")
FORMATS = ("lamp", "jsonl")
_cache: dict = {}


def _need(cond, message):
    if not cond:
        raise JobParamsError(message)


def _int(value, name, low):
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise JobParamsError(f"{name} must be an integer") from None
    _need(number >= low and not isinstance(value, bool), f"{name} must be at least {low}")
    return number


def validate_study(study) -> dict:
    _need(isinstance(study, dict), 'the plan needs a "study" object')
    _need(isinstance(study.get("slug"), str) and study["slug"].strip(), "study.slug is required")
    _need(isinstance(study.get("title"), str) and study["title"].strip(), "study.title is required")
    kind = study.get("kind", "pairwise_alignment")
    _need(kind == "pairwise_alignment", f"study.kind {kind!r}: a plan builds pairwise_alignment studies")
    return dict(study, kind=kind)


def validate_system(system, n) -> dict:
    _need(isinstance(system, dict), f"systems[{n}] must be an object")
    sid, model = system.get("id"), system.get("model")
    _need(isinstance(sid, str) and sid.strip(), f"systems[{n}].id is required")
    _need(isinstance(model, str) and model.strip(), f"systems[{n}] ({sid}): model is required")
    model_spec(model)  # ModelNotAvailable names the setting
    retriever = system.get("retriever", "none")
    _need(retriever in SYSTEM_RETRIEVERS,
          f"systems[{n}] ({sid}): retriever must be one of {', '.join(SYSTEM_RETRIEVERS)}")
    k = 0 if retriever == "none" else _int(system.get("k", 1), f"systems[{n}] ({sid}): k", 1)
    prompt = system.get("prompt", "lamp")
    _need(prompt == "lamp", f"systems[{n}] ({sid}): prompt must be \"lamp\" (LaMP's templates)")
    return {"id": sid, "model": model, "retriever": retriever, "k": k, "prompt": prompt}


def validate_generation(gen) -> dict:
    gen = gen or {}
    _need(isinstance(gen, dict), '"generation" must be an object')
    stop = gen.get("stop") or []
    _need(isinstance(stop, list) and all(isinstance(s, str) and s for s in stop),
          "generation.stop must be a list of non-empty strings")
    post = gen.get("postprocess") or ""
    _need(post in POSTPROCESSORS, "generation.postprocess must be first_line or title")
    try:
        temperature = float(gen.get("temperature", 0.0))
    except (TypeError, ValueError):
        raise JobParamsError("generation.temperature must be a number") from None
    _need(temperature >= 0, "generation.temperature must be at least 0")
    budget = _int(gen.get("budget", DEFAULT_BUDGET), "generation.budget", 1)
    return {"max_tokens": _int(gen.get("max_tokens", 64), "generation.max_tokens", 1), "temperature": temperature,
            "stop": stop, "postprocess": post, "budget": budget}


def _names(value, what) -> list[str]:
    _need(isinstance(value, list) and all(isinstance(v, str) and v for v in value), f'"{what}" must be a list of names')
    return list(dict.fromkeys(value))


def resolve_file(name, files) -> str:
    """The path of input file `name`: `files` maps uploaded names to paths, or is the
    directory the plan's names are relative to."""
    _need(isinstance(name, str) and name, "input file names must be strings")
    if isinstance(files, dict):
        _need(name in files, f"input file {name!r} was not uploaded (uploaded: {', '.join(sorted(files)) or 'none'})")
        return str(Path(files[name]).resolve())
    path = (Path(files) / name).resolve()
    _need(path.is_file(), f"input file {path} does not exist")
    return str(path)


def validate_input(spec, files) -> dict:
    _need(isinstance(spec, dict), 'the plan needs an "input" object')
    fmt = spec.get("format")
    _need(fmt in FORMATS, f"input.format must be one of {', '.join(FORMATS)}")
    keys = ("questions", "outputs") if fmt == "lamp" else ("records",)
    out = {"format": fmt, "task": spec.get("task") or ""}
    _need(not out["task"] or out["task"] in TASKS, f"input.task must be one of {', '.join(TASKS)}")
    for key in keys:
        out[key] = resolve_file(spec.get(key), files)
        out[key + "_sha256"] = file_sha256(out[key])
    load_records(out)  # every error now, before a job starts
    return out


def validate_plan(plan, files, workdir) -> dict:
    """A plan (dict) -> the pipeline job's params. `files`: see resolve_file."""
    _need(isinstance(plan, dict), "a plan is a JSON object")
    systems = plan.get("systems")
    _need(isinstance(systems, list) and len(systems) == 2, "a pairwise plan has exactly two systems")
    systems = [validate_system(s, n) for n, s in enumerate(systems)]
    _need(systems[0]["id"] != systems[1]["id"], "the two systems need different ids")
    metrics, judges = _names(plan.get("metrics") or [], "metrics"), _names(plan.get("judges") or [], "judges")
    scored = metrics + [j for j in judges if j != ip_plan.PLAN_JUDGE]  # `ip` is a step of its own
    if scored:
        from .scoring import parse_metrics

        parse_metrics(scored)
    header = validate_study(plan.get("study"))
    params = {"study": header["slug"], "study_header": header, "input": validate_input(plan.get("input"), files),
              "systems": systems, "generation": validate_generation(plan.get("generation")),
              "metrics": metrics, "judges": judges, "judge_model": plan.get("judge_model") or None,
              "device": plan.get("device") or None, "workdir": str(Path(workdir).resolve())}
    if ip_plan.PLAN_JUDGE in judges:
        params["ip"] = ip_plan.ip_params(plan, files)
    return params


def read_plan(path) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as exc:
        raise JobParamsError(f"cannot read the plan {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise JobParamsError(f"the plan {path} is not valid JSON: {exc}") from exc


# ---- input records -----------------------------------------------------------------------

def _read_json(path, what):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as exc:
        raise JobParamsError(f"{path}: the LaMP {what} file is not valid JSON ({exc})") from exc


def read_lamp(questions_path, outputs_path, task="") -> list[dict]:
    """LaMP's questions and outputs files -> our records (`output` = the gold)."""
    questions = _read_json(questions_path, "questions")
    _need(isinstance(questions, list), f"{questions_path}: LaMP questions are a JSON array of {{id, input, profile}}")
    outputs = _read_json(outputs_path, "outputs")
    _need(isinstance(outputs, dict) and isinstance(outputs.get("golds"), list),
          f"{outputs_path}: LaMP outputs are an object {{task, golds: [{{id, output}}]}}")
    golds = {str(g.get("id")): g.get("output") for g in outputs["golds"] if isinstance(g, dict)}
    task = task or outputs.get("task") or ""
    records, errors = [], []
    for n, q in enumerate(questions):
        if not isinstance(q, dict) or not isinstance(q.get("input"), str) or q.get("id") is None:
            errors.append(f"question {n}: expected {{id, input, profile}}")
            continue
        profile = q.get("profile") or []
        if not isinstance(profile, list) or not all(isinstance(p, dict) for p in profile):
            errors.append(f"question {q['id']}: profile must be a list of objects")
            continue
        gold = golds.get(str(q["id"]))
        if not isinstance(gold, str) or not gold.strip():
            errors.append(f"question {q['id']}: no output in {Path(outputs_path).name}")
            continue
        records.append({"id": str(q["id"]), "input": q["input"], "profile": profile, "output": gold,
                        **({"task": task} if task in TASKS else {})})
    _need(not errors, "; ".join(errors[:20]) + (f" (and {len(errors) - 20} more)" if len(errors) > 20 else ""))
    _need(records, f"{questions_path}: no questions")
    return records


def load_records(spec) -> dict[str, dict]:
    """The plan's input records by id, in file order (read once per file version)."""
    from .rag import read_records

    paths = [spec[k] for k in ("questions", "outputs", "records") if k in spec]
    key = tuple((p, os.stat(p).st_mtime_ns, os.stat(p).st_size) for p in paths) + (spec.get("task"),)
    if key not in _cache:
        if spec["format"] == "lamp":
            records = read_lamp(spec["questions"], spec["outputs"], spec.get("task") or "")
        else:
            records, errors = read_records(spec["records"])
            _need(not errors, f"{spec['records']}: " + "; ".join(errors[:20]))
            if spec.get("task"):
                records = [dict(r, task=spec["task"]) for r in records]
        ids = [str(r["id"]) for r in records]
        _need(len(set(ids)) == len(ids), "the input repeats a question id")
        _cache.clear()
        _cache[key] = {str(r["id"]): r for r in records}
    return _cache[key]


# ---- uploaded plans (API and web page) ---------------------------------------------------

def save_uploads(uploads, root) -> dict[str, str]:
    """Store uploaded input files under `root/uploads/<sha256>/<name>` (the same bytes land
    at the same path, so re-sending a plan resumes its job). -> {uploaded name: path}."""
    import hashlib

    saved: dict[str, str] = {}
    for upload in uploads:
        name = os.path.basename(str(upload.name or ""))
        _need(name and name not in (".", ".."), "an uploaded file has no name")
        _need(name not in saved, f"two uploaded files are named {name!r}")
        digest, chunks = hashlib.sha256(), []
        for chunk in upload.chunks():
            digest.update(chunk)
            chunks.append(chunk)
        folder = Path(root) / "uploads" / digest.hexdigest()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        if not path.exists():
            tmp = folder / (name + ".part")
            tmp.write_bytes(b"".join(chunks))
            os.replace(tmp, path)
        saved[name] = str(path)
    return saved


def plan_from_upload(plan_field) -> dict:
    """The plan of a request: an uploaded JSON file, a JSON string, or an object."""
    if hasattr(plan_field, "read"):
        plan_field = plan_field.read()
    if isinstance(plan_field, (bytes, str)):
        try:
            plan_field = json.loads(plan_field)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise JobParamsError(f"the plan is not valid JSON: {exc}") from exc
    _need(isinstance(plan_field, dict), "send the plan as a JSON object (field \"plan\")")
    return plan_field


def start_uploaded_plan(plan_field, uploads, user):
    """Validate an uploaded plan with its input files and start (or resume) its pipeline
    job. -> Job. JobParamsError (and ModelNotAvailable, UnknownMetric) for a bad plan."""
    from django.conf import settings

    from .jobs import prepare_job, start_job

    plan = plan_from_upload(plan_field)
    plan.pop("device", None)  # the server decides where it runs
    files = save_uploads(uploads, settings.HUMEVAL_PIPELINE_DIR)
    params = validate_plan(plan, files, settings.HUMEVAL_PIPELINE_DIR)
    job, resumed = prepare_job("pipeline", params, user=user)
    if not (resumed and job.celery_task_id and job.state != job.FAILED):
        start_job(job)
    job.refresh_from_db()
    return job
