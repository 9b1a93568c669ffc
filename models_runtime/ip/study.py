"""The human side of an implicit-personalization probe: an alignment study (the runtime's ALIGNMENT_KIND) that asks
"which answer suits this user?".

One item per (model, question, cue pair b0/b1, user cue u in {b0, b1}): the request is the
neutral question, the reference is the message in which the user asked it (the prompt of
cue u: how this user writes), the candidates are the first sampled answer under b0 and
under b1 (candidate ids = the cue names). A question whose two answers are identical or
empty is left out (listed). Each item also gets prediction rows of evaluator
`ip_probe` (one per fact of vocabulary.IP_PROBE_FACTS: its model, pair, score, user cue,
and the probe's Delta, interval, p and n for that model and pair), so the report
(evaluation/report/ip_probe.py) shows the probe's Delta beside the share of items whose
human majority picked the answer generated for the user's own cue.
"""
import json
import os
from pathlib import Path

from annotate import services
from evaluation.vocabulary import IP_PROBE_EVALUATOR

from ..job_support.kinds import JobParamsError
from .probes import Probe, cue_order, cue_pairs

BATCH = "ip_study_batch.jsonl"
INSTRUCTIONS = ("The reference is the message in which this user asked the question. Read how they wrote it, then "
                "pick the answer that suits this user better: the one they would expect.")


def item_id(model: str, probe: Probe, b0: str, b1: str, user: str) -> str:
    return f"{probe.id}/{b0}-{b1}/{user}/{model}"


def study_items(probes: list[Probe], models: list[str], done: dict[str, dict]) -> tuple[list[dict], list[dict]]:
    """(batch items, left out [{"model", "question", "cues", "why"}])."""
    order = cue_order(probes)
    items, left_out = [], []
    for model in models:
        for probe in probes:
            result = done.get(f"{model}:{probe.id}")
            if result is None:
                continue
            for b0, b1 in cue_pairs(probe, order):
                t0, t1 = (result["responses"][cue][0]["text"].strip() for cue in (b0, b1))
                why = "an empty answer" if not (t0 and t1) else "identical answers" if t0 == t1 else ""
                if why:
                    left_out.append({"model": model, "question": probe.id, "cues": [b0, b1], "why": why})
                    continue
                for user in (b0, b1):
                    items.append({"item_id": item_id(model, probe, b0, b1, user), "input": probe.question,
                                  "reference": probe.cues[user],
                                  "candidates": [{"id": b0, "text": t0}, {"id": b1, "text": t1}],
                                  "meta": {"ip": {"model": model, "question": probe.id, "cues": [b0, b1],
                                                  "user_cue": user}}})
    return items, left_out


def _number(value) -> str:
    return "" if value is None else format(float(value), ".10g")


def item_facts(item: dict, effect: dict) -> dict[str, str]:
    """The `ip_probe` prediction rows of one item: {fact: value}."""
    ip = item["meta"]["ip"]
    ci = effect["ci95"] or [None, None]
    return {"model": ip["model"], "cues": "|".join(ip["cues"]), "score": effect["score"], "question_id": ip["question"],
            "user_cue": ip["user_cue"], "delta": _number(effect["delta"]), "ci_low": _number(ci[0]),
            "ci_high": _number(ci[1]), "p_value": _number(effect["p_value"]),
            "n_questions": str(effect["n_questions"]), "n_samples": str(effect["n_samples"])}


def open_study(header: dict, probes: list[Probe], models: list[str], done: dict[str, dict], effects: list[dict],
               directory: Path) -> dict:
    """Write the batch into the job's directory, import it (items already there with the
    same content are skipped) and store the items' `ip_probe` facts."""
    items, left_out = study_items(probes, models, done)
    if not items:
        raise JobParamsError(f"human study {header['slug']}: no item to put in it ({len(left_out)} questions left "
                             "out: identical or empty answers)")
    header = dict(header)
    header.setdefault("instructions", INSTRUCTIONS)
    path = directory / BATCH
    with open(str(path) + ".part", "w", encoding="utf-8") as handle:
        for line in [{"study": header}, *items]:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    os.replace(str(path) + ".part", path)
    try:
        imported = services.import_batch_file(str(path), expected_slug=header["slug"])
    except services.BatchRefused as refused:
        raise JobParamsError(f"human study {header['slug']}: the batch was refused: {refused}") from refused
    by_group = {(e["model"], tuple(e["cues"]), e["score"]): e for e in effects}
    score_of = {probe.id: probe.score for probe in probes}
    keys = {item.item_id: item.key for item in services.study_items(header["slug"])}
    rows = []
    for item in items:
        ip = item["meta"]["ip"]
        effect = by_group[(ip["model"], tuple(ip["cues"]), score_of[ip["question"]])]
        rows += [services.PredictionRow(item_key=keys[item["item_id"]], evaluator=IP_PROBE_EVALUATOR, question=fact,
                                        value=value) for fact, value in item_facts(item, effect).items()]
    counts = services.upsert_predictions(header["slug"], rows)
    return {"slug": header["slug"], "batch": BATCH, "n_items": len(items), "created": imported["created"],
            "skipped": imported["skipped"], "left_out": left_out,
            "facts": {"created": counts.created, "updated": counts.updated, "unchanged": counts.unchanged}}
