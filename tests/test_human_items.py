"""Which items humans are offered (issue 35, statistics.md "Prediction-powered estimates"):
the `human_share` and `allocation: "judge_uncertain"` headers, their seeded draws, every
door of the engine serving only offered items, and progress counting only them."""
import hashlib
import math

import numpy as np
import pytest
from django.test import Client

from annotate.desk.assignment import next_assignment
from annotate.desk.progress import annotator_progress, study_progress
from annotate.models import Assignment, AuditLog, Batch, Item, Prediction, Study
from annotate.services import PredictionRow, upsert_predictions
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.human_items import slug_seed
from annotate.studies.importing import import_batch_bytes
from tests.factories import api_client, header, jsonl, make_user, pairwise, tokens

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
IDS = [f"it-{n:02d}" for n in range(10)]


def share_study(slug="share", ids=IDS, **keys):
    import_batch_bytes(jsonl(header(slug, "pairwise_alignment", human_share=0.3, gold_rate=0.0,
                                    annotations_per_item=1, **keys), *[pairwise(i) for i in ids]))
    return Study.objects.get(slug=slug)


def offered(study):
    return sorted(Item.objects.filter(study=study, offered=True).values_list("item_id", flat=True))


def expected_subset(ids, share, seed):
    """Independently of human_subset: numpy's permutation of the sorted ids, the first
    ceil(share x n) of them."""
    order = sorted(ids)
    k = math.ceil(round(share * len(order), 9))
    return sorted(order[i] for i in np.random.default_rng(seed).permutation(len(order))[:k])


def test_the_slug_seed_is_sha256_of_the_slug():
    digest = hashlib.sha256(b"share").hexdigest()
    assert slug_seed("share") == int(digest[:16], 16) % 2**63


def test_a_share_of_0_3_of_10_items_offers_exactly_3_drawn_from_the_slug():
    study = share_study()
    chosen = offered(study)
    assert len(chosen) == 3
    assert chosen == expected_subset(IDS, 0.3, slug_seed("share"))
    assert study.config["human_items"] == {"allocation": "human_share", "share": 0.3, "seed": slug_seed("share")}
    # Every real item was drawn (offer_probability set), with the subset's inclusion probability 3 / 10.
    assert sorted(Item.objects.filter(study=study).values_list("offer_probability", flat=True)) == [0.3] * 10
    # The same slug draws the same items, whatever order the file lists them in.
    Study.objects.all().delete()
    again = share_study(ids=list(reversed(IDS)))
    assert offered(again) == chosen
    # Another slug, another draw; an explicit human_seed is used as given.
    other = share_study(slug="share-b", human_seed=7)
    assert offered(other) == expected_subset(IDS, 0.3, 7) and other.config["human_items"]["seed"] == 7


def test_a_later_batch_draws_its_own_items_and_keeps_the_first_draw():
    study = share_study()
    first = offered(study)
    more = [f"new-{n}" for n in range(7)]
    import_batch_bytes(jsonl(header("share", "pairwise_alignment"), *[pairwise(i) for i in more]))
    # ceil(0.3 x 7) = 3 of the 7 new items, seed + the 10 items drawn before; probability 3 / 7.
    assert offered(study) == sorted(first + expected_subset(more, 0.3, slug_seed("share") + 10))
    probs = dict(Item.objects.filter(study=study).values_list("item_id", "offer_probability"))
    assert {probs[i] for i in more} == {3 / 7} and {probs[i] for i in IDS} == {0.3}
    # Re-importing the same file changes nothing (identical items are skipped).
    import_batch_bytes(jsonl(header("share", "pairwise_alignment"), *[pairwise(i) for i in more]))
    assert offered(study) == sorted(first + expected_subset(more, 0.3, slug_seed("share") + 10))


def test_gold_items_are_never_drawn_and_stay_offered():
    lines = [pairwise(i) for i in IDS] + [pairwise("g1", gold="m1")]
    import_batch_bytes(jsonl(header("gold", "pairwise_alignment", human_share=0.5), *lines))
    gold = Item.objects.get(item_id="g1")
    assert (gold.offered, gold.offer_probability) == (True, None)
    assert len(offered(Study.objects.get())) == 5 + 1


def test_the_engine_never_offers_unoffered_items_on_any_door():
    study = share_study()
    chosen = offered(study)
    # The API: the three offered items, then nothing (204).
    ann1 = make_user("ann1")
    client = api_client(ann1)
    served = []
    for _ in range(3):
        response = client.post("/api/studies/share/assignments/next/")
        assert response.status_code == 200
        pk = response.json()["assignment"]
        served.append(Assignment.objects.get(pk=pk).item.item_id)
        assert client.post(f"/api/assignments/{pk}/judgments/", tokens(pk, {"choice": "m1"}),
                           format="json").status_code == 201
    assert sorted(served) == chosen
    assert client.post("/api/studies/share/assignments/next/").status_code == 204
    # Progress: the annotator's total and the study's needed count only the offered items.
    assert annotator_progress(study, ann1) == {"done": 3, "assigned": 3, "total": 3, "remaining": 0}
    assert study_progress(study) == {"n_items": 10, "n_gold": 0, "n_real": 10, "n_offered": 3, "complete": 3,
                                     "done": 3, "needed": 3, "percent": 100.0}
    # The page door (a second study, overlap 1: ann2 starts fresh): only offered items, then "all done".
    other = share_study(slug="share-web")
    ann2 = make_user("ann2")
    web = Client()
    web.force_login(ann2)
    assert annotator_progress(other, ann2)["total"] == 3
    seen = []
    for _ in range(3):
        web.post("/annotate/share-web/next/")
        current = Assignment.objects.get(annotator=ann2, completed_at__isnull=True)
        seen.append(current.item.item_id)
        Assignment.objects.filter(pk=current.pk).update(completed_at=current.created_at)
    assert sorted(seen) == offered(other)
    web.post("/annotate/share-web/next/")
    assert Assignment.objects.filter(annotator=ann2).count() == 3
    assert next_assignment(other, ann2) is None
    page = web.get("/studies/share/progress/")  # ann2 may not read results: refused, not a 500
    assert page.status_code in (403, 404)
    researcher = make_user("res", role="researchers")
    web.force_login(researcher)
    panel = web.get("/studies/share/progress/").content.decode()
    assert "3 of 3 annotations (100.0%) · 3 complete items of 3 offered to humans (10 in all" in panel


@pytest.mark.parametrize("keys, message", [
    ({"human_share": 0}, "'human_share' must be a number in (0, 1] (the share of items humans are offered), got 0"),
    ({"human_share": 1.5},
     "'human_share' must be a number in (0, 1] (the share of items humans are offered), got 1.5"),
    ({"human_share": "x"},
     "'human_share' must be a number in (0, 1] (the share of items humans are offered), got 'x'"),
    ({"human_share": True},
     "'human_share' must be a number in (0, 1] (the share of items humans are offered), got True"),
    ({"allocation": "judge_uncertain", "human_budget": 0.3},
     "\"allocation\": \"judge_uncertain\" needs 'uncertainty_evaluator': the name of the evaluator whose scores "
     "rank the items (a string of at most 200 characters)"),
    ({"allocation": "judge_uncertain", "uncertainty_evaluator": "gemba"},
     "\"allocation\": \"judge_uncertain\" needs 'human_budget': a number in (0, 1] (the expected share of items "
     "humans are offered)"),
    ({"allocation": "judge_uncertain", "uncertainty_evaluator": "gemba", "human_budget": 0.3, "human_share": 0.3},
     "'human_share' cannot be combined with \"allocation\": \"judge_uncertain\" (its share of items is "
     "'human_budget')"),
    ({"allocation": "random"}, "'allocation' must be one of balanced, adaptive, judge_uncertain, got 'random'"),
    ({"human_budget": 0.3}, "'human_budget' applies only with \"allocation\": \"judge_uncertain\""),
    ({"human_seed": 3}, "'human_seed' needs 'human_share' or \"allocation\": \"judge_uncertain\""),
    ({"human_share": 0.5, "human_seed": -1}, f"'human_seed' must be an integer from 0 to {2**63 - 1}, got -1"),
])
def test_bad_settings_refuse_the_batch_whole(keys, message):
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(jsonl(header("bad", "pairwise_alignment", **keys), pairwise("a"), pairwise("b")))
    assert caught.value.errors == [f"line 1: {message}"]
    assert (Study.objects.count(), Item.objects.count(), Batch.objects.count(), AuditLog.objects.count()) == (0,) * 4


def test_the_api_refuses_bad_settings_and_a_later_batch_cannot_change_them():
    admin = make_user("boss", role="admins", is_superuser=True, is_staff=True)
    client = api_client(admin)
    body = {"slug": "via-api", "kind": "pairwise_alignment", "title": "T", "human_share": 1.5}
    response = client.post("/api/studies/", body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "line 1: 'human_share' must be a number in (0, 1] (the share of items humans are offered), got 1.5"]
    assert not Study.objects.exists()
    assert client.post("/api/studies/", dict(body, human_share=0.5), format="json").status_code == 201
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(jsonl(header("via-api", "pairwise_alignment", human_share=0.3), pairwise("a")))
    assert caught.value.errors == [
        f"line 1: human-item settings {{allocation: human_share, share: 0.3, seed: {slug_seed('via-api')}}} differ "
        f"from the existing study's {{allocation: human_share, share: 0.5, seed: {slug_seed('via-api')}}}"]
    # The study's own setting governs a batch that leaves the keys out: 2 of 4 offered.
    import_batch_bytes(jsonl(header("via-api", "pairwise_alignment"), *[pairwise(i) for i in "abcd"]))
    assert offered(Study.objects.get()) == expected_subset(list("abcd"), 0.5, slug_seed("via-api"))


# --- allocation: "judge_uncertain" -----------------------------------------------------------

JUDGE = {"allocation": "judge_uncertain", "uncertainty_evaluator": "gemba", "human_budget": 0.5}
# gemba's scores of (m1, m2) per item: margins 10, 0, 10, 20, 10, 30 -> median positive margin 10.
SCORES = {"u-a": (60, 50), "u-b": (40, 40), "u-c": (30, 40), "u-d": (70, 50), "u-e": (55, 45), "u-f": (80, 50)}


def hand_probabilities():
    """pi_i by hand: p = 1 / (1 + 3^(-margin / 10)), u = sqrt(p (1 - p)), pi = 3 u / sum(u)
    (budget 0.5 x 6 items = 3; every pi lies between the floor 0.1 and 1, so none is clipped)."""
    ids = sorted(SCORES)
    p = [1 / (1 + 3 ** (-abs(a - b) / 10)) for a, b in (SCORES[i] for i in ids)]
    u = [math.sqrt(q * (1 - q)) for q in p]
    return ids, [3 * x / sum(u) for x in u]


def test_judge_uncertain_draws_when_the_batch_brings_the_scores():
    lines = [pairwise(i, metric_scores={"gemba": {"m1": a, "m2": b}}) for i, (a, b) in SCORES.items()]
    import_batch_bytes(jsonl(header("active", "pairwise_alignment", **JUDGE), *lines))
    study = Study.objects.get()
    ids, pi = hand_probabilities()
    stored = dict(Item.objects.filter(study=study).values_list("item_id", "offer_probability"))
    assert [stored[i] for i in ids] == pytest.approx(pi, abs=1e-12)
    assert sum(stored.values()) == pytest.approx(3.0)
    draws = np.random.default_rng(slug_seed("active")).random(6)
    assert offered(study) == [i for i, p, r in zip(ids, pi, draws) if r < p]
    assert study.config["human_items"] == {"allocation": "judge_uncertain", "evaluator": "gemba", "budget": 0.5,
                                           "seed": slug_seed("active")}


def test_judge_uncertain_waits_for_every_score_then_draws_once():
    lines = [pairwise(i) for i in SCORES]
    import_batch_bytes(jsonl(header("later", "pairwise_alignment", gold_rate=0.0, **JUDGE), *lines))
    study = Study.objects.get()
    assert list(Item.objects.values_list("offered", "offer_probability").order_by().distinct()) == [(False, None)]
    ann = make_user("ann")
    assert next_assignment(study, ann) is None  # nothing offered before the draw
    assert study_progress(study)["needed"] == 0
    keys = dict(Item.objects.values_list("item_id", "pk"))
    rows = [PredictionRow(str(keys[i]), "gemba", cand, str(score)) for i, pair in SCORES.items()
            for cand, score in zip(("m1", "m2"), pair)]
    upsert_predictions("later", rows[:6])  # half the items scored: still waiting
    upsert_predictions("later", [PredictionRow(r.item_key, "other", r.question, "1") for r in rows])  # not its judge
    assert not Item.objects.filter(offered=True).exists()
    assert not Item.objects.filter(offer_probability__isnull=False).exists()
    upsert_predictions("later", rows[6:])
    ids, pi = hand_probabilities()
    stored = dict(Item.objects.values_list("item_id", "offer_probability"))
    assert [stored[i] for i in ids] == pytest.approx(pi, abs=1e-12)
    chosen = offered(study)
    draws = np.random.default_rng(slug_seed("later")).random(6)
    assert chosen == [i for i, p, r in zip(ids, pi, draws) if r < p]
    # Storing the scores again (a re-run) draws nothing again.
    upsert_predictions("later", [PredictionRow(r.item_key, r.evaluator, r.question, "0") for r in rows])
    assert offered(study) == chosen
    assert dict(Item.objects.values_list("item_id", "offer_probability")) == stored
    served = next_assignment(study, ann)
    assert served is not None and served.item.item_id in chosen
    assert Prediction.objects.filter(evaluator="gemba").count() == 12


def test_a_predictions_file_brings_the_scores_and_the_draw():
    """The predictions-file door (import_predictions) triggers the judge_uncertain draw too."""
    import io

    from annotate.studies.judgments_io import import_predictions

    import_batch_bytes(jsonl(header("by-file", "pairwise_alignment", **JUDGE), *[pairwise(i) for i in SCORES]))
    rows = "".join(f"by-file,{i},gemba,,{c},{s}\n" for i, pair in SCORES.items() for c, s in zip(("m1", "m2"), pair))
    import_predictions(io.BytesIO(("study,item_id,evaluator,annotator,question,value\n" + rows).encode()))
    ids, pi = hand_probabilities()
    stored = dict(Item.objects.values_list("item_id", "offer_probability"))
    assert [stored[i] for i in ids] == pytest.approx(pi, abs=1e-12)
    draws = np.random.default_rng(slug_seed("by-file")).random(6)
    assert offered(Study.objects.get()) == [i for i, p, r in zip(ids, pi, draws) if r < p]


def test_the_rules_documented_examples_hold():
    import doctest

    from evaluation.prediction_powered import judge_uncertainty

    assert doctest.testmod(judge_uncertainty).failed == 0


def test_a_participant_link_serves_only_offered_items_and_counts_places_by_them():
    """The participants' door (a recruiting study's link, the flow, the task page)."""
    from annotate.participants.recruitment import places_limit
    from tests.test_participants import answer_all, participant_client

    study = share_study(slug="crowd", recruitment={"platform": "prolific"}, max_items_per_participant=2)
    assert places_limit(study) == 2  # ceil(3 offered items x overlap 1 / 2 per participant), not 5 of 10 items
    judged = []
    for pid in ("aaa1", "bbb2"):
        client = participant_client("crowd", f"?PROLIFIC_PID={pid}&STUDY_ID=st01&SESSION_ID=se01")
        judged.append(answer_all(client, "crowd"))
    assert judged == [2, 1]
    assert sorted(Assignment.objects.filter(study=study).values_list("item__item_id", flat=True)) == offered(study)
