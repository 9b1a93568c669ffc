"""Issue 14 item 3 (blinding) and item 12 (a GET does not reserve).

Annotators see opaque per-assignment tokens: no candidate id (model name), similarity
pair id, model name, item id or gold marker reaches the task page, its htmx partials or
the REST assignment endpoints. Tokens go back to real ids before the answer validator;
judgments keep the real ids; a real id in place of a token is refused.
"""
import json
import re

import pytest
from django.test import Client

from annotate.kinds import KINDS, get_kind
from annotate.models import Assignment, Item, Judgment
from annotate.studies.answers import OPTION_REFUSED
from evaluation.report.kinds import ASPECT_PAIRWISE, EXPLANATION_CHOICE, PAIRWISE_ALIGNMENT, SIMILARITY_SURVEY
from tests.factories import add_items, api_client, explanation, make_study, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]

HX = {"HTTP_HX_REQUEST": "true"}
CANDIDATES = {PAIRWISE_ALIGNMENT: ("gemma-2b-rag", "llama3-8b-sft"),
              EXPLANATION_CHOICE: ("gemma-2b-rag", "llama3-8b-sft"),
              ASPECT_PAIRWISE: ("mistral-7b-plot", "phi3-mini-plot")}
PAIRS = ("doc-ferry-reference", "doc-ferry-qwen2-c0", "doc-ferry-qwen2-c2h")
# Every string an annotator must never see (case-insensitive), besides the item ids; a kind
# without hand-written data below gets its example item with every id renamed secret-...
SECRETS = [*CANDIDATES[PAIRWISE_ALIGNMENT], *CANDIDATES[ASPECT_PAIRWISE], *PAIRS, "qwen2", "doc-ferry",
           "user-1138", "user-2187", "gold", "secret-"]


def renamed(value, names):
    """`value` (JSON) with every string (and key) equal to a key of `names` renamed."""
    if isinstance(value, dict):
        return {names.get(k, k): renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [renamed(v, names) for v in value]
    return names.get(value, value) if isinstance(value, str) else value


def example_data(kind):
    """The kind's example item with its candidate ids (and its question ids, where they
    name item-level things) renamed to secrets an annotator must never see."""
    k = get_kind(kind)
    item = {key: v for key, v in k.example_item(0).items() if key not in ("item_id", "meta", "gold")}
    names = {cid: f"secret-model-{n}" for n, cid in enumerate(k.candidate_ids(item))}
    if k.blind_question_ids:
        names.update({q["id"]: f"secret-question-{n}" for n, q in enumerate(k.questions({}, item))})
    return renamed(item, names)


def data(kind):
    if kind == SIMILARITY_SURVEY:
        return {"document": {"id": "doc-ferry", "text": "The ferry strike ended."}, "users": ["user-1138", "user-2187"],
                "pairs": [{"id": PAIRS[0], "source": "reference", "texts": ["Strike over", "Ferries run again"]},
                          {"id": PAIRS[1], "source": "model", "model": "qwen2", "prompt_style": "C-0-shot",
                           "texts": ["The strike ended", "Boats are back"]},
                          {"id": PAIRS[2], "source": "model", "model": "qwen2", "prompt_style": "C-2-shot w/ hist",
                           "texts": ["Ferry news", "Crossing reopens"]}]}
    if kind not in CANDIDATES:
        return example_data(kind)
    a, b = CANDIDATES[kind]
    candidates = [{"id": a, "text": "First text."}, {"id": b, "text": "Second text."}]
    if kind == ASPECT_PAIRWISE:
        return {"premise": "A keeper finds a letter.", "candidates": candidates}
    out = {"input": "Write a note.", "reference": "My note.", "candidates": candidates}
    if kind == EXPLANATION_CHOICE:
        out["explanations"] = {a: explanation("one"), b: explanation("two")}
    return out


def gold_answers(kind):
    """The gold of the first question: its first option, or the bottom of its scale."""
    first = get_kind(kind).questions({}, data(kind))[0]
    return {first["id"]: first["options"][0] if "options" in first else first["scale"][0]}


def blind_study(kind):
    """A study whose first served item is a gold item (rate 1), then a real one."""
    study = make_study(kind, slug=f"blind-{kind.replace('_', '-')}", overlap=1, gold_rate=1.0, title="A study",
                       instructions="Read on.")
    add_items(study, [(f"secret-item-{kind}", data(kind), None), (f"gold-{kind}", data(kind), gold_answers(kind))])
    return study


def rating(question, n):
    """The rating given to the n-th question shown: its scale's n-th point (wrapping)."""
    lo, hi = question["scale"]
    return lo + n % (hi - lo + 1)


def assert_blind(body, kind):
    text = body.decode() if isinstance(body, bytes) else body
    leaked = [s for s in SECRETS + [f"secret-item-{kind}", f"gold-{kind}"] if s.lower() in text.lower()]
    assert leaked == []


def real_answers(assignment, pick):
    """The answers the annotator gave, in real ids, from the researchers' record of what was
    shown: the kind's `example_answers(questions, pick)` to the choices (answers of one
    screen that its cross-answer rule accepts); the n-th question shown got `rating(question, n)`."""
    from annotate.desk.display import shown_questions

    questions = shown_questions(assignment.study, assignment.item.data, assignment.shown_order)
    choices = get_kind(assignment.study.kind).example_answers(questions, pick)
    return {q["id"]: choices[q["id"]] if "options" in q else str(rating(q, n)) for n, q in enumerate(questions)}


def form_answers(html, kind):
    """The form fields of the item partial: the kind's `example_answers(questions, 0)` to
    the choices (their radios in page order), `rating` of a rating question (the n-th shown)."""
    fields, choices = {}, []
    for n, block in enumerate(re.findall(r'<fieldset class="question.*?</fieldset>', html, re.S)):
        radios = re.findall(r'type="radio" name="([^"]+)" value="([^"]+)"', block)
        if 'class="question rating' in block:
            fields[radios[0][0]] = str(int(radios[0][1]) + n % len(radios))
        else:
            choices.append({"id": radios[0][0], "options": [value for _, value in radios]})
    for block in re.findall(r'<fieldset class="order-question.*?</fieldset>', html, re.S):  # a full order: its widget
        name = re.search(r'class="rank-value" name="([^"]+)"', block).group(1)
        choices.append({"id": name, "options": re.findall(r'data-token="([^"]+)"', block)})
    return {**fields, **get_kind(kind).example_answers(choices, 0)}


@pytest.mark.parametrize("kind", KINDS)
def test_task_page_is_blind_and_stores_real_ids(kind):
    study = blind_study(kind)
    user = make_user("ann-blind")
    client = Client()
    client.force_login(user)
    page = client.get(f"/annotate/{study.slug}/")
    assert page.status_code == 200
    assert Assignment.objects.count() == 0  # item 12: a GET reserves nothing
    assert_blind(page.content, kind)
    for expected_gold in (True, False):
        item = client.post(f"/annotate/{study.slug}/next/", **HX)
        assert item.status_code == 200
        html = item.content.decode()
        assert_blind(html, kind)
        assignment = Assignment.objects.get(annotator=user, completed_at=None)
        assert assignment.item.is_gold is expected_gold
        fields = form_answers(html, kind)
        before = Judgment.objects.count()
        saved = client.post(f"/annotate/{study.slug}/items/{assignment.pk}/submit/", {**fields, "seconds": "3"}, **HX)
        assert saved.status_code == 200 and "Saved." in saved.content.decode()
        assert_blind(saved.content, kind)
        stored = dict(Judgment.objects.filter(assignment=assignment).values_list("question", "value"))
        assert stored == real_answers(assignment, 0)
        assert Judgment.objects.count() == before + len(stored)
        assert assignment.blind  # the mapping is recorded
    # The page with the open assignment (left by the last submit: none, the study is done).
    assert_blind(client.get(f"/annotate/{study.slug}/").content, kind)


def test_similarity_form_field_names_are_tokens_not_pair_ids():
    study = blind_study(SIMILARITY_SURVEY)
    client = Client()
    client.force_login(make_user("ann-sim"))
    html = client.post(f"/annotate/{study.slug}/next/", **HX).content.decode()
    assignment = Assignment.objects.get()
    names = re.findall(r'type="radio" name="q:([^"]+)"', html)
    expected = [assignment.blind and {v: k for k, v in assignment.blind["questions"].items()}[pid]
                for pid in assignment.shown_order["pair_order"]]
    assert list(dict.fromkeys(names)) == expected  # one token per pair, in the order shown
    assert all(re.fullmatch(r"q[0-9a-f]{12}", name) for name in expected)
    # The real pair ids in the form are refused; nothing stored, the assignment stays open.
    posted = {f"q:{pid}": "3" for pid in PAIRS}
    refused = client.post(f"/annotate/{study.slug}/items/{assignment.pk}/submit/", {**posted, "seconds": "3"}, **HX)
    assert refused.status_code == 200 and '<span class="notice error">' in refused.content.decode()
    assert_blind(refused.content, SIMILARITY_SURVEY)
    assert Judgment.objects.count() == 0
    assert Assignment.objects.get().completed_at is None


def test_task_form_refuses_a_real_candidate_id():
    study = blind_study(PAIRWISE_ALIGNMENT)
    client = Client()
    client.force_login(make_user("ann-form"))
    client.post(f"/annotate/{study.slug}/next/", **HX)
    assignment = Assignment.objects.get()
    refused = client.post(f"/annotate/{study.slug}/items/{assignment.pk}/submit/",
                          {"q:choice": "gemma-2b-rag", "seconds": "3"}, **HX)
    html = refused.content.decode()
    assert refused.status_code == 200 and '<span class="notice error">' in html
    assert '<p class="error">must be one of the options shown</p>' in html
    assert_blind(html, PAIRWISE_ALIGNMENT)
    assert Judgment.objects.count() == 0 and Assignment.objects.get().completed_at is None


@pytest.mark.parametrize("kind", KINDS)
def test_api_is_blind_refuses_real_ids_and_stores_real_ids(kind):
    from tests.factories import blinding

    study = blind_study(kind)
    user = make_user("ann-api")
    client = api_client(user)
    for expected_gold in (True, False):
        response = client.post(f"/api/studies/{study.slug}/assignments/next/")
        assert response.status_code == 200
        assert_blind(response.content, kind)
        body = response.json()
        assignment = Assignment.objects.get(pk=body["assignment"])
        assert assignment.item.is_gold is expected_gold
        assert re.fullmatch(r"i[0-9a-f]{12}", body["item_id"])
        # A real id in place of a token: 400, nothing written.
        tokens, candidates = blinding(assignment.pk), get_kind(kind).candidate_ids(assignment.item.data)
        real, errors = {}, {}
        for n, q in enumerate(body["questions"]):
            real_id = tokens.questions.get(q["id"], q["id"])
            if real_id != q["id"]:  # a question id shown as a token, sent in the clear
                real[real_id], errors[real_id], errors[q["id"]] = rating(q, n), "unknown question", "not answered"
            elif "options" in q:
                real[q["id"]], errors[q["id"]] = candidates[0], OPTION_REFUSED
            else:
                real[q["id"]] = rating(q, n)
        if errors:  # (a kind that shows no id has none to send in the clear)
            before = (Judgment.objects.count(), Assignment.objects.filter(completed_at=None).count())
            refused = client.post(f"/api/assignments/{body['assignment']}/judgments/", real, format="json")
            assert (refused.status_code, refused.json()) == (400, {"errors": errors})
            assert (Judgment.objects.count(), Assignment.objects.filter(completed_at=None).count()) == before
        # Tokens: stored under the real ids; the response repeats the tokens.
        choices = get_kind(kind).example_answers(body["questions"], 1)
        answers = {q["id"]: choices[q["id"]] if "options" in q else rating(q, n)
                   for n, q in enumerate(body["questions"])}
        saved = client.post(f"/api/assignments/{body['assignment']}/judgments/", answers, format="json")
        assert saved.status_code == 201
        assert_blind(saved.content, kind)
        assert {j["question"]: j["value"] for j in saved.json()["judgments"]} == {
            k: str(v) for k, v in answers.items()}
        stored = dict(Judgment.objects.filter(assignment=assignment).values_list("question", "value"))
        assert stored == real_answers(assignment, 1)
    assert client.post(f"/api/studies/{study.slug}/assignments/next/").status_code == 204


def test_tokens_differ_between_annotators_and_are_stable_for_one():
    study = make_study(PAIRWISE_ALIGNMENT, slug="two-annotators", overlap=2)
    add_items(study, [("only", data(PAIRWISE_ALIGNMENT), None)])
    bodies = []
    for name in ("ann-a", "ann-b"):
        client = api_client(make_user(name))
        first = client.post("/api/studies/two-annotators/assignments/next/").json()
        assert client.post("/api/studies/two-annotators/assignments/next/").json() == first  # stable
        bodies.append(first)
    tokens = [set(q["options"]) for body in bodies for q in body["questions"]]
    assert tokens[0].isdisjoint(tokens[1])
    assert bodies[0]["item_id"] != bodies[1]["item_id"]


def test_researchers_export_keeps_the_real_ids(researcher):
    study = blind_study(PAIRWISE_ALIGNMENT)
    client = api_client(make_user("ann-exp"))
    body = client.post(f"/api/studies/{study.slug}/assignments/next/").json()
    client.post(f"/api/assignments/{body['assignment']}/judgments/",
                {"choice": body["questions"][0]["options"][0], "seconds": 2}, format="json")
    assignment = Assignment.objects.get()
    export = api_client(researcher).get(f"/api/studies/{study.slug}/judgments/?format=jsonl")
    rows = [json.loads(line) for line in b"".join(export.streaming_content).decode().splitlines()]
    assert [(r["item_id"], r["value"], r["shown_order"]) for r in rows] == [
        (assignment.item.item_id, assignment.shown_order["choice"][0], "|".join(assignment.shown_order["choice"]))]


# --- issue 14 item 12: a GET does not reserve --------------------------------------------------


def test_get_reserves_nothing_and_start_needs_a_csrf_post():
    study = make_study(PAIRWISE_ALIGNMENT, slug="no-get", overlap=1)
    add_items(study, [("one", data(PAIRWISE_ALIGNMENT), None)])
    user = make_user("ann-get")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    page = client.get("/annotate/no-get/")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="start"' in html and 'id="item-form"' not in html
    assert (Assignment.objects.count(), Item.objects.get().n_assigned) == (0, 0)
    # Another site's form: no CSRF token, refused, still nothing reserved.
    assert client.post("/annotate/no-get/next/").status_code == 403
    assert Assignment.objects.count() == 0
    # The Start button (CSRF token from the page) reserves one; without htmx it goes back to the page.
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)[1]
    started = client.post("/annotate/no-get/next/", {"csrfmiddlewaretoken": token})
    assert (started.status_code, started["Location"]) == (302, "/annotate/no-get/")
    assert Assignment.objects.filter(annotator=user).count() == 1
    again = client.get("/annotate/no-get/").content.decode()
    assert 'id="item-form"' in again and f'data-assignment="{Assignment.objects.get().pk}"' in again
    assert Assignment.objects.count() == 1 and Item.objects.get().n_assigned == 1


# --- issue 15 item 10: the keyboard help lists the keys of the current kind only -------------------


@pytest.mark.parametrize("kind, choice, rating", [
    (PAIRWISE_ALIGNMENT, True, None), (ASPECT_PAIRWISE, True, None),
    (EXPLANATION_CHOICE, True, (1, 5)), (SIMILARITY_SURVEY, False, (1, 6))])
def test_keyboard_help_lists_the_kinds_keys_only(kind, choice, rating):
    study = blind_study(kind)
    client = Client()
    client.force_login(make_user("ann-keys"))
    html = client.get(f"/annotate/{study.slug}/").content.decode()
    help_text = re.search(r'<dl class="keys">(.*?)</dl>', html, re.S)[1]
    assert ("choose the first / second option" in help_text) is choice
    assert "tie" not in help_text  # the study allows no tie
    if rating:
        assert f"<dt><kbd>{rating[0]}</kbd> … <kbd>{rating[1]}</kbd></dt><dd>give a rating" in help_text
    else:
        assert "give a rating" not in help_text
    assert Assignment.objects.count() == 0
