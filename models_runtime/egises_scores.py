"""EGISES-JSD as stored metric scores, wherever a study has user groups.

EGISES needs several readers of one document, so it is computed over the whole study
(not per chunk), after the per-item metrics:
- survey items (kind SIMILARITY_SURVEY) (a document, two users, a reference pair and model pairs):
  the readers of one document are grouped across its items (user pairs), each model pair
  gets DEGRESS of that document over all its readers (question = pair id), and the
  result gives the corpus EGISES per (model, prompt style).
- pairwise items whose `meta` has `doc_id` and `user` (one item per reader of a
  document; document text = `meta.document`, else the item's `input`): each candidate
  id gets, on each item, DEGRESS of its document for that candidate's outputs across the
  document's readers; the result gives the corpus EGISES per candidate id.
Stored values are DEGRESS (higher = more personalized, the metric convention of the
reports); EGISES = 1 - mean DEGRESS (lower = better) is in the job result. Items
without a group are left without a score and counted.
"""
from collections import defaultdict

EVALUATOR = "egises_jsd"


def _doc(doc_id, text, title, references, summaries):
    return {"doc_id": doc_id, "text": text, "title": title, "references": references, "summaries": summaries}


def survey_documents(items):
    """{(model, style): {doc id: ([(item, pair id)], document dict)}} from survey
    items. Every reader of a document is one group, whichever user pair (item) showed them:
    the same grouping as the EGISES table of `generate icopernicus`, so both give one
    EGISES-JSD per (model, style) for the same headlines."""
    groups = defaultdict(dict)
    for item in items:
        data = item.data
        users = data.get("users") or []
        ref = next((p for p in data.get("pairs", []) if p.get("source") == "reference"), None)
        if ref is None or len(users) != 2:
            continue
        document = data.get("document") or {}
        doc_id = str(document.get("id") or item.item_id)
        for pair in data.get("pairs", []):
            if pair.get("source") != "model":
                continue
            entries, doc = groups[(pair.get("model", ""), pair.get("prompt_style", ""))].setdefault(
                doc_id, ([], _doc(doc_id, document.get("text", ""), document.get("title"), {}, {})))
            entries.append((item, pair["id"]))
            doc["references"].update(zip(users, ref["texts"]))
            doc["summaries"].update(zip(users, pair["texts"]))
    return groups


def pairwise_documents(items):
    """{candidate id: [(items of the document, document dict)]} from items with meta doc_id/user."""
    by_doc = defaultdict(list)
    for item in items:
        meta = item.meta or {}
        if meta.get("doc_id") is not None and meta.get("user") is not None:
            by_doc[str(meta["doc_id"])].append(item)
    groups = defaultdict(list)
    for doc_id, members in by_doc.items():
        if len({str(i.meta["user"]) for i in members}) < 2:
            continue
        first = members[0]
        text = (first.meta or {}).get("document") or first.data.get("input", "")
        references = {str(i.meta["user"]): i.data.get("reference", "") for i in members}
        for cid in {c["id"] for i in members for c in i.data.get("candidates", [])}:
            summaries = {str(i.meta["user"]): next((c["text"] for c in i.data["candidates"] if c["id"] == cid), "")
                         for i in members}
            groups[cid].append((members, _doc(doc_id, text, None, references, summaries)))
    return groups


def egises_scores(items):
    """-> (rows [(item, question, degress or None)], summary). `items`: StudyItem records
    (annotate.services.study_items)."""
    from evaluation.personalization.egises import egises  # NLTK: imported when a job needs it, not at startup

    rows, summary, scored = [], {}, set()
    for (model, style), documents in survey_documents(items).items():
        for entries, doc in documents.values():
            degress = egises([doc])["degress"]
            for item, pair_id in entries:
                rows.append((item, pair_id, degress))
                scored.add(item.key)
        corpus = egises([doc for _, doc in documents.values()])
        summary.setdefault(model, {})[style] = corpus["egises"]
    for cid, entries in pairwise_documents(items).items():
        for members, doc in entries:
            degress = egises([doc])["degress"]
            for item in members:
                rows.append((item, cid, degress))
                scored.add(item.key)
        summary[cid] = egises([doc for _, doc in entries])["egises"]
    return rows, {"egises": summary, "items_without_group": sum(1 for i in items if i.key not in scored)}
