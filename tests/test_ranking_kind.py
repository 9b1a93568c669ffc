"""The listwise `ranking` kind (studies.md "`ranking`"; issue 33): a full order is the one
answer; a partial or repeated order, ties where the study allows none, or tokens of another
screen are refused at every door (task page, REST API, import_judgments, a batch's gold),
nothing stored; ties where allowed; batch checks of ids that could not be stored."""
import io
import json
import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotate.kinds import get_kind
from annotate.models import Assignment, Judgment, Study
from annotate.studies.answers import ORDER_REFUSED
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import import_judgments
from evaluation.report.kinds import RANKING
from tests.factories import blinding, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
HX = {"HTTP_HX_REQUEST": "true"}
IDS = ["m1", "m2", "m3", "m4"]


def item(i, ids=IDS, **extra):
    return {"item_id": f"r{i}", "input": f"Request {i}", "reference": f"Own text {i}",
            "candidates": [{"id": c, "text": f"Output {c} for {i}"} for c in ids], **extra}


def batch(slug, items, **header):
    head = {"study": {"slug": slug, "kind": RANKING, "title": "Ranking", "annotations_per_item": 2, "gold_rate": 0.0,
                      **header}}
    return ("\n".join(json.dumps(o) for o in [head, *items]) + "\n").encode()


def study_of(slug="rank", n=3, **header):
    import_batch_bytes(batch(slug, [item(i) for i in range(n)], **header))
    return Study.objects.get(slug=slug)


def refused(data):
    with pytest.raises(BatchInvalid) as info:
        import_batch_bytes(data)
    return info.value.errors


def test_batch_refuses_what_a_ranking_could_not_store():
    assert refused(batch("b1", [item(0, ["m1", "m>2", "m3"])])) == [
        "line 2: candidate id 'm>2' contains '>' or '=', which a stored ranking uses between ids"]
    long_ids = [c * 60 for c in "abcd"]  # 4 * 60 + 3 separators = 243 > 200
    assert refused(batch("b2", [item(0, long_ids)])) == [
        "line 2: the candidate ids joined into a ranking (243 characters) exceed the 200 characters a stored answer "
        "may have: use shorter ids"]
    assert refused(batch("b3", [item(0)], ties="yes")) == ["line 1: 'ties' must be true or false, got 'yes'"]
    assert refused(batch("b4", [item(0, ["m1", "m2"])])) == ["line 2: 'candidates' must be a list of 3 to 8, got 2"]
    errors = refused(batch("b5", [item(0, gold="m1>m2>m3")]))  # a partial gold order
    assert len(errors) == 1 and errors[0].startswith("line 2:") and "partial" in errors[0] and "'m4'" in errors[0]
    assert not Study.objects.filter(slug__in=["b1", "b2", "b3", "b4", "b5"]).exists()
    import_batch_bytes(batch("b6", [item(0, gold="m2>m1>m4>m3")]))
    assert Study.objects.get(slug="b6").items.get().gold == {"rank": "m2>m1>m4>m3"}


def next_assignment(client, slug):
    body = client.post(f"/api/studies/{slug}/assignments/next/").json()
    return body, blinding(body["assignment"])


def test_api_takes_a_full_order_of_tokens_and_refuses_the_rest():
    study_of()
    client = APIClient()
    client.force_authenticate(make_user("ann-api"))
    body, tokens = next_assignment(client, "rank")
    question = body["questions"][0]
    assert question["id"] == "rank" and question["order"] is True and question["ties"] is False
    shown = question["options"]  # tokens, in the shown order
    assert sorted(tokens.options[t] for t in shown) == IDS
    other = APIClient()
    other.force_authenticate(make_user("ann-other"))
    _, foreign = next_assignment(other, "rank")
    url = f"/api/assignments/{body['assignment']}/judgments/"
    bad = {"partial": shown[:3], "repeated": shown[:3] + [shown[0]],
           "foreign": shown[:3] + [next(iter(foreign.options))],
           "real ids": IDS, "tie not allowed": [[shown[0], shown[1]], shown[2], shown[3]], "empty": [],
           "text partial": ">".join(shown[:3]), "not a list": {"a": 1}}
    for why, order in bad.items():
        response = client.post(url, {"rank": order, "seconds": 3}, format="json")
        assert response.status_code == 400, why
        message = json.dumps(response.json())
        assert "rank" in message, why
        assert not any(c in message for c in ("m1", "m2", "m3", "m4")), why  # never a real id to an annotator
    assert not Judgment.objects.exists()
    response = client.post(url, {"rank": list(reversed(shown)), "seconds": 3}, format="json")
    assert response.status_code == 201, response.content
    stored = Judgment.objects.get()
    assert stored.value == ">".join(tokens.options[t] for t in reversed(shown))
    assert stored.shown_order == "|".join(tokens.options[t] for t in shown)
    assert response.json()["judgments"][0]["value"] == ">".join(reversed(shown))  # the annotator's tokens


def test_ties_where_the_study_allows_them():
    study_of("rank-ties", ties=True)
    client = APIClient()
    client.force_authenticate(make_user("ann-ties"))
    body, tokens = next_assignment(client, "rank-ties")
    shown = body["questions"][0]["options"]
    url = f"/api/assignments/{body['assignment']}/judgments/"
    response = client.post(url, {"rank": [shown[2], [shown[0], shown[3]], shown[1]], "seconds": 3}, format="json")
    assert response.status_code == 201, response.content
    real = [tokens.options[t] for t in shown]
    assert Judgment.objects.get().value == f"{real[2]}>{real[0]}={real[3]}>{real[1]}"


def form_of(html):
    field = re.search(r'class="rank-value" name="([^"]+)"', html).group(1)
    return field, re.findall(r'data-token="([^"]+)"', html)


def test_task_page_refuses_partial_repeated_and_foreign_orders():
    study_of("rank-page")
    user = make_user("ann-page")
    client = Client()
    client.force_login(user)
    html = client.post("/annotate/rank-page/next/", **HX).content.decode()
    assert 'class="order-question' in html and "Output A" in html and "Output D" in html
    assert not any(f'"{c}"' in html or f">{c}<" in html for c in IDS)  # tokens only
    field, shown = form_of(html)
    assert len(shown) == 4
    assignment = Assignment.objects.get(annotator=user, completed_at=None)
    other = Client()
    other.force_login(make_user("ann-page-2"))
    _, foreign = form_of(other.post("/annotate/rank-page/next/", **HX).content.decode())
    url = f"/annotate/rank-page/items/{assignment.pk}/submit/"
    for order in (shown[:3], shown[:3] + shown[:1], shown[:3] + foreign[:1], [IDS[0]] + shown[1:]):
        response = client.post(url, {field: ">".join(order), "seconds": "3"}, **HX)
        assert response.status_code == 200
        text = response.content.decode()
        assert ("rank every output shown exactly once" in text or "must be one of the options shown" in text), order
        assert 'aria-invalid="true"' in text
    assert not Judgment.objects.exists()
    response = client.post(url, {field: ">".join(shown), "seconds": "3"}, **HX)
    assert "Saved." in response.content.decode()
    assert Judgment.objects.get().value == ">".join(blinding(assignment.pk).options[t] for t in shown)


def judgments_csv(rows):
    return ("study,item_id,annotator,question,value,shown_order,seconds,submitted_at\n"
            + "".join(",".join(r) + ",\n" for r in rows)).encode()


def test_import_refuses_bad_orders_with_their_line_and_stores_nothing():
    study_of("rank-imp")
    good = ["rank-imp", "r0", "imp1", "rank", "m1>m2>m3>m4", "m4|m3|m2|m1", "5"]
    rows = [good,
            ["rank-imp", "r0", "imp2", "rank", "m1>m2>m3", "", "5"],
            ["rank-imp", "r1", "imp1", "rank", "m1>m2>m2>m3>m4", "", "5"],
            ["rank-imp", "r1", "imp2", "rank", "m1>m2>m3>m9", "", "5"],
            ["rank-imp", "r2", "imp1", "rank", "m1=m2>m3>m4", "", "5"]]
    with pytest.raises(BatchInvalid) as info:
        import_judgments(io.BytesIO(judgments_csv(rows)))
    errors = info.value.errors
    assert [e.split(":")[0] for e in errors] == ["line 3", "line 4", "line 5", "line 6"]
    assert "partial: it leaves out 'm4'" in errors[0]
    assert "repeats 'm2'" in errors[1]
    assert "names 'm9'" in errors[2]
    assert "ties are not allowed" in errors[3]
    assert not Judgment.objects.exists()
    assert import_judgments(io.BytesIO(judgments_csv([good])))["created"] == 1
    assert Judgment.objects.get().value == "m1>m2>m3>m4"


def test_kind_questions_and_example_answers():
    kind = get_kind(RANKING)
    q = kind.questions({"ties": True}, item(0))
    assert q == [{"id": "rank", "text": "Rank the outputs from best to worst.", "options": IDS, "order": True,
                  "ties": True}]
    assert kind.example_answers(q, 1) == {"rank": "m2>m3>m4>m1"}
    assert ORDER_REFUSED.startswith("rank every output")


def test_demo_study_with_simulated_rankings_recovers_the_true_order():
    """The demo batch and its simulated judgments go through the ordinary doors; the report's
    Plackett-Luce ranking puts the systems in the order of the strengths they were drawn from."""
    from annotate.kinds.ranking import DEMO_ANNOTATORS, DEMO_ITEMS, DEMO_STRENGTHS
    from annotate.reports.data import study_report
    from annotate.studies.demo_data import demo_batches

    kind = get_kind(RANKING)
    import_batch_bytes(demo_batches()[RANKING])
    result = import_judgments(io.BytesIO(kind.demo_judgments()))
    assert result["created"] == DEMO_ITEMS * DEMO_ANNOTATORS
    study = Study.objects.get(slug=kind.demo_slug)
    assert study.items.filter(is_gold=True).get().gold == {"rank": "profile-rag>bm25-k2>no-profile>generic-lm"}
    report, _ = study_report(study, "json")
    assert report["n_judgments"] == DEMO_ITEMS * DEMO_ANNOTATORS
    ranking = report["ranking"]
    assert sorted(ranking, key=lambda s: ranking[s]["rank"]) == list(DEMO_STRENGTHS)
    assert report["kendall_w"]["n"] == DEMO_ITEMS and report["kendall_w"]["ci95"] is not None
    assert all(entry["ci95"] is not None for entry in ranking.values())


def test_an_edit_shows_the_order_in_tokens_and_takes_a_new_full_order_only():
    study_of("rank-edit")
    user = make_user("ann-edit")
    client = Client()
    client.force_login(user)
    html = client.post("/annotate/rank-edit/next/", **HX).content.decode()
    field, shown = form_of(html)
    assignment = Assignment.objects.get(annotator=user, completed_at=None)
    client.post(f"/annotate/rank-edit/items/{assignment.pk}/submit/", {field: ">".join(shown), "seconds": "3"}, **HX)
    edit_url = f"/annotate/rank-edit/items/{assignment.pk}/edit/"
    form = client.get(edit_url, **HX).content.decode()
    assert f'class="rank-value" name="{field}" value="{"&gt;".join(shown)}"' in form  # tokens, never ids
    assert not any(c in form for c in ("m1&gt;", "&gt;m4"))
    refused_edit = client.post(edit_url, {field: ">".join(shown[:2])}, **HX).content.decode()
    assert "rank every output shown exactly once" in refused_edit
    tokens = blinding(assignment.pk)
    assert Judgment.objects.get().value == ">".join(tokens.options[t] for t in shown)
    client.post(edit_url, {field: ">".join(reversed(shown))}, **HX)
    assert Judgment.objects.get().value == ">".join(tokens.options[t] for t in reversed(shown))
