"""The report's `ppi` key (statistics.md, "Prediction-powered estimates"; docs/statistics.md,
"Prediction-powered estimates in the report"): for every evaluator with predictions on the
items of a human quantity (report/ppi/quantities.py), the classical estimate on the
human-labeled items beside the prediction-powered one, both with 95% intervals.

How the human items were drawn decides the estimator (ReportInput.item_offered /
item_offer_probability, from Item.offered / offer_probability):
- every item of the quantity has human judgments: no unlabeled item, PPI adds nothing (in a
  study that did not draw its human items, the entry is left out altogether);
- an item without a recorded probability: the human items were not drawn at random (null);
- one probability for every item (`human_share`): PPI++ with power tuning (prediction_powered.ppi);
- unequal probabilities (`judge_uncertain`): the inverse-probability-weighted (active
  inference) estimator (prediction_powered.active_inference), which needs every drawn item
  judged.
The PPI figures are null with `reason` (never a misleading interval) in those cases and when
an item lacks a prediction, the predictions are constant or fewer than MIN_LABELED items
are labeled; the classical interval stays.
"""
import math
from typing import Any

import numpy as np

from evaluation.intervals import t_interval
from evaluation.prediction_powered.active_inference import METHOD as ACTIVE_METHOD
from evaluation.prediction_powered.active_inference import active_mean
from evaluation.prediction_powered.ppi import CLASSICAL_METHOD, CONSTANT, MIN_LABELED, PPI_METHOD, item_means, ppi_mean

from ..common import clean, clean_list
from ..inputs import ReportInput
from .quantities import Quantity

PPI_PLUS_PLUS = "PPI++ (power-tuned lambda), human items a uniform random subset"
ACTIVE = "active inference (inverse-probability weights), human items drawn with unequal probabilities"
NO_UNLABELED = "no unlabeled item: every item has human judgments, PPI adds nothing"
NOT_DRAWN = ("the human items were not drawn at random (no offer_probability recorded for {k} of the {n} items): "
             "PPI needs the human items drawn as a random subset (human_share) or with recorded probabilities")
NOT_OFFERED = "{k} judged item(s) were not offered to humans (offered = false): the human items are not the drawn ones"
UNJUDGED = ("{k} item(s) drawn for humans have no human judgment yet: the weighted estimator needs every drawn item "
            "labeled")
UNWEIGHTED = ("unweighted mean of the labeled items: the items were drawn with unequal probabilities, so it leans "
              "towards the items drawn more often")
SCHEMA = {"ppi": {"type": "object", "additionalProperties": {"type": "object"},
                  "description": "evaluator -> quantity -> target -> {quantity, unit, estimator, prediction, "
                                 "n_labeled, n_unlabeled, classical {mean, ci95, ci_method}, ppi {mean, ci95, "
                                 "ci_method, reason?}, lambda, ess_ratio, reason?} (statistics.md, "
                                 "\"Prediction-powered estimates\")."}}


def _entry(q: Quantity, how: str, n_labeled: int, n_unlabeled: int, classical: Any, averaged: bool,
           estimator: str, method: str, estimate: float | None = None, ci95: list[float] | None = None,
           lam: float | None = None, ess: float | None = None, reason: str | None = None,
           classical_note: str | None = None) -> dict[str, Any]:
    """One `ppi.<evaluator>.<quantity>.<target>` entry."""
    classical_part: dict[str, Any] = {"mean": clean(classical.mean), "ci95": clean_list(classical.ci95),
                                      "ci_method": CLASSICAL_METHOD, "n_clusters": int(classical.n)}
    if classical.ci95 is None and classical.reason:
        classical_part["ci_reason"] = classical.reason
    if classical_note:
        classical_part["note"] = classical_note
    ppi_part: dict[str, Any] = {"mean": clean(estimate), "ci95": clean_list(ci95), "ci_method": method,
                                "n_clusters": int(n_labeled + n_unlabeled)}
    if reason:
        ppi_part["reason"] = reason
    out = {"quantity": q.meaning, "unit": "item (judgments averaged per item)" if averaged else "item",
           "estimator": estimator, "prediction": how, "n_labeled": int(n_labeled), "n_unlabeled": int(n_unlabeled),
           "classical": classical_part, "ppi": ppi_part, "lambda": clean(lam), "ess_ratio": clean(ess)}
    if reason:
        out["reason"] = reason
    return out


def estimate(inp: ReportInput, q: Quantity, evaluator: str) -> dict[str, Any]:
    """The entry of one evaluator on one quantity (module docstring)."""
    p_item, p_value, how = q.predictions[evaluator]
    labeled, y = item_means(q.h_item, q.h_value)
    averaged = len(labeled) < int(np.count_nonzero(np.isfinite(np.asarray(q.h_value, dtype=float))))
    items = np.asarray(q.items, dtype=np.int64)
    is_labeled = np.isin(items, labeled.astype(np.int64)) if len(labeled) else np.zeros(len(items), bool)
    n_labeled, n_unlabeled = int(len(y)), int(np.count_nonzero(~is_labeled))
    probability = inp.item_offer_probability[items]
    offered = inp.item_offered[items]
    classical = t_interval(y)

    def null(reason: str, estimator: str = PPI_PLUS_PLUS, method: str = PPI_METHOD) -> dict[str, Any]:
        return _entry(q, how, n_labeled, n_unlabeled, classical, averaged, estimator, method, reason=reason)

    if not n_unlabeled:
        return null(NO_UNLABELED)
    unknown = int(np.count_nonzero(np.isnan(probability)))
    if unknown:
        return null(NOT_DRAWN.format(k=unknown, n=len(items)))
    if (is_labeled & ~offered).any():
        return null(NOT_OFFERED.format(k=int(np.count_nonzero(is_labeled & ~offered))))
    if np.ptp(probability) <= 1e-12:
        r = ppi_mean(q.h_item, q.h_value, p_item, p_value, items=items.tolist())
        return _entry(q, how, r.n_labeled, r.n_unlabeled, classical, averaged, PPI_PLUS_PLUS, PPI_METHOD,
                      r.estimate, r.ci95, r.lam, r.ess_ratio, r.reason)
    unjudged = int(np.count_nonzero(offered & ~is_labeled))
    if unjudged:
        return null(UNJUDGED.format(k=unjudged), ACTIVE, ACTIVE_METHOD)
    a = active_mean(items, probability, p_item, p_value, q.h_item, q.h_value, min_labeled=MIN_LABELED)
    reason = a.reason if a.estimate is None else (CONSTANT if _constant(p_item, p_value, items) else None)
    if reason is not None:
        return _entry(q, how, n_labeled, n_unlabeled, classical, averaged, ACTIVE, ACTIVE_METHOD, reason=reason,
                      classical_note=UNWEIGHTED)
    ess = float(np.var(y)) / n_labeled / a.se ** 2 if a.se and n_labeled else math.nan
    return _entry(q, how, n_labeled, n_unlabeled, classical, averaged, ACTIVE, ACTIVE_METHOD, a.estimate, a.ci95,
                  a.lam, ess, classical_note=UNWEIGHTED)


def _constant(p_item: np.ndarray, p_value: np.ndarray, items: np.ndarray) -> bool:
    """Whether the per-item predictions on `items` are all one value."""
    labels, f = item_means(p_item, p_value)
    f = f[np.isin(labels.astype(np.int64), items)] if len(labels) else f
    return len(f) > 0 and bool(np.all(f == f[0]))


def ppi_keys(inp: ReportInput, quantities: list[Quantity]) -> dict[str, Any]:
    """{evaluator: {quantity name: {target: entry}}} over every quantity an evaluator has
    predictions on (evaluators and quantities in name order)."""
    # A study that never drew its human items (no `human_share` / `judge_uncertain`) and whose
    # humans judged every item of a quantity has nothing to fold in: no entry, rather than a
    # row per evaluator saying so in every ordinary report.
    drew = bool(np.isfinite(np.asarray(inp.item_offer_probability, dtype=float)).any()
                or not np.asarray(inp.item_offered, dtype=bool).all())
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for q in quantities:
        for evaluator in sorted(q.predictions):
            entry = estimate(inp, q, evaluator)
            if drew or entry.get("reason") != NO_UNLABELED:
                out.setdefault(evaluator, {}).setdefault(q.name, {})[q.target] = entry
    return {e: {name: dict(sorted(by.items())) for name, by in sorted(qs.items())} for e, qs in sorted(out.items())}


# --- the CSV rows and the HTML section ----------------------------------------------------------

CSV_HEADER = ["ppi_table", "evaluator", "quantity", "target", "estimator", "unit", "n_labeled", "n_unlabeled",
              "classical_mean", "classical_ci95_low", "classical_ci95_high", "ppi_mean", "ppi_ci95_low",
              "ppi_ci95_high", "lambda", "ess_ratio", "reason"]
MAX_FIGURES = 12  # interval plots in the HTML (one per evaluator and quantity with a PPI figure); the table has all


def entries(report: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(evaluator, quantity, target, entry) of every `ppi` entry, in report order."""
    return [(e, name, target, entry) for e, by in (report.get("ppi") or {}).items()
            for name, targets in by.items() for target, entry in targets.items()]


def csv_rows(report: dict[str, Any]) -> list[list[Any]]:
    """The CSV's prediction-powered table: one row per (evaluator, quantity, target)."""
    rows = []
    for evaluator, name, target, entry in entries(report):
        classical, ppi = entry["classical"], entry["ppi"]
        c_ci, p_ci = classical.get("ci95") or [None, None], ppi.get("ci95") or [None, None]
        cells = [entry["estimator"], entry["unit"], entry["n_labeled"], entry["n_unlabeled"], classical.get("mean"),
                 c_ci[0], c_ci[1], ppi.get("mean"), p_ci[0], p_ci[1], entry.get("lambda"), entry.get("ess_ratio"),
                 entry.get("reason") or classical.get("ci_reason")]
        rows.append(["ppi", evaluator, name, target] + ["" if v is None else v for v in cells])
    return rows


def html_section(report: dict[str, Any]) -> str:
    """The HTML section: the table of every entry and, per evaluator and quantity with a
    PPI figure, the intervals of each target side by side (human only, human + judge)."""
    from .. import figures
    from ..markup import figure, interval, num, table

    def cell(part: dict[str, Any]) -> str:
        return "–" if part["mean"] is None else f"{num(part['mean'])} {interval(part['ci95'])}"

    rows = [(e, name, target, f"{entry['n_labeled']} + {entry['n_unlabeled']}", cell(entry["classical"]),
             cell(entry["ppi"]), entry.get("lambda"),
             entry.get("ess_ratio"), entry.get("reason") or "")
            for e, name, target, entry in entries(report)]
    caption = ("Where an evaluator scored every item and humans judged a random subset, the human quantity is "
               "estimated from the humans alone (human only: mean over the labeled items, t interval) and from "
               "humans and the evaluator together (human + judge: PPI++ with power-tuned lambda, or the "
               "inverse-probability-weighted active estimator when items were drawn with unequal probabilities; "
               "normal interval over all items). Unit: the item (several judgments of an item averaged). ESS ratio: "
               "(human-only width / human + judge width)^2 with both widths from the normal rule, the factor by "
               "which the labeled items would have to grow. A dash with a reason: no prediction-powered figure "
               "(items without a prediction, human items not drawn at random, every item judged, constant "
               "predictions, fewer than 50 labeled items).")
    parts = ['<section id="ppi"><h2>Judges and humans together (prediction-powered estimates)</h2>',
             table(["evaluator", "quantity", "target", "items labeled + unlabeled", "human only (95% CI)",
                    "human + judge (95% CI)", "lambda", "ESS ratio", "reason"], rows, caption)]
    drawn = 0
    for evaluator, by in (report.get("ppi") or {}).items():
        for name, targets in by.items():
            shown = {t: e for t, e in targets.items() if e["ppi"]["ci95"] is not None}
            if not shown or drawn >= MAX_FIGURES:
                continue
            drawn += 1
            labels, values, lo, hi = [], [], [], []
            for target, entry in shown.items():
                for label, part in (("human only", entry["classical"]), (f"human + {evaluator}", entry["ppi"])):
                    ci = part.get("ci95") or [None, None]
                    labels.append(f"{target}: {label}")
                    values.append(part.get("mean"))
                    lo.append(ci[0])
                    hi.append(ci[1])
            n = ", ".join(f"{t}: {e['n_labeled']} labeled + {e['n_unlabeled']} unlabeled items"
                          for t, e in shown.items())
            svg = figures.forest(f"fig-ppi-{drawn}", labels, values, lo, hi, name, reference=None)
            parts.append(figure(f"fig-ppi-{drawn}", svg,
                                f"{name} by {evaluator}: each target's estimate with its 95% interval, human only "
                                f"(t interval over the labeled items) above human + {evaluator} (normal interval "
                                f"over all items). n: {n}.",
                                alt=f"interval plot of {name}, human only and human + {evaluator}"))
    return "".join(parts) + "</section>"
