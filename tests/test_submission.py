"""Submitting through the REST API: validation, idempotency, edits and their audit."""
import pytest
from rest_framework.test import APIClient

from annotate.models import Assignment, AuditLog, Item, Judgment
from evaluation.report.kinds import ASPECT_PAIRWISE, EXPLANATION_CHOICE, SIMILARITY_SURVEY
from tests.factories import api_client, blinding, make_items, make_study, tokens

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]


def take(client, slug):
    response = client.post(f"/api/studies/{slug}/assignments/next/")
    assert response.status_code == 200, response.content
    return response.json()


def post_answers(client, assignment_id, body, method="post"):
    return getattr(client, method)(f"/api/assignments/{assignment_id}/judgments/", body, format="json")


def test_next_endpoint_shape_and_204_when_done(annotators):
    study = make_study(overlap=1)
    make_items(study, 1)
    client = api_client(annotators[0])
    body = take(client, study.slug)
    assert set(body) == {"assignment", "item_id", "item", "questions"}
    tokens_of = blinding(body["assignment"])  # item id and options are the assignment's opaque tokens
    assert body["item_id"] == tokens_of.item and body["item_id"] != "item-0000"
    assert body["questions"][0]["id"] == "choice"
    assert sorted(body["questions"][0]["options"]) == sorted([tokens_of.option("m1"), tokens_of.option("m2")])
    assert sorted(tokens_of.options.values()) == ["m1", "m2"]
    assert take(client, study.slug)["assignment"] == body["assignment"]  # same open one
    assert post_answers(client, body["assignment"], tokens(body["assignment"], {"choice": "m2"})
                        | {"seconds": 4.5}).status_code == 201
    assert Judgment.objects.get().value == "m2"
    assert client.post(f"/api/studies/{study.slug}/assignments/next/").status_code == 204
    other = api_client(annotators[1])
    assert other.post(f"/api/studies/{study.slug}/assignments/next/").status_code == 204  # overlap 1 used up


def test_next_endpoint_refuses_outsiders_and_anonymous(django_user_model, annotators):
    study = make_study()
    make_items(study, 1)
    study.annotators.add(annotators[0])
    # annotators[1] may not see the study: 404, the same as for a slug that does not exist.
    assert api_client(annotators[1]).post(f"/api/studies/{study.slug}/assignments/next/").status_code == 404
    assert APIClient().post(f"/api/studies/{study.slug}/assignments/next/").status_code in (401, 403)
    assert api_client(annotators[0]).post("/api/studies/no-such-study/assignments/next/").status_code == 404


def test_submit_stores_every_question_with_order_and_seconds(annotators):
    study = make_study(EXPLANATION_CHOICE)
    make_items(study, 1)
    client = api_client(annotators[0])
    body = take(client, study.slug)
    order = body["questions"][0]["options"]  # tokens, in the order shown
    real = [blinding(body["assignment"]).options[token] for token in order]
    response = post_answers(client, body["assignment"], {"choice": order[1], "usefulness": 4, "seconds": 12.25})
    assert response.status_code == 201, response.content
    stored = {j.question: j for j in Judgment.objects.all()}
    assert set(stored) == {"choice", "usefulness"}
    assert stored["choice"].value == real[1]  # the judgment keeps the real candidate id
    assert stored["choice"].shown_order == "|".join(real) == "|".join(Assignment.objects.get().shown_order["choice"])
    returned = {j["question"]: j for j in response.json()["judgments"]}  # the annotator gets tokens back
    assert (returned["choice"]["value"], returned["choice"]["shown_order"]) == (order[1], "|".join(order))
    assert stored["usefulness"].value == "4" and stored["usefulness"].shown_order == ""
    assert stored["choice"].seconds == 12.25 and stored["choice"].submitted_at is not None
    assignment = Assignment.objects.get(pk=body["assignment"])
    assert assignment.completed_at is not None and assignment.seconds == 12.25
    item = Item.objects.get()
    assert (item.n_assigned, item.n_completed) == (1, 1)
    assert [j["question"] for j in response.json()["judgments"]] == ["choice", "usefulness"]


def test_repeat_submit_is_harmless_and_the_first_value_stands(annotators):
    study = make_study()
    make_items(study, 1)
    client = api_client(annotators[0])
    body = take(client, study.slug)
    first = post_answers(client, body["assignment"], tokens(body["assignment"], {"choice": "m1"}) | {"seconds": 3})
    again = post_answers(client, body["assignment"], tokens(body["assignment"], {"choice": "m2"}) | {"seconds": 9})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["judgments"] == first.json()["judgments"]
    assert list(Judgment.objects.values_list("value", "seconds")) == [("m1", 3.0)]
    assert Item.objects.get().n_completed == 1


@pytest.mark.parametrize("answers, errors", [
    ({}, {"choice": "not answered"}),
    ({"choice": "m3"}, {"choice": "must be one of the options shown"}),
    ({"choice": "m1"}, {"choice": "must be one of the options shown"}),  # a real candidate id, not a token
    ({"choice": "tie"}, {"choice": "must be one of the options shown"}),  # ties not allowed in this study
    ({"choice": "TOKEN-m1", "extra": "x"}, {"extra": "unknown question"}),
    ({"choice": "TOKEN-m1", "seconds": "soon"}, {"seconds": "must be a number"}),
    ({"choice": "TOKEN-m1", "seconds": -1}, {"seconds": "must be a non-negative number"}),
])
def test_invalid_answers_are_refused_and_nothing_is_written(annotators, answers, errors):
    study = make_study()
    make_items(study, 1)
    client = api_client(annotators[0])
    body = take(client, study.slug)
    if answers.get("choice") == "TOKEN-m1":
        answers = {**answers, "choice": blinding(body["assignment"]).option("m1")}
    response = post_answers(client, body["assignment"], answers)
    assert response.status_code == 400
    assert response.json() == {"errors": errors}
    assert Judgment.objects.count() == 0
    assert Assignment.objects.get().completed_at is None


def test_rating_validation_and_tie(annotators):
    study = make_study(SIMILARITY_SURVEY)
    make_items(study, 1)
    client = api_client(annotators[0])
    body = take(client, study.slug)
    pair = blinding(body["assignment"]).question  # pair ids are tokens for the annotator
    answers = {pair("ref"): 6, pair("p1"): "1", pair("p2"): 7, pair("p3"): 2.5}
    response = post_answers(client, body["assignment"], answers)
    assert response.json() == {"errors": {pair("p2"): "must be an integer from 1 to 6",
                                          pair("p3"): "must be an integer from 1 to 6"}}
    real_keys = post_answers(client, body["assignment"], {"ref": 6, "p1": 1, "p2": 3, "p3": 2})
    assert real_keys.status_code == 400
    assert real_keys.json() == {"errors": {**{pid: "unknown question" for pid in ("ref", "p1", "p2", "p3")},
                                           **{pair(pid): "not answered" for pid in ("ref", "p1", "p2", "p3")}}}
    assert Judgment.objects.count() == 0
    answers.update({pair("p2"): 3, pair("p3"): 2})
    assert post_answers(client, body["assignment"], answers).status_code == 201
    stored = dict(Judgment.objects.values_list("question", "value"))
    assert stored == {"ref": "6", "p1": "1", "p2": "3", "p3": "2"}
    orders = dict(Judgment.objects.values_list("question", "shown_order"))
    assignment = Assignment.objects.get()
    assert orders == {pid: "|".join(assignment.shown_order[pid]) for pid in ("ref", "p1", "p2", "p3")}
    assert set(orders.values()) <= {"0|1", "1|0"}

    tie_study = make_study(ASPECT_PAIRWISE, allow_tie=True)
    make_items(tie_study, 1)
    body = take(client, tie_study.slug)
    answers = {q["id"]: "tie" for q in body["questions"]}
    assert post_answers(client, body["assignment"], answers).status_code == 201


def test_someone_elses_assignment_is_not_found(annotators):
    study = make_study()
    make_items(study, 1)
    body = take(api_client(annotators[0]), study.slug)
    response = post_answers(api_client(annotators[1]), body["assignment"], tokens(body["assignment"], {"choice": "m1"}))
    assert response.status_code == 404
    assert Judgment.objects.count() == 0


def test_edit_is_audited_and_closes_when_the_item_completes(annotators):
    """Overlap 2: ann1 submits m1, edits to m2 (audited before/after); once ann2 also
    submits, the item is complete (2 of 2) and a further edit answers 409."""
    study = make_study(overlap=2)
    make_items(study, 1)
    c1, c2 = api_client(annotators[0]), api_client(annotators[1])
    a1 = take(c1, study.slug)["assignment"]
    m1, m2 = tokens(a1, {"choice": "m1"}), tokens(a1, {"choice": "m2"})
    assert post_answers(c1, a1, {**m1, "edit": True}).status_code == 409  # nothing submitted yet
    post_answers(c1, a1, {**m1, "seconds": 2})
    assert post_answers(c1, a1, {"choice": "m2"}, method="put").status_code == 400  # a real id: refused
    response = post_answers(c1, a1, m2, method="put")
    assert response.status_code == 200
    assert response.json()["judgments"][0]["value"] == m2["choice"]
    log = AuditLog.objects.get()
    assert (log.action, log.user, log.object_id) == ("judgment.edit", annotators[0], str(a1))
    assert log.before == {"item_id": "item-0000", "values": {"choice": "m1"}}
    assert log.after == {"item_id": "item-0000", "values": {"choice": "m2"}}
    assert post_answers(c1, a1, {**m2, "edit": True}).status_code == 200  # no change: no new log
    assert AuditLog.objects.count() == 1
    a2 = take(c2, study.slug)["assignment"]
    post_answers(c2, a2, tokens(a2, {"choice": "m1"}) | {"seconds": 2})
    response = post_answers(c1, a1, m1, method="patch")
    assert response.status_code == 409
    assert "complete" in response.json()["detail"]
    assert Judgment.objects.get(annotator=annotators[0]).value == "m2"
    assert post_answers(c1, a1, {"choice": "m9", "edit": "true"}).status_code == 409


def test_annotator_quality_gold_accuracy_and_median_seconds(annotators):
    """ann1 answers 3 gold items (gold choice m1): m1, m1, m2 -> 2/3 correct; with one
    real item, its item times are 10, 20, 40, 5 seconds -> median (10 + 20) / 2 = 15.0."""
    from annotate.desk.assignment import next_assignment
    from annotate.desk.submission import submit
    from annotate.reports.quality import annotator_quality

    study = make_study(overlap=1, gold_rate=0.0)
    make_items(study, 1)
    gold_items = make_items(study, 3, gold={"choice": "m1"})
    user = annotators[0]
    for seconds, item, value in zip((10, 20, 40), gold_items, ("m1", "m1", "m2")):
        a = Assignment.objects.create(study=study, item=item, annotator=user, shown_order={})
        submit(a.pk, user, {"choice": value}, seconds=seconds)
    a = next_assignment(study, user)
    submit(a.pk, user, {"choice": "m2"}, seconds=5)
    quality = annotator_quality(study)["ann1"]
    assert quality["gold_checked"] == 3 and quality["gold_correct"] == 2
    assert quality["gold_accuracy"] == pytest.approx(2 / 3)
    assert quality["median_seconds"] == 15.0
    assert quality["items"] == 4 and quality["judgments"] == 4


def test_quality_page_is_for_researchers_only(client, annotators, researcher):
    study = make_study()
    client.force_login(annotators[0])
    assert client.get(f"/annotate/{study.slug}/quality/").status_code == 403
    client.force_login(researcher)
    assert client.get(f"/annotate/{study.slug}/quality/").status_code == 200


def test_instructions_markdown_cannot_inject_markup():
    from annotate.desk.rendering import render_markdown

    html = render_markdown('**Bold** <img src=x onerror=alert(1)> [x](javascript:alert(1)) [ok](https://e.org)')
    assert "<strong>Bold</strong>" in html
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'href="#"' in html and "javascript:" not in html
    assert 'href="https://e.org"' in html


def test_home_lists_studies_with_progress(client, annotators):
    study = make_study(overlap=1)
    make_items(study, 2)
    client.force_login(annotators[0])
    assert client.get("/").status_code == 200
    response = client.get("/")
    assert [(r["done"], r["assigned"], r["total"]) for r in response.context["rows"]] == [(0, 0, 2)]
    client.logout()
    assert client.get("/")["Location"].startswith("/login/")
