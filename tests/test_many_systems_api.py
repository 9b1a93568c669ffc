"""Issue 22 end to end through the REST API: a study of 5 systems x 60 items x 3 annotators
(create the study, upload the batch, annotators fetch and submit with their tokens), its
judgments exported and re-imported with import_judgments into a fresh study of the same
batch: the report is identical, and it ranks the five systems from 2 x judgments
comparisons (each judgment is one comparison for each of the two systems it shows)."""
import io
from collections import Counter

import pytest

from annotate.models import Assignment, Judgment, Study
from annotate.studies.judgments_io import import_judgments
from tests.factories import api_client, header, jsonl, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
SYSTEMS = ("bm25-k1", "bm25-k4", "contriever", "recency", "no-profile")
N_ITEMS, OVERLAP = 60, 3
NDJSON = "application/x-ndjson"


def batch():
    """60 items, each with all five systems' outputs and a ROUGE-L that favours the
    earlier systems (so the metric agrees with the annotators below)."""
    items = [{"item_id": f"q{i:02d}", "input": f"Write a headline for article {i}.",
              "reference": f"The user's headline {i}.",
              "candidates": [{"id": s, "text": f"Headline {n} for article {i}."} for n, s in enumerate(SYSTEMS)],
              "metric_scores": {"rougeL": {s: round(0.5 - 0.05 * n + 0.01 * (i % 3), 2)
                                           for n, s in enumerate(SYSTEMS)}}}
             for i in range(N_ITEMS)]
    return jsonl(header("five", "pairwise_alignment", title="Five systems", annotations_per_item=OVERLAP,
                        allow_tie=True), *items)


def pick(first, second, item, k):
    """An annotator's answer: usually the earlier system, the later one on every 4th
    (item, annotator), a tie on every 7th."""
    if (item + k) % 7 == 0:
        return "tie"
    better, worse = sorted((first, second), key=SYSTEMS.index)
    return worse if (item + 2 * k) % 4 == 0 else better


def annotate_all(admin):
    """Creates the study and its items through the API; three annotators work until done."""
    created = admin.post("/api/studies/", {"slug": "five", "kind": "pairwise_alignment", "title": "Five systems",
                                           "annotations_per_item": OVERLAP, "allow_tie": True}, format="json")
    assert created.status_code == 201, created.content
    uploaded = admin.post("/api/studies/five/batches/", batch(), content_type=NDJSON)
    assert uploaded.json() == {"study": "five", "created": N_ITEMS, "skipped": 0}
    for k in range(3):
        client = api_client(make_user(f"annotator-{k}"))
        while (response := client.post("/api/studies/five/assignments/next/")).status_code == 200:
            body = response.json()
            choice = next(q for q in body["questions"] if q["id"] == "choice")
            token_of = {Assignment.objects.get(pk=body["assignment"]).blind["options"][t]: t
                        for t in choice["options"] if t != "tie"}
            first, second = Assignment.objects.get(pk=body["assignment"]).shown_order["candidates"]
            assert list(token_of) == [first, second] and choice["options"][2] == "tie"
            item = int(Assignment.objects.get(pk=body["assignment"]).item.item_id[1:])
            answer = pick(first, second, item, k)
            saved = client.post(f"/api/assignments/{body['assignment']}/judgments/",
                                {"choice": token_of.get(answer, answer), "seconds": 4 + k}, format="json")
            assert saved.status_code == 201, saved.content
        assert response.status_code == 204


def report(admin):
    response = admin.get("/api/studies/five/report/")
    assert response.status_code == 200
    return response.json()


@pytest.mark.slow
def test_five_systems_through_the_api_rank_and_reimport_to_the_same_report():
    admin = api_client(make_user("admin-five", "admins"))
    annotate_all(admin)
    judgments = Judgment.objects.filter(study__slug="five")
    assert judgments.count() == N_ITEMS * OVERLAP
    shown = Counter(tuple(sorted(j.shown_order.split("|")[:2])) for j in judgments)
    assert len(shown) == 10 and set(shown.values()) == {18}  # 180 judgments over the 10 pairs, evenly
    before = report(admin)
    # The ranking (s22b's report side): every system ranked; each judgment is one comparison
    # for each of its two systems, so the human rows' n sum to 2 x judgments.
    assert sorted(before["ranking"]) == sorted(SYSTEMS)
    ranked = sorted(SYSTEMS, key=lambda s: -before["ranking"][s]["strength"])
    assert [before["ranking"][s]["rank"] for s in ranked] == sorted(before["ranking"][s]["rank"] for s in SYSTEMS)
    assert before["ranking"][ranked[0]]["rank"] == 1 and before["ranking"][ranked[-1]]["rank"] <= 5
    assert sum(before["systems"][s]["human"]["n"] for s in SYSTEMS) == 2 * N_ITEMS * OVERLAP
    wins = Counter(j.value for j in judgments)
    ties = Counter(s for j in judgments if j.value == "tie" for s in j.shown_order.split("|")[:2])
    assert {s: (before["systems"][s]["human"]["wins"], before["systems"][s]["human"]["ties"]) for s in SYSTEMS} == {
        s: (wins[s], ties[s]) for s in SYSTEMS}
    exported = admin.get("/api/studies/five/judgments/?format=csv")
    text = b"".join(exported.streaming_content)
    # A fresh study of the same batch, the judgments loaded from the export.
    Study.objects.get(slug="five").delete()
    assert admin.post("/api/studies/five/batches/", batch(), content_type=NDJSON).status_code == 201
    assert import_judgments(io.BytesIO(text))["created"] == N_ITEMS * OVERLAP
    assert report(admin) == before
