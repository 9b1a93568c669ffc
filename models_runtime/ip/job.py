"""The `ip` job: implicit-personalization probes of one or more models, resumable.

Items are (model, question) pairs, key `<model>:<question id>`. A chunk asks every cue's
prompt of its questions in one batched backend call per model, `samples` samples each with
the same sampling for every cue, and scores each response by its question's rule (label or
metric). A checkpoint holds the responses with their labels or scores, so a resumed job
never asks again. `finish` computes, per model, cue pair and score, Delta with its
bootstrap interval and permutation p (evaluation/personalization/ip_effect.py), writes the CSV tables
into the job's own directory (GET /api/jobs/{id}/files/<name>), and, when the params name
a human study, opens it (study.py).

Params (validated here, whoever starts the job): {"probes": path or "" (the shipped set),
"probes_sha256", "models": [names], "samples", "generation": {"max_tokens", "temperature",
"top_p", "seed"}, "judge_model", "device", "study": slug the job is kept with,
"human_study": a study header or null}.
"""
import os
import re
from pathlib import Path

from evaluation.csv_cells import SafeWriter
from evaluation.personalization.ip_effect import label_counts, label_of, label_scores, label_shifts, pair_effect
from evaluation.vocabulary import DEFAULT_MODEL
from models_runtime.plan_support.plan_kinds import ALIGNMENT_KIND

from ..backends.base import SamplingParams
from ..backends.config import model_spec
from ..job_support.kinds import ItemError, JobKind, JobParamsError, file_sha256, job_dir
from ..metrics.registry import get_metric
from ..models import Job, JobItem
from ..step import counting
from .probes import (
    SHIPPED,
    Probe,
    ProbeFileError,
    cue_order,
    cue_pairs,
    probe_metrics,
    read_probes,
    registered_metric_error,
)

DEFAULT_SAMPLES = 3
DEFAULT_GENERATION = {"max_tokens": 128, "temperature": 0.7, "top_p": 1.0, "seed": 0}
STUDY_SLUG = re.compile(r"[a-z0-9-]{1,50}")
STUDY_KEYS = ("slug", "kind", "title", "instructions", "annotations_per_item", "randomize_order", "allow_tie")
MAX_MODEL_NAME = 40  # item ids of a human study name the model
EFFECTS_CSV, QUESTIONS_CSV, RESPONSES_CSV = "ip_effects.csv", "ip_questions.csv", "ip_responses.csv"


def _need(cond, message):
    if not cond:
        raise JobParamsError(message)


def _number(value, name, kind, low, high):
    ok = isinstance(value, int | float) and not isinstance(value, bool) and (kind is float or value == int(value))
    _need(ok and low <= value <= high, f"{name} must be {'an integer' if kind is int else 'a number'} "
                                       f"from {low} to {high}")
    return kind(value)


def probe_path(params) -> str:
    return params.get("probes") or str(SHIPPED)


def load_probes(params) -> list[Probe]:
    """The job's probes; JobParamsError naming every bad line."""
    path = probe_path(params)
    try:
        return read_probes(path)
    except ProbeFileError as exc:
        raise JobParamsError(f"probe file {path}: refused: {exc}") from exc
    except OSError as exc:
        raise JobParamsError(f"cannot read the probe file {path}: {exc.strerror}") from exc


def check_probes(params) -> set[str]:
    """The job's probe file checked a line at a time (an upload may be large) -> the
    metrics its `metric` probes name; JobParamsError naming the bad lines."""
    path = probe_path(params)
    try:
        return probe_metrics(path, registered_metric_error)
    except ProbeFileError as exc:
        raise JobParamsError(f"probe file {path}: refused: {exc}") from exc
    except UnicodeDecodeError:
        raise JobParamsError(f"probe file {path}: refused: not UTF-8 text") from None
    except OSError as exc:
        raise JobParamsError(f"cannot read the probe file {path}: {exc.strerror}") from exc


def validate_generation(gen) -> dict:
    gen = DEFAULT_GENERATION if gen is None else gen
    _need(isinstance(gen, dict), "generation must be an object")
    unknown = sorted(set(gen) - set(DEFAULT_GENERATION))
    _need(not unknown, f"generation: unknown key(s) {', '.join(unknown)} (known: {', '.join(DEFAULT_GENERATION)})")
    gen = dict(DEFAULT_GENERATION, **gen)
    return {"max_tokens": _number(gen["max_tokens"], "generation.max_tokens", int, 1, 4096),
            "temperature": _number(gen["temperature"], "generation.temperature", float, 0, 5),
            "top_p": _number(gen["top_p"], "generation.top_p", float, 0.01, 1),
            "seed": _number(gen["seed"], "generation.seed", int, 0, 2**31 - 1)}


def validate_human_study(header) -> dict | None:
    """The optional alignment study (ALIGNMENT_KIND) of the cue-conditioned answers."""
    if header in (None, {}):
        return None
    from annotate import services

    _need(isinstance(header, dict), "the human study must be an object {slug, title, ...}")
    unknown = sorted(set(header) - set(STUDY_KEYS))
    _need(not unknown, f"human study: unknown key(s) {', '.join(unknown)} (known: {', '.join(STUDY_KEYS)})")
    slug = header.get("slug")
    _need(isinstance(slug, str) and STUDY_SLUG.fullmatch(slug), "human study: slug must be 1-50 of a-z, 0-9, -")
    _need(isinstance(header.get("title"), str) and header["title"].strip(), "human study: title is required")
    _need(header.get("kind", ALIGNMENT_KIND) == ALIGNMENT_KIND,
          f"human study: kind must be {ALIGNMENT_KIND}")
    existing = services.get_study(slug)
    _need(existing is None or existing.kind == ALIGNMENT_KIND,
          f"human study: {slug!r} exists and is {existing.kind if existing else ''}, not {ALIGNMENT_KIND}")
    return dict(header, kind=ALIGNMENT_KIND)


RUN_PARAMS = ("server_paths", "chunk_size", "retries", "retry_delay_seconds", "throttle_seconds")
PARAMS = ("probes", "probes_sha256", "models", "samples", "generation", "judge_model", "device", "study",
          "human_study", *RUN_PARAMS)


def validate_ip_params(params) -> dict:
    """Checks every param and reads the probe file whole (JobParamsError, ModelNotAvailable)."""
    unknown = sorted(set(params) - set(PARAMS))
    _need(not unknown, f"unknown ip param(s) {', '.join(unknown)} (known: {', '.join(PARAMS)})")
    probe_metric_names = check_probes(params)
    models = params.get("models") or [DEFAULT_MODEL]
    _need(isinstance(models, list) and all(isinstance(m, str) and m.strip() for m in models),
          "models must be a list of model names")
    models = list(dict.fromkeys(models))
    for name in models:
        model_spec(name)  # ModelNotAvailable names the setting
    samples = _number(params.get("samples", DEFAULT_SAMPLES), "samples", int, 1, 100)
    generation = validate_generation(params.get("generation"))
    _need(samples == 1 or generation["temperature"] > 0,
          f"samples {samples} at temperature 0 would be {samples} copies of the greedy answer: "
          "set generation.temperature above 0 (or samples 1)")
    judge_model = params.get("judge_model") or DEFAULT_MODEL
    if any(getattr(get_metric(name), "model_kind", "llm") == "llm" for name in sorted(probe_metric_names)):
        model_spec(judge_model)
    human = validate_human_study(params.get("human_study"))
    _need(human is None or all(len(m) <= MAX_MODEL_NAME for m in models),
          f"a human study names the model in its item ids: model names of at most {MAX_MODEL_NAME} characters")
    study = params.get("study") or (human["slug"] if human else "")
    out = {key: value for key, value in params.items() if key in RUN_PARAMS}
    out.update({"probes": params.get("probes") or "", "probes_sha256": file_sha256(probe_path(params)),
                "models": models, "samples": samples, "generation": generation, "judge_model": judge_model,
                "device": params.get("device") or None, "human_study": human})
    if study:
        out["study"] = study
    return out


# ---- running -----------------------------------------------------------------------------

def item_key(model: str, probe: Probe) -> str:
    return f"{model}:{probe.id}"


def ip_items(job) -> list[str]:
    probes = load_probes(job.params)
    return [item_key(model, probe) for model in job.params["models"] for probe in probes]


def sampling(params, max_tokens: int | None = None) -> SamplingParams:
    """The sampling of every cue of a question (its own `max_tokens`, if it has one)."""
    gen = params["generation"]
    return SamplingParams(max_new_tokens=max_tokens or gen["max_tokens"], temperature=gen["temperature"],
                          top_p=gen["top_p"], n=params["samples"], seed=gen["seed"])


def _backend(model, device):
    """The backend of a probed model (tests replace this function with a scripted one)."""
    from ..backends.registry import get_backend

    return get_backend(model, device=device)


def _generate(params, model, asks) -> list[list[str]]:
    """The sampled texts of each (probe, cue) in `asks`: one backend call per answer budget."""
    backend = _backend(model, params.get("device"))
    texts: list[list[str]] = [[] for _ in asks]
    budgets = dict.fromkeys(probe.max_tokens for probe, _ in asks)
    with counting(len(asks), f"prompts ({params['samples']} samples each)"):
        for budget in budgets:
            mine = [i for i, (probe, _) in enumerate(asks) if probe.max_tokens == budget]
            outputs = backend.generate([asks[i][0].cues[asks[i][1]] for i in mine], sampling(params, budget))
            for i, gens in zip(mine, outputs):
                texts[i] = [g.text for g in gens]
    return texts


def _score(params, asks, texts) -> list[list[dict]]:
    """Each response as {"text", "label"} (label rule) or {"text", "score"} (metric rule);
    an empty response gets None (unscored). One metric call per metric for the chunk."""
    out = [[{"text": t} for t in group] for group in texts]
    records: dict[str, list[tuple[dict, dict]]] = {}
    for (probe, _cue), responses in zip(asks, out):
        for response in responses:
            empty = not response["text"].strip()
            if probe.rule == "label":
                response["label"] = None if empty else label_of(response["text"], probe.expected or {})
            elif empty:
                response["score"] = None
            else:
                record = {"input": probe.question, "output": response["text"], "reference": probe.reference}
                records.setdefault(probe.metric, []).append((response, record))
    for name, pairs in records.items():
        fn = get_metric(name)
        model = None if getattr(fn, "model_kind", "llm") == "encoder" else params["judge_model"]
        scores = fn([record for _, record in pairs], model=model, device=params.get("device"))
        for (response, _), score in zip(pairs, scores):
            response["score"] = None if score is None else float(score)
    return out


def ip_chunk(job, keys):
    p = job.params
    probes = {item_key(model, probe): (model, probe) for probe in load_probes(p) for model in p["models"]}
    results = {}
    for model in p["models"]:
        asks = [(probes[key][1], cue) for key in keys if probes[key][0] == model for cue in probes[key][1].cues]
        if not asks:
            continue
        scored = _score(p, asks, _generate(p, model, asks))
        by_key: dict[str, dict] = {}
        for (probe, cue), responses in zip(asks, scored):
            by_key.setdefault(item_key(model, probe), {})[cue] = responses
        for key, responses in by_key.items():
            if not any(r["text"].strip() for rs in responses.values() for r in rs):
                results[key] = ItemError("every response is empty")
            else:
                results[key] = {"model": model, "question": probes[key][1].id, "responses": responses}
    return results


# ---- results -----------------------------------------------------------------------------

def _scores(probe: Probe, responses: list[dict], b0: str, b1: str) -> list[float | None]:
    if probe.rule == "label":
        return label_scores([r["label"] for r in responses], b0, b1)
    return [r["score"] for r in responses]


def probe_effects(probes: list[Probe], models: list[str], done: dict[str, dict]) -> tuple[list[dict], list[dict]]:
    """(effects, per-question rows) for every (model, cue pair, score) with answered
    questions, from the checkpoints `done` {item key: result}; questions in file order."""
    order = cue_order(probes)
    groups: dict[tuple, list[Probe]] = {}
    for model in models:
        for probe in probes:
            if item_key(model, probe) in done:
                for pair in cue_pairs(probe, order):
                    groups.setdefault((model, pair, probe.score), []).append(probe)
    effects, table = [], []
    for (model, (b0, b1), score), members in groups.items():
        responses = [done[item_key(model, probe)]["responses"] for probe in members]
        effect, rows = pair_effect([probe.id for probe in members],
                                   [_scores(probe, r[b0], b0, b1) for probe, r in zip(members, responses)],
                                   [_scores(probe, r[b1], b0, b1) for probe, r in zip(members, responses)])
        head = {"model": model, "cues": [b0, b1], "score": score}
        if score == "label":
            for row, r in zip(rows, responses):
                row["labels_b0"] = label_counts(x["label"] for x in r[b0] if x["label"] is not None)
                row["labels_b1"] = label_counts(x["label"] for x in r[b1] if x["label"] is not None)
            effect["labels"] = {b0: label_counts(x["label"] for r in responses for x in r[b0] if x["label"]),
                                b1: label_counts(x["label"] for r in responses for x in r[b1] if x["label"])}
            effect.update(label_shifts([[x["label"] for x in r[b0]] for r in responses],
                                       [[x["label"] for x in r[b1]] for r in responses], b0, b1))
        effects.append({**head, **effect})
        table += [{**head, **row} for row in rows]
    return effects, table


def _cell(value):
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items())
    return "" if value is None else value


def write_tables(directory: Path, effects: list[dict], table: list[dict], probes: list[Probe],
                 done: dict[str, dict], samples: int) -> list[str]:
    """The three CSV files (effects, per-question table, every response with the prompt
    it answered). -> their names."""
    prompts = {probe.id: probe.cues for probe in probes}
    directory.mkdir(parents=True, exist_ok=True)
    effect_cols = ["model", "b0", "b1", "score", "delta", "ci_low", "ci_high", "ci_method", "p_value", "p_method",
                   "n_questions",
                   "n_samples", "samples_per_cue", "mean_b0", "mean_b1", "shift_b1", "shift_b0", "unscored_samples",
                   "questions_left_out", "labels_b0", "labels_b1"]
    question_cols = ["model", "b0", "b1", "score", "question", "n_b0", "n_b1", "mean_b0", "mean_b1", "d",
                     "labels_b0", "labels_b1"]
    files = {
        EFFECTS_CSV: [effect_cols] + [[
            e["model"], *e["cues"], e["score"], e["delta"], *(e["ci95"] or [None, None]), e["ci_method"],
            e["p_value"], e["p_method"], e["n_questions"], e["n_samples"], samples, e["mean_b0"], e["mean_b1"],
            e.get("shift_b1"), e.get("shift_b0"), e["unscored_samples"], e["questions_left_out"],
            *(e.get("labels", {}).get(c) for c in e["cues"])]
            for e in effects],
        QUESTIONS_CSV: [question_cols] + [[row["model"], *row["cues"], row["score"], row["question"], row["n_b0"],
                                           row["n_b1"], row["mean_b0"], row["mean_b1"], row["d"],
                                           row.get("labels_b0"), row.get("labels_b1")] for row in table],
        RESPONSES_CSV: [["model", "question", "cue", "sample", "label", "score", "text", "prompt"]] + [
            [result["model"], result["question"], cue, n, response.get("label"), response.get("score"),
             response["text"], prompts[result["question"]][cue]]
            for result in done.values() for cue in prompts[result["question"]]  # file order (JSONB sorts keys)
            for n, response in enumerate(result["responses"][cue])],
    }
    for name, rows in files.items():
        part = directory / (name + ".part")
        with open(part, "w", encoding="utf-8", newline="") as handle:
            SafeWriter(handle).writerows([_cell(c) for c in row] for row in rows)
        os.replace(part, directory / name)
    return list(files)


def ip_finish(job) -> dict:
    p = job.params
    probes = load_probes(p)
    rows = JobItem.objects.filter(job=job).order_by("position")
    done = {row.key: row.result for row in rows if not row.error}
    effects, table = probe_effects(probes, p["models"], done)
    directory = job_dir(job.pk)
    files = write_tables(directory, effects, table, probes, done, p["samples"])
    result = {"probes": {"file": probe_path(p), "sha256": p["probes_sha256"], "n_questions": len(probes)},
              "models": p["models"], "samples": p["samples"], "generation": p["generation"],
              "failed": len(rows) - len(done), "effects": effects, "questions": table, "human_study": None}
    if p.get("human_study"):
        from .study import open_study

        result["human_study"] = open_study(p["human_study"], probes, p["models"], done, effects, directory)
        files.append(result["human_study"]["batch"])
    Job.objects.filter(pk=job.pk).update(files=list(dict.fromkeys([*(job.files or []), *files])))  # uploads kept
    result["files"] = {name: str(directory / name) for name in files}
    return result


IP = JobKind("ip", items=ip_items, process_chunk=ip_chunk, finish=ip_finish, validate=validate_ip_params,
             chunk_size=8, inputs=("probes",))
