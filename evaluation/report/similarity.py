"""similarity_survey report (iCOPERNICUS human survey): mean similarity per pair, EGISES-HJ
per (model, prompt style) and the PX-5 / PX-6 paradox flags over the contrastive styles."""
import numpy as np

from .common import INTERVAL, base_report, clean
from .inputs import to_float

REFERENCE = "reference"


def mean_similarity(js):
    """{pair id: mean rating over all non-gold ratings of that pair id}."""
    ratings = to_float(js.value)
    keep = ~np.isnan(ratings)
    out = {}
    if not keep.any():
        return out
    questions = js.question[keep].astype(str)
    names, inverse = np.unique(questions, return_inverse=True)
    sums = np.bincount(inverse, weights=ratings[keep])
    counts = np.bincount(inverse)
    return {str(n): float(s / c) for n, s, c in zip(names, sums, counts)}


def _ratings_by_item_pair(js):
    ratings = to_float(js.value)
    out = {}
    for item, question, x in zip(js.item.tolist(), js.question.tolist(), ratings.tolist()):
        if x == x:
            out.setdefault((item, str(question)), []).append(x)
    return out


def survey_documents(inp, js):
    """Group the non-gold items by document id: {doc_id: {"text", "title", "references":
    {uid: text}, "ratings": {(source, model, style): {(u0, u1): [ratings]}},
    "summaries": {(model, style): {uid: text}}, "pairs": {(u0, u1)}}}."""
    ratings = _ratings_by_item_pair(js)
    docs = {}
    for index, data in enumerate(inp.item_data):
        if inp.is_gold[index]:
            continue
        document = data.get("document") or {}
        users = [str(u) for u in (data.get("users") or [])]
        if len(users) != 2:
            continue
        doc = docs.setdefault(str(document.get("id", inp.item_ids[index])), {
            "text": document.get("text", ""), "title": document.get("title"), "references": {},
            "summaries": {}, "ratings": {}, "pairs": set()})
        doc["pairs"].add(tuple(users))
        for pair in data.get("pairs") or []:
            texts = list(pair.get("texts") or [])
            if len(texts) != 2:
                continue
            key = (REFERENCE, None, None) if pair.get("source") == REFERENCE else (
                "model", str(pair.get("model")), str(pair.get("prompt_style")))
            if key[0] == REFERENCE:
                doc["references"].update(zip(users, texts))
            else:
                doc["summaries"].setdefault(key[1:], {}).update(zip(users, texts))
            doc["ratings"].setdefault(key, {}).setdefault(tuple(users), []).extend(
                ratings.get((index, str(pair.get("id"))), []))
    return docs


def egises_inputs(docs, model_style):
    """egises_hj's documents for one (model, prompt style), and how many user pairs were
    never surveyed together (egises_hj counts those as skipped, the report does not)."""
    out, unsurveyed = [], 0
    for doc_id, doc in docs.items():
        summaries = doc["summaries"].get(model_style)
        if not summaries:
            continue
        users = sorted(u for u in summaries if u in doc["references"])
        if len(users) < 2:
            continue
        n_pairs = len(users) * (len(users) - 1) // 2
        surveyed = {tuple(sorted(p)) for p in doc["pairs"] if p[0] in users and p[1] in users}
        unsurveyed += n_pairs - len(surveyed)
        entry = {"doc_id": doc_id, "text": doc["text"],
                 "references": {u: doc["references"][u] for u in users},
                 "summaries": {u: summaries[u] for u in users},
                 "reference_ratings": doc["ratings"].get((REFERENCE, None, None), {}),
                 "model_ratings": doc["ratings"].get(("model",) + model_style, {})}
        if doc.get("title"):
            entry["title"] = doc["title"]
        out.append(entry)
    return out, unsurveyed


def egises_part(inp, js):
    """(egises_hj {model: {style: float|None}}, skipped (document, user pair)s, errors,
    paradoxes {model: {"PX-5", "PX-6"}})."""
    from evaluation.egises import egises_hj
    from evaluation.paradoxes import STYLES, paradoxes

    scale = inp.config.get("scale") or [1, 6]
    docs = survey_documents(inp, js)
    styles = sorted({key for doc in docs.values() for key in doc["summaries"]})
    table, skipped, errors = {}, 0, []
    for model, style in styles:
        documents, unsurveyed = egises_inputs(docs, (model, style))
        if not documents:
            continue
        result = egises_hj(documents, scale=(float(scale[0]), float(scale[1])))
        table.setdefault(model, {})[style] = clean(result["egises_hj"])
        skipped += int(result["skipped"]) - unsurveyed
        errors += [f"{model} / {style} / {e['doc_id']}: {e['error']}" for e in result["errors"]]
    flags = {}
    for model, by_style in table.items():
        known = {s: v for s, v in by_style.items() if s in STYLES and v is not None}
        summary = paradoxes(known)["summary"]
        flags[model] = {"PX-5": summary["PX-5"], "PX-6": summary["PX-6"]}
    return table, skipped, errors, flags


def build(inp):
    pair_ids = sorted({str(q) for q in inp.j_question}) if len(inp.j_question) else []
    report, js = base_report(inp, [(q, INTERVAL) for q in pair_ids], None)
    report["mean_similarity"] = mean_similarity(js)
    report["egises_hj"], report["egises_hj_skipped"], errors, report["paradoxes"] = egises_part(inp, js)
    if errors:
        report["egises_hj_errors"] = errors
    return report
