"""similarity_survey report (iCOPERNICUS human survey): one survey-level agreement entry over
(item, pair) units, mean similarity per pair, EGISES-HJ per (model, prompt style), the PX-5 /
PX-6 paradox flags over the contrastive styles, and metric-vs-human correlations per pair.

EGISES-HJ input: a user pair is unordered, so an item listing users [b, a] rates the same
pair as one listing [a, b]; its texts are matched to users by position. The texts an item
shows for a (document, user, origin) must equal those of every other item: otherwise the
item's ratings of that (document, user pair, origin) are not used and the conflict is
listed in `egises_hj_errors`.
"""
from html import escape
from typing import Any

import numpy as np

from evaluation.bootstrap import MIN_CLUSTERS, RESAMPLES, Interval, bootstrap_method, clustered_mean, interval_refusal
from evaluation.personalization.paradoxes import PROBES, STYLES, SUMMARY, paradox_tests
from evaluation.text import preprocess

from .. import figures
from ..common import INTERVAL, Question, base_report, clean, clean_list, interval_keys
from ..correlations import similarity_correlations
from ..inputs import Judgments, ReportInput, to_float
from ..markup import Report, figure, flag, interval, num, rating_counts, table
from ..ppi.part import SCHEMA as PPI_SCHEMA
from ..ppi.quantities import Quantity, similarity

REFERENCE = "reference"
SURVEY_QUESTION = "similarity"
PARADOX_LABELS = ("PX-5", "PX-6")  # the summary labels over the contrastive styles (interfaces.md)
Origin = tuple[str, ...]  # ("reference",) or ("model", model, prompt style)
REPORT_SCHEMA = {
    "mean_similarity": {"type": "object", "additionalProperties": {"type": "number", "nullable": True},
                        "description": "pair id -> mean rating."},
    "mean_similarity_detail": {"type": "object", "description": "pair id -> n, n_items, interval."},
    "egises_hj": {"type": "object", "additionalProperties": {"type": "object"},
                  "description": "model -> prompt style -> EGISES-HJ."},
    "egises_hj_detail": {"type": "object", "description": "model -> prompt style -> n_documents, interval."},
    "paradoxes": {"type": "object", "additionalProperties": {"type": "object"},
                  "description": "model -> {PX-5, PX-6}: true/false when the interval excludes 0, else null."},
    "paradoxes_detail": {"type": "object", "description": "model -> {PX-5, PX-6} -> difference, interval."},
    **PPI_SCHEMA,
}


def mean_similarity(js: Judgments) -> dict[str, dict[str, Any]]:
    """{pair id: {"mean" (over all non-gold ratings of that pair id), "n" (ratings),
    "n_items", interval keys (bootstrap over its items; none below 5 items, as for the
    usual pair id of one item)}}."""
    ratings = to_float(js.value)
    keep = ~np.isnan(ratings)
    if not keep.any():
        return {}
    names, inverse = np.unique(js.question[keep].astype(str), return_inverse=True)
    inverse = inverse.ravel()
    items, values = js.item[keep], ratings[keep]
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(names) + 1))
    sums, counts = np.bincount(inverse, weights=values), np.bincount(inverse)
    pair_items = np.unique(inverse.astype(np.int64) * (int(items.max()) + 1) + items) // (int(items.max()) + 1)
    n_items = np.bincount(pair_items, minlength=len(names))
    method = bootstrap_method("items", RESAMPLES)
    out = {}
    for k, name in enumerate(names.tolist()):
        if n_items[k] >= MIN_CLUSTERS:
            rows = order[bounds[k]:bounds[k + 1]]
            mean, found = clustered_mean(values[rows], items[rows])
        else:
            mean, found = float(sums[k] / counts[k]), Interval(None, int(n_items[k]), 0, 0,
                                                                interval_refusal(int(n_items[k])))
        out[str(name)] = {"mean": clean(mean), "n": int(counts[k]), "n_items": int(n_items[k]),
                          **interval_keys(found, method)}
    return out


def _ratings_by_item_pair(js: Judgments) -> dict[tuple[int, str], list[float]]:
    ratings = to_float(js.value)
    out: dict[tuple[int, str], list[float]] = {}
    for item, question, x in zip(js.item.tolist(), js.question.tolist(), ratings.tolist()):
        if x == x:
            out.setdefault((item, str(question)), []).append(x)
    return out


def _origin(pair: dict[str, Any]) -> Origin:
    if pair.get("source") == REFERENCE:
        return (REFERENCE,)
    return ("model", str(pair.get("model")), str(pair.get("prompt_style")))


def survey_documents(inp: ReportInput, js: Judgments) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """({doc_id: {"text", "title", "texts": {origin: {uid: text}}, "ratings": {origin:
    {(u0, u1) sorted: [ratings]}}, "pairs": {(u0, u1) sorted}}}, errors) over non-gold items."""
    ratings = _ratings_by_item_pair(js)
    docs: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    conflicted: set[tuple[str, tuple[str, ...], Origin]] = set()
    for index, data in enumerate(inp.item_data):
        if inp.is_gold[index]:
            continue
        document = data.get("document") or {}
        users = [str(u) for u in (data.get("users") or [])]
        if len(users) != 2:
            continue
        doc_id = str(document.get("id", inp.item_ids[index]))
        doc = docs.setdefault(doc_id, {"text": document.get("text", ""), "title": document.get("title"),
                                       "texts": {}, "ratings": {}, "pairs": set()})
        pair_key = tuple(sorted(users))
        doc["pairs"].add(pair_key)
        for pair in data.get("pairs") or []:
            texts = list(pair.get("texts") or [])
            if len(texts) != 2:
                continue
            origin = _origin(pair)
            seen = doc["texts"].setdefault(origin, {})
            clash = [u for u, t in zip(users, texts) if seen.setdefault(u, t) != t]
            key = (doc_id, pair_key, origin)
            if clash:
                if key not in conflicted:
                    errors.append(f"document {doc_id}, users {' / '.join(pair_key)}, {' / '.join(origin)}: item "
                                  f"{inp.item_ids[index]} shows a different text for {', '.join(clash)} than an "
                                  f"earlier item; these ratings are not used")
                conflicted.add(key)
            doc["ratings"].setdefault(origin, {}).setdefault(pair_key, []).extend(
                ratings.get((index, str(pair.get("id"))), []))
    for doc_id, pair_key, origin in conflicted:
        docs[doc_id]["ratings"][origin].pop(pair_key, None)
    return docs, errors


def egises_inputs(docs: dict[str, dict[str, Any]], origin: Origin) -> tuple[list[dict[str, Any]], int]:
    """egises_hj's documents for one model origin, and how many user pairs were never
    surveyed together (egises_hj counts those as skipped, the report does not)."""
    out, unsurveyed = [], 0
    for doc_id, doc in docs.items():
        summaries = doc["texts"].get(origin)
        references = doc["texts"].get((REFERENCE,), {})
        if not summaries:
            continue
        users = sorted(u for u in summaries if u in references)
        if len(users) < 2:
            continue
        n_pairs = len(users) * (len(users) - 1) // 2
        surveyed = {p for p in doc["pairs"] if p[0] in users and p[1] in users}
        unsurveyed += n_pairs - len(surveyed)
        entry = {"doc_id": doc_id, "text": doc["text"],
                 "references": {u: references[u] for u in users},
                 "summaries": {u: summaries[u] for u in users},
                 "reference_ratings": doc["ratings"].get((REFERENCE,), {}),
                 "model_ratings": doc["ratings"].get(origin, {})}
        if doc.get("title"):
            entry["title"] = doc["title"]
        out.append(entry)
    return out, unsurveyed


def egises_part(inp: ReportInput, js: Judgments) -> dict[str, Any]:
    """egises_hj {model: {style: float|None}} and egises_hj_detail {model: {style: {"egises",
    "n_documents", interval keys (bootstrap over documents)}}}, egises_hj_skipped (document,
    user pair)s, egises_hj_errors, jsd_preprocessing steps, paradoxes {model: {"PX-5",
    "PX-6"}} (true/false only when the interval over documents of the difference excludes
    0) and paradoxes_detail {model: {label: paradox_tests entry}}."""
    from evaluation.personalization.egises import egises_hj, egises_interval

    scale = inp.config.get("scale") or [1, 6]
    docs, errors = survey_documents(inp, js)
    origins = sorted({o for doc in docs.values() for o in doc["texts"] if o[0] != REFERENCE})
    table: dict[str, dict[str, Any]] = {}
    detail: dict[str, dict[str, Any]] = {}
    degress: dict[str, dict[str, dict[Any, float]]] = {}
    skipped = 0
    steps = preprocess("x")[1]
    for origin in origins:
        _, model, style = origin
        documents, unsurveyed = egises_inputs(docs, origin)
        if not documents:
            continue
        result = egises_hj(documents, scale=(float(scale[0]), float(scale[1])))
        table.setdefault(model, {})[style] = clean(result["egises_hj"])
        degress.setdefault(model, {})[style] = result["per_document"]
        detail.setdefault(model, {})[style] = {k: clean_list(v) if k == "ci95" else clean(v)
                                               for k, v in egises_interval(result["per_document"]).items()}
        skipped += int(result["skipped"]) - unsurveyed
        steps = result["preprocessing"]
        errors += [f"{model} / {style} / {e['doc_id']}: {e['error']}" for e in result["errors"]]
    flags, flag_detail = {}, {}
    for model, by_style in degress.items():
        known = {s: v for s, v in by_style.items() if s in STYLES and v}
        tests = paradox_tests(known, [SUMMARY[label] for label in PARADOX_LABELS])
        flag_detail[model] = {label: {"probe": SUMMARY[label], **{k: clean_list(v) if k == "ci95" else clean(v)
                                                                  for k, v in tests[SUMMARY[label]].items()}}
                              for label in PARADOX_LABELS}
        flags[model] = {label: flag_detail[model][label]["holds"] for label in PARADOX_LABELS}
    return {"egises_hj": table, "egises_hj_detail": detail, "egises_hj_skipped": skipped,
            "egises_hj_errors": errors, "jsd_preprocessing": steps, "paradoxes": flags,
            "paradoxes_detail": flag_detail}


def build(inp: ReportInput) -> dict[str, Any]:
    pair_ids = sorted({str(q) for q in inp.j_question}) if len(inp.j_question) else []
    survey = Question(SURVEY_QUESTION, INTERVAL, tuple(pair_ids))
    report, js = base_report(inp, [survey], None)
    detail = mean_similarity(js)
    report["mean_similarity"] = {pair: d["mean"] for pair, d in detail.items()}
    report["mean_similarity_detail"] = detail
    report.update(egises_part(inp, js))
    report["correlations"] = similarity_correlations(inp, js, pair_ids)
    return report


def ppi_quantities(inp: ReportInput) -> list[Quantity]:
    """The mean similarity of each pair id (report/ppi/quantities.py)."""
    return similarity(inp, Judgments.of(inp, inp.counted()))


def _probe_text(label: str) -> str:
    richer, plainer = PROBES[SUMMARY[label]]
    return f"{label} (probe {SUMMARY[label]}): EGISES({richer}) >= EGISES({plainer})"


def html_section(r: Report, inp: ReportInput | None = None) -> str:
    """The Similarity survey section: mean similarity per pair, EGISES-HJ, input problems, paradoxes."""
    detail = r.get("mean_similarity_detail") or {}
    mean = table(["pair", "mean similarity", "95% CI", "ratings", "items"],
                 [(p, m, interval(detail.get(p, {}).get("ci95")), detail.get(p, {}).get("n"),
                   detail.get(p, {}).get("n_items")) for p, m in r.get("mean_similarity", {}).items()],
                 "Mean rating of each pair id over its non-gold ratings (all items and annotators); 95% CI: "
                 "bootstrap over the items that show it (none from fewer than 5, as for a pair id of one item).")
    hj, hj_detail = r.get("egises_hj", {}), r.get("egises_hj_detail") or {}
    steps = ", ".join(r.get("jsd_preprocessing", []))
    rows: list[tuple[Any, ...]] = [(m, s, v, interval(hj_detail.get(m, {}).get(s, {}).get("ci95")),
             hj_detail.get(m, {}).get(s, {}).get("n_documents")) for m in hj for s, v in sorted(hj[m].items())]
    egises = table(["model", "prompt style", "EGISES-HJ", "95% CI", "documents"], rows,
                   "EGISES-HJ per model and prompt style (lower = more personalized): sigma between two summaries = "
                   "(max - mean rating) / (max - min) over all ratings of that pair of texts (a user pair is "
                   f"unordered); sigma between a summary and the document = JSD after: {steps}. 95% CI: bootstrap "
                   "over documents.")
    paradox_detail = r.get("paradoxes_detail") or {}
    rows = [(m, label, d.get("probe"), d.get("difference"), interval(d.get("ci95")), d.get("n_documents"),
             flag(d.get("holds"))) for m, by_label in paradox_detail.items() for label, d in by_label.items()]
    paradox = table(["model", "label", "probe", "EGISES(richer) - EGISES(plainer)", "95% CI", "documents", "paradox"],
                    rows,
                    "Paradox flags (yes = the richer prompt did not make the model more personalized): "
                    f"{_probe_text('PX-5')}; {_probe_text('PX-6')}. The flag is yes or no only when the 95% "
                    "bootstrap interval over documents of the difference excludes 0; otherwise it is 'not resolved' "
                    "at this number of documents (null in the JSON).")
    errors = r.get("egises_hj_errors") or []
    error_list = ("<h3>Input problems</h3><ul>" + "".join(f"<li>{escape(e)}</li>" for e in errors) + "</ul>"
                  if errors else "")
    return ('<section id="similarity"><h2>Similarity survey</h2><h3>Mean similarity per pair</h3>' + mean
            + "<h3>EGISES-HJ</h3>" + egises
            + f"<p>Skipped (document, user pair)s without the needed ratings: {num(r.get('egises_hj_skipped'))}</p>"
            + error_list + "<h3>Paradoxes</h3>" + paradox + "</section>")


def rating_figures(r: Report, counts: dict[str, dict[str, int]]) -> list[str]:
    """One histogram of every similarity rating (the pair ids pooled)."""
    pooled = rating_counts(counts, list(counts))
    svg = figures.histogram("fig-ratings", pooled, "similarity rating")
    return [figure("fig-ratings", svg, f"Histogram of all similarity ratings (every pair of every non-gold "
                                       f"item, all annotators; n = {sum(pooled.values())} ratings); "
                                       "1 = low, 6 = very high similarity.")]
