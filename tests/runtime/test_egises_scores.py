"""EGISES-JSD stored as scores where user groups exist (hand-worked, two readers).

With two users, the softmax over k != j has one term, so soft = 1 and
DEGRESS(d) = (min(s_ref, s_model) + 1e-5) / (max(s_ref, s_model) + 1e-5), where s is the
JSD between the two users' texts. References "apple banana" / "cherry grape" share no
word: s_ref = 1. Summaries "apple banana" / "apple banana": s_model = 0 -> DEGRESS =
1e-5 / (1 + 1e-5). Summaries "apple banana" / "apple cherry": p = (1/2, 1/2, 0),
q = (1/2, 0, 1/2), m = (1/2, 1/4, 1/4), KL(p||m) = 1/2 log2(2) = 1/2 = KL(q||m), JSD = 1/2
-> DEGRESS = (0.5 + 1e-5) / (1 + 1e-5).
"""
import pytest

from annotate.studies.importing import import_batch_bytes
from models_runtime.jobs import submit_job
from tests.factories import jsonl

from .helpers import scores

pytestmark = pytest.mark.django_db
FLAT = 1e-5 / (1 + 1e-5)
HALF = (0.5 + 1e-5) / (1 + 1e-5)


def load(lines):
    return import_batch_bytes(jsonl(*lines)).study


def test_pairwise_items_grouped_by_document_and_user(settings):
    settings.CELERY_BROKER_URL = ""
    header = {"study": {"slug": "eg-pairs", "kind": "pairwise_alignment", "title": "t", "instructions": "i"}}
    items = [
        {"item_id": "u1", "input": "fruit news today", "reference": "apple banana",
         "meta": {"doc_id": "d1", "user": "u1"},
         "candidates": [{"id": "a", "text": "apple banana"}, {"id": "b", "text": "apple banana"}]},
        {"item_id": "u2", "input": "fruit news today", "reference": "cherry grape",
         "meta": {"doc_id": "d1", "user": "u2"},
         "candidates": [{"id": "a", "text": "apple banana"}, {"id": "b", "text": "apple cherry"}]},
        {"item_id": "alone", "input": "x", "reference": "y",
         "candidates": [{"id": "a", "text": "p"}, {"id": "b", "text": "q"}]},
    ]
    study = load([header] + items)
    job = submit_job("score", {"study": study.slug, "metrics": "egises_jsd,rouge1"})
    assert job.state == "done", job.errors
    assert scores(study, "egises_jsd") == pytest.approx({("u1", "a"): FLAT, ("u2", "a"): FLAT,
                                                         ("u1", "b"): HALF, ("u2", "b"): HALF})
    assert job.result["egises_jsd"]["egises"] == pytest.approx({"a": 1 - FLAT, "b": 1 - HALF})
    assert job.result["egises_jsd"]["items_without_group"] == 1
    assert scores(study, "rouge1")[("alone", "a")] == 0.0


def test_similarity_survey_pairs(settings):
    settings.CELERY_BROKER_URL = ""
    header = {"study": {"slug": "eg-survey", "kind": "similarity_survey", "title": "t", "instructions": "i"}}
    item = {"item_id": "doc1", "document": {"id": "doc1", "text": "fruit market report"}, "users": ["u1", "u2"],
            "pairs": [{"id": "ref", "source": "reference", "texts": ["apple banana", "cherry grape"]},
                      {"id": "p1", "source": "model", "model": "m", "prompt_style": "C-0-shot",
                       "texts": ["apple banana", "apple cherry"]},
                      {"id": "p2", "source": "model", "model": "m", "prompt_style": "C-2-shot w/o hist",
                       "texts": ["apple banana", "apple banana"]}]}
    study = load([header, item])
    job = submit_job("score", {"study": study.slug, "metrics": "egises_jsd"})
    assert job.state == "done", job.errors
    assert scores(study, "egises_jsd") == pytest.approx({("doc1", "p1"): HALF, ("doc1", "p2"): FLAT})
    assert job.result["egises_jsd"]["egises"]["m"] == pytest.approx({"C-0-shot": 1 - HALF,
                                                                     "C-2-shot w/o hist": 1 - FLAT})
    from models_runtime.job_support.kinds import JobParamsError
    with pytest.raises(JobParamsError, match="no candidates to score"):
        submit_job("score", {"study": study.slug, "metrics": "rouge1"})


def test_survey_groups_readers_like_the_icopernicus_table(settings):
    """D12: three readers of one document appear in three user-pair items; `score
    egises_jsd` groups them back into one document, so its EGISES per (model, style)
    equals the table `generate icopernicus` writes for the same headlines, and every pair
    of the document gets the document's DEGRESS."""
    from types import SimpleNamespace

    from models_runtime.egises_scores import egises_scores
    from models_runtime.icopernicus import CONTRASTIVE, STYLES, egises_table, survey_items

    users = {"u1": {"reference": "apple banana"}, "u2": {"reference": "cherry grape"},
             "u3": {"reference": "apple grape melon"}}
    docs = [{"doc_id": "d1", "text": "fruit market report", "users": users},
            {"doc_id": "d2", "text": "stock market news", "users": users}]
    texts = {"u1": "apple banana", "u2": "apple cherry", "u3": "melon grape"}
    headlines = {"m": {(d["doc_id"], u, s): f"{texts[u]} {d['doc_id']}" if s == "C-0-shot" else texts[u]
                       for d in docs for u in users for s in STYLES}}
    table, _ = egises_table(docs, headlines, ["m"])
    items = [SimpleNamespace(key=str(n), item_id=it["item_id"], data=it, meta=None)
             for n, it in enumerate(survey_items(docs, headlines, ["m"]))]
    assert len(items) == 6  # 3 user pairs x 2 documents
    rows, summary = egises_scores(items)
    for style in CONTRASTIVE:
        assert summary["egises"]["m"][style] == pytest.approx(table["m"][style])
    by_doc = {}
    for item, _, value in rows:
        by_doc.setdefault((item.data["document"]["id"], _), set()).add(round(value, 12))
    assert all(len(values) == 1 for values in by_doc.values())  # one DEGRESS per document and pair id
