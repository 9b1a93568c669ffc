"""The report key `ip_probe` of a pairwise alignment study built from an implicit-
personalization probe (models_runtime/ip/study.py): per (model, cue pair, score), the
probe's Delta (copied from the items' `ip_probe` prediction rows, computed by the probe
over all its samples) beside the human preference rate: the share of decided items whose
majority picked the answer generated under the user's own cue.

The rate's interval resamples questions (each question gives two items, one per user
cue): the report's interval rule (`bootstrap.bootstrap_interval`, bias-corrected and
expanded) over the questions that have a decided item, 2,000 resamples, seed 0; none
below 5 questions. The probe's Delta interval follows the same rule
(evaluation/personalization/ip_effect.py). Items without a majority (or with a `tie` majority) are
counted, not rated.
"""
from typing import Any

import numpy as np

from evaluation.alignment import decided
from evaluation.bootstrap import bootstrap_interval, bootstrap_method, ratio_samples
from evaluation.personalization.ip_effect import CI_METHOD as PROBE_CI_METHOD
from evaluation.vocabulary import IP_PROBE_EVALUATOR

from .inputs import ReportInput, to_float
from .markup import interval, table

RESAMPLES, SEED, MIN_QUESTIONS = 2000, 0, 5
CI_METHOD = bootstrap_method("questions", RESAMPLES, SEED)


def _facts(inp: ReportInput) -> dict[int, dict[str, str]]:
    """{item index: {fact: value}} of the items with `ip_probe` rows (gold items left out)."""
    mask = (inp.p_evaluator == IP_PROBE_EVALUATOR) & (inp.p_annotator == "")
    out: dict[int, dict[str, str]] = {}
    for item, fact, value in zip(inp.p_item[mask].tolist(), inp.p_question[mask].tolist(),
                                 inp.p_value[mask].tolist()):
        if not inp.is_gold[item]:
            out.setdefault(int(item), {})[str(fact)] = str(value)
    return out


def _number(text: str | None) -> float | None:
    value = float(to_float([text])[0]) if text else float("nan")
    return None if np.isnan(value) else value


def _count(text: str | None) -> int | None:
    value = _number(text)
    return None if value is None else int(value)


def human_rate(questions: list[str], wins: np.ndarray, n_decided: np.ndarray) -> dict[str, Any]:
    """{"prefer_user_cue", "ci95", ...} from per-item wins (0/1) and decided flags, items
    grouped by their question (the resampled cluster)."""
    names = {q: k for k, q in enumerate(dict.fromkeys(questions))}
    index = np.array([names[q] for q in questions], dtype=np.int64)
    w = np.bincount(index, weights=wins, minlength=len(names))
    m = np.bincount(index, weights=n_decided, minlength=len(names))
    keep = m > 0
    w, m = w[keep], m[keep]
    rate = float(w.sum() / m.sum()) if m.sum() else None
    ci: list[float] | None = None
    reason: str | None = f"fewer than {MIN_QUESTIONS} questions with a decided item"
    if len(m) >= MIN_QUESTIONS:
        found = bootstrap_interval(ratio_samples(w[None, :], m[None, :], RESAMPLES, SEED)[:, 0], rate, len(m))
        ci, reason = found.ci95, found.reason
    return {"prefer_user_cue": rate, "ci95": ci, "ci_method": CI_METHOD, "n_clusters": int(len(m)),
            "ci95_reason": reason,
            "n_decided": int(m.sum()), "n_items": len(questions)}


def ip_probe_keys(inp: ReportInput, labels: np.ndarray) -> dict[str, Any]:
    """{"ip_probe": [...]} when the study's items carry `ip_probe` facts, else {}.
    `labels`: the majority label of each item (a candidate id, `tie` or None)."""
    facts = _facts(inp)
    if not facts:
        return {}
    groups: dict[tuple[str, str, str], list[int]] = {}
    for item, f in facts.items():
        groups.setdefault((f.get("model", ""), f.get("cues", ""), f.get("score", "")), []).append(item)
    has_majority = decided(labels)
    out = []
    for (model, cues, score), items in groups.items():
        first = facts[items[0]]
        won = np.array([has_majority[i] and labels[i] == facts[i].get("user_cue") for i in items], dtype=float)
        low, high = _number(first.get("ci_low")), _number(first.get("ci_high"))
        ci = None if low is None or high is None else [low, high]
        out.append({
            "model": model, "cues": cues.split("|"), "score": score,
            "probe": {"delta": _number(first.get("delta")), "ci95": ci, "ci_method": PROBE_CI_METHOD,
                      "p_value": _number(first.get("p_value")), "n_questions": _count(first.get("n_questions")),
                      "n_samples": _count(first.get("n_samples"))},
            "human": human_rate([facts[i].get("question_id", "") for i in items], won,
                                has_majority[items].astype(float)),
        })
    return {"ip_probe": out}


def html_section(report: dict[str, Any]) -> str:
    """The `ip_probe` table of the HTML report."""
    rows = [(e["model"], " → ".join(e["cues"]), e["score"], e["probe"]["delta"], interval(e["probe"]["ci95"]),
             e["probe"]["p_value"], e["probe"]["n_questions"], e["probe"]["n_samples"], e["human"]["prefer_user_cue"],
             interval(e["human"]["ci95"]), e["human"]["n_decided"], e["human"]["n_items"])
            for e in report["ip_probe"]]
    headers = ["model", "cues b0 → b1", "score", "probe Δ", "Δ 95% CI", "p", "questions", "samples",
               "humans prefer the user's cue", "95% CI", "decided items", "items"]
    caption = ("Implicit-personalization probe: Δ = mean score under cue b1 minus under b0 (label score: +1 for "
               f"b1's expected answer, -1 for b0's, else 0), interval: {PROBE_CI_METHOD}; p: within-question "
               "cue swaps. "
               "Human rate: share of decided items whose majority picked the answer generated for the user's own "
               f"cue; interval: {CI_METHOD}.")
    return ('<section id="ip-probe"><h2>Implicit personalization probe</h2>'
            + table(headers, rows, caption) + "</section>")
