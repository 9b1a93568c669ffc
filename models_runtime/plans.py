"""Study plans (`manage.py pipeline PLAN.json`, `POST /api/pipelines/`): the whole plan is
checked before anything runs, and turned into the pipeline job's params.

Checked first, every problem at once (PlanInvalid lists them): unknown keys at any level
(with the closest valid one: `top_k` -> "did you mean `k`?"), types, the bounds of every
number, the study slug (`[a-z0-9-]{1,50}`), the number of systems for the study kind, the
models, metrics and judges, the LaMP task against the files' own, and the batch the plan
will write (its header and an item shaped like the real ones go through the importer's
own checks, so a plan the import step would refuse fails now, not after generating).

A plan names its input files by name: relative to the plan file for the command, the
names of the uploaded files for the API. The params hold absolute paths with their
SHA-256 (an edited file is a new job). Input formats: `lamp` (LaMP's own files) and
`jsonl` (our records); models_runtime/records.py reads them with bounded memory.
"""
import hashlib
import json
import os
import re
from pathlib import Path

from annotate import services
from evaluation.lamp_metrics import METRIC_TASKS, canonical_task
from evaluation.vocabulary import CHOICE_QUESTION, TIE, USEFULNESS_QUESTION
from models_runtime.plan_support.plan_kinds import ALIGNMENT_KIND

from .backends.config import ModelNotAvailable, model_spec
from .ip import plan as ip_plan
from .job_support.kinds import JobParamsError, file_sha256
from .metrics.registry import STUDY_METRIC_NAMES, UnknownMetric, available_metrics, get_metric
from .plan_support.plan_checks import Check, check_generation, resolve_file, shown
from .plan_support.plan_judges import PLAN_JUDGES
from .plan_support.plan_kinds import PLAN_KINDS
from .plan_support.suggest import did_you_mean
from .records import load_records
from .retrieval import RETRIEVERS

SLUG_RE = re.compile(r"^[a-z0-9-]{1,50}$")
SYSTEM_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
RESERVED_SYSTEM_IDS = {TIE, CHOICE_QUESTION, USEFULNESS_QUESTION}
SYSTEM_RETRIEVERS = (*RETRIEVERS, "none")
FORMATS = ("lamp", "jsonl")
PLAN_KEYS = ("study", "input", "systems", "generation", "metrics", "judges", "judge_model", "device", "ip")
INPUT_KEYS = {"lamp": ("format", "task", "questions", "outputs"), "jsonl": ("format", "task", "records")}
SYSTEM_KEYS = ("id", "model", "retriever", "k", "prompt")
DEVICES = ("cpu", "cuda")
MAX_PLAN_DEPTH, MAX_INT_DIGITS = 32, 30
MAX_PLAN_BYTES = 1 << 20  # a plan names its input files; it does not hold them


class PlanInvalid(JobParamsError):
    """Everything wrong with a plan, one `where: what` line each."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = list(errors)


# ---- the parts of a plan -------------------------------------------------------------------

def check_study(check: Check, study) -> dict | None:
    if not isinstance(study, dict):
        check.add("study", "the plan needs a \"study\" object (slug, kind, title, ...)")
        return None
    check.keys(study, "study", services.batch_header_keys())
    slug = study.get("slug")
    if not (isinstance(slug, str) and SLUG_RE.match(slug)):
        check.add("study.slug", f"must be 1-50 lowercase letters, digits or '-', got {shown(slug)}")
    kind = study.get("kind", ALIGNMENT_KIND)
    if kind not in PLAN_KINDS:
        check.add("study.kind", f"a plan builds {', '.join(PLAN_KINDS)} studies, got {shown(kind)}"
                                f"{did_you_mean(str(kind), PLAN_KINDS)}")
        return None
    header = dict(study, kind=kind)
    header.setdefault("instructions", PLAN_KINDS[kind].instructions)
    return header


def check_system(check: Check, system, n: int) -> dict | None:
    where = f"systems[{n}]"
    if not isinstance(system, dict):
        check.add(where, f"must be an object {{id, model, retriever, k}}, got {shown(system)}")
        return None
    sid = system.get("id")
    if isinstance(sid, str) and sid:
        where = f"systems[{n}] ({sid})"
    check.keys(system, where, SYSTEM_KEYS)
    errors = len(check.errors)
    if not (isinstance(sid, str) and SYSTEM_ID_RE.match(sid)) or sid in RESERVED_SYSTEM_IDS:
        check.add(f"{where}.id", "must be 1-64 letters, digits, '.', '_' or '-' (starting with a letter or digit), "
                                 f"not {', '.join(sorted(RESERVED_SYSTEM_IDS))}; got {shown(sid)}")
    model = system.get("model")
    if not (isinstance(model, str) and model):
        check.add(f"{where}.model", f"must name a model (HUMEVAL_MODELS, or smollm2), got {shown(model)}")
    else:
        try:
            model_spec(model)
        except ModelNotAvailable as exc:
            check.add(f"{where}.model", str(exc))
    retriever = system.get("retriever", "none")
    if retriever not in SYSTEM_RETRIEVERS:
        check.add(f"{where}.retriever", f"must be one of {', '.join(SYSTEM_RETRIEVERS)}, got {shown(retriever)}"
                                        f"{did_you_mean(str(retriever), SYSTEM_RETRIEVERS)}")
    k = 0
    if retriever == "none":
        if "k" in system:
            check.add(f"{where}.k", "a system with retriever \"none\" retrieves nothing: leave k out")
    else:
        k = check.number(system, "k", where)
    prompt = system.get("prompt", "lamp")
    if prompt != "lamp":
        check.add(f"{where}.prompt", f"must be \"lamp\" (LaMP's templates), got {shown(prompt)}")
    if len(check.errors) > errors:
        return None
    return {"id": sid, "model": model, "retriever": retriever, "k": k, "prompt": prompt}


def check_systems(check: Check, systems, kind: str | None) -> list[dict]:
    low, high = ((PLAN_KINDS[kind].min_systems, PLAN_KINDS[kind].max_systems) if kind in PLAN_KINDS else (2, 8))
    if not isinstance(systems, list) or not low <= len(systems) <= high:
        got = f"{len(systems)}" if isinstance(systems, list) else shown(systems)
        check.add("systems", f"a {kind or 'plan'} study takes {low} to {high} systems (a list), got {got}")
        return []
    out = [check_system(check, s, n) for n, s in enumerate(systems)]
    ids: list[str] = [s["id"] for s in systems if isinstance(s, dict) and isinstance(s.get("id"), str)]
    for sid in sorted({i for i in ids if ids.count(i) > 1}):
        check.add("systems", f"two systems are named {sid!r}: ids must differ (they are the candidate ids)")
    return [s for s in out if s]


def check_input(check: Check, spec, files) -> dict | None:
    if not isinstance(spec, dict):
        check.add("input", "the plan needs an \"input\" object ({\"format\": \"lamp\", \"questions\", \"outputs\"} "
                           "or {\"format\": \"jsonl\", \"records\"})")
        return None
    fmt = spec.get("format")
    if fmt not in FORMATS:
        check.add("input.format", f"must be lamp (LaMP's own files) or jsonl (our records), got {shown(fmt)}")
        return None
    check.keys(spec, "input", INPUT_KEYS[fmt])
    out = {"format": fmt, "task": ""}
    if spec.get("task") is not None:
        task = canonical_task(spec["task"])
        if task is None:
            check.add("input.task", f"must be a LaMP task (LaMP-1 ... LaMP-7, or LaMP_N as LaMP's files spell it), "
                                    f"got {shown(spec['task'])}")
        out["task"] = task or ""
    for key in INPUT_KEYS[fmt][2:]:
        try:
            out[key] = resolve_file(spec.get(key), files)
        except JobParamsError as exc:
            check.add(f"input.{key}", str(exc))
    if len(out) < len(INPUT_KEYS[fmt]):
        return None
    for key in INPUT_KEYS[fmt][2:]:
        out[key + "_sha256"] = file_sha256(out[key])
    return out


def check_records(check: Check, spec: dict) -> dict | None:
    """Read the input once (every problem by question) and fix its task: the plan's, else
    the LaMP outputs file's own."""
    try:
        records = load_records(spec)
    except JobParamsError as exc:
        for line in getattr(exc, "errors", None) or [str(exc)]:
            check.add("input", line)
        return None
    return dict(spec, task=records.task, n_questions=len(records))


def check_scoring(check: Check, metrics: list[str], judges: list[str], kind: str | None, task: str | None,
                  judge_model) -> None:
    known = sorted(set(available_metrics()) | set(STUDY_METRIC_NAMES))
    for name in metrics:
        try:
            get_metric(name) if name not in STUDY_METRIC_NAMES else None
        except UnknownMetric:
            check.add(f"metrics: {name}", f"unknown metric{did_you_mean(name, known)}; known: {', '.join(known)}")
            continue
        if name in METRIC_TASKS and task is not None:
            if not task:
                check.add(f"metrics: {name}", "needs the LaMP task: give input.task (or LaMP's outputs file)")
            elif task not in METRIC_TASKS[name]:
                use = ", ".join(m for m, ts in METRIC_TASKS.items() if task in ts) or "rouge1, rougeL"
                check.add(f"metrics: {name}", f"is defined for {' and '.join(METRIC_TASKS[name])} (LaMP's "
                                              f"eval/evaluation.py), this input is {task}: use {use}")
    for name in judges:
        judge = PLAN_JUDGES.get(name)
        if judge is None:
            check.add(f"judges: {name}", f"unknown judge{did_you_mean(name, PLAN_JUDGES)}; known: "
                                         f"{', '.join(sorted(PLAN_JUDGES))}")
        elif kind is not None and judge.kinds is not None and kind not in judge.kinds:
            check.add(f"judges: {name}", f"judges {', '.join(judge.kinds)} studies, not {kind}")
    if judge_model is not None:
        if not (isinstance(judge_model, str) and judge_model):
            check.add("judge_model", f"must name a model, got {shown(judge_model)}")
        else:
            try:
                model_spec(judge_model)
            except ModelNotAvailable as exc:
                check.add("judge_model", str(exc))


def check_batch(check: Check, header: dict, systems: list[dict], task: str) -> None:
    """The header and an item shaped like the real ones through the importer's checks:
    the study's settings, the existing study, the candidate ids and how many a kind takes."""
    kind = PLAN_KINDS[header["kind"]]
    record = {"id": "plan-check", "input": "A request.", "output": "The user's own text."}
    candidates = [{"id": s["id"], "text": f"Candidate {n}."} for n, s in enumerate(systems)]
    items = kind.items(record, candidates, {"task": task} if task else {})
    for line in services.batch_errors([{"study": header}, *(items if isinstance(items, list) else [])]):
        number, _, why = line.partition(": ")
        check.add("study" if number == "line 1" else "systems", why or line)


def validate_plan(plan, files, workdir) -> dict:
    """A plan (dict) -> the pipeline job's params; PlanInvalid listing every problem.
    `files`: see resolve_file."""
    if not isinstance(plan, dict):
        raise PlanInvalid(["plan: must be a JSON object {study, input, systems, generation, metrics, judges}"])
    check = Check()
    check.keys(plan, "", PLAN_KEYS)
    header = check_study(check, plan.get("study"))
    kind = header["kind"] if header else None
    systems = check_systems(check, plan.get("systems"), kind)
    generation = check_generation(check, plan.get("generation"))
    metrics, judges = check.names(plan.get("metrics"), "metrics"), check.names(plan.get("judges"), "judges")
    device = plan.get("device")
    if device is not None and device not in DEVICES:
        check.add("device", f"must be cpu or cuda (or left out), got {shown(device)}")
    spec = check_input(check, plan.get("input"), files)
    if spec is not None and not check.errors:  # the files are read only for an otherwise good plan
        spec = check_records(check, spec)
    task = spec["task"] if spec else None
    check_scoring(check, metrics, judges, kind, task, plan.get("judge_model"))
    evaluator = (header or {}).get("uncertainty_evaluator")  # allocation judge_uncertain (docs/statistics.md)
    if isinstance(evaluator, str) and evaluator not in [*metrics, *judges]:
        check.add("study.uncertainty_evaluator", f"{evaluator!r} is none of the plan's metrics and judges: its "
                                                 "scores would never be stored, so no item would be offered to humans")
    if any(s["retriever"] == "dense" for s in systems):
        from .backends.registry import encoder_path

        try:
            encoder_path()
        except ModelNotAvailable as exc:
            check.add("systems", f"retriever dense: {exc}")
    ip = None
    if ip_plan.PLAN_JUDGE in judges:
        try:
            ip = ip_plan.ip_params(plan, files)
        except JobParamsError as exc:
            check.add("ip", str(exc))
    if header and systems and not check.errors:
        check_batch(check, header, systems, task or "")
    if check.errors:
        raise PlanInvalid(check.errors)
    assert header is not None  # a missing study is an error above
    params = {"study": header["slug"], "study_header": header, "input": spec, "systems": systems,
              "generation": generation, "metrics": metrics, "judges": judges,
              "judge_model": plan.get("judge_model") or None, "device": device or None,
              "workdir": str(Path(workdir).resolve())}
    if ip is not None:
        params["ip"] = ip  # the plan judge `ip`: a pipeline step of its own (models_runtime/ip/plan.py)
    return params


# ---- reading a plan ---------------------------------------------------------------------------

def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"a number of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def parse_plan(text, where: str = "the plan") -> dict:
    """A plan's JSON text -> dict, refusing what would break the server: nesting deeper
    than MAX_PLAN_DEPTH, integers of more than MAX_INT_DIGITS digits, NaN/Infinity."""
    from humeval.jsonl import json_nesting_error

    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise JobParamsError(f"{where} is not UTF-8 text") from None
    nested = json_nesting_error(text, MAX_PLAN_DEPTH)
    if nested:
        raise JobParamsError(f"{where} is not a plan: {nested} (a plan needs 4)")
    try:
        plan = json.loads(text, parse_int=_bounded_int, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise JobParamsError(f"{where} is not valid JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise JobParamsError(f"{where} is not a plan: {exc}") from None
    if not isinstance(plan, dict):
        raise JobParamsError(f"{where} must be a JSON object {{study, input, systems, ...}}")
    return plan


def read_plan(path) -> dict:
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_PLAN_BYTES + 1)
    except OSError as exc:
        raise JobParamsError(f"cannot read the plan {path}: {exc.strerror}") from exc
    if len(text) > MAX_PLAN_BYTES:
        raise JobParamsError(f"the plan {path} is over {MAX_PLAN_BYTES} bytes: a plan names its input files, "
                             "it does not hold them")
    return parse_plan(text, f"the plan {Path(path).name}")


# ---- uploaded plans (API and web page) ------------------------------------------------------

def save_uploads(uploads, root) -> dict[str, str]:
    """Store uploaded input files under `root/uploads/<sha256>/<name>`, streamed in chunks
    (bounded memory; the same bytes land at the same path, so re-sending a plan resumes
    its job). -> {uploaded name: path}."""
    saved: dict[str, str] = {}
    incoming = Path(root) / "uploads"
    incoming.mkdir(parents=True, exist_ok=True)
    for upload in uploads:
        name = os.path.basename(str(upload.name or ""))
        if not name or name in (".", "..") or name.startswith("."):
            raise JobParamsError("an uploaded file has no usable name: name it as the plan does")
        if name in saved:
            raise JobParamsError(f"two uploaded files are named {name!r}")
        digest = hashlib.sha256()
        tmp = incoming / f".upload-{os.getpid()}-{id(upload)}.part"
        try:
            with open(tmp, "wb") as handle:
                for chunk in upload.chunks():
                    digest.update(chunk)
                    handle.write(chunk)
            folder = incoming / digest.hexdigest()
            folder.mkdir(exist_ok=True)
            path = folder / name
            if path.exists():
                tmp.unlink()
            else:
                os.replace(tmp, path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise JobParamsError(f"could not store the upload {name}: {exc.strerror} (is the server's disk full? "
                                 "an admin can free space in HUMEVAL_PIPELINE_DIR)") from None
        saved[name] = str(path)
    return saved


def plan_from_upload(plan_field) -> dict:
    """The plan of a request: an uploaded JSON file, a JSON string, or an object."""
    if hasattr(plan_field, "read"):
        if getattr(plan_field, "size", 0) > MAX_PLAN_BYTES:
            raise JobParamsError(f"the plan file is over {MAX_PLAN_BYTES} bytes: a plan names its input files, "
                                 "upload them as files")
        plan_field = plan_field.read()
    if isinstance(plan_field, (bytes, str)):
        return parse_plan(plan_field)
    if not isinstance(plan_field, dict):
        raise JobParamsError("send the plan as a JSON object (field \"plan\")")
    return plan_field


def start_uploaded_plan(plan_field, uploads, user):
    """Validate an uploaded plan with its input files and start (or resume) its pipeline
    job in the background (the workers, or a thread of this process): never inside the
    request. -> Job. JobParamsError (PlanInvalid) for a bad plan."""
    from django.conf import settings

    from .jobs import prepare_job, start_job

    plan = plan_from_upload(plan_field)
    plan.pop("device", None)  # the server decides where it runs
    files = save_uploads(uploads, settings.HUMEVAL_PIPELINE_DIR)
    params = validate_plan(plan, files, settings.HUMEVAL_PIPELINE_DIR)
    job, resumed = prepare_job("pipeline", params, user=user)
    if not (resumed and job.celery_task_id and job.state != job.FAILED):
        start_job(job, background=True)
    job.refresh_from_db()
    return job
