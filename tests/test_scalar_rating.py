"""scalar_rating's own doors: bad batches refused whole with line numbers, the review
(the item's comment) optional, required or off, and the task page and the demo study."""
import pytest
from django.test import Client

from annotate.models import Assignment, Item, Judgment, Prediction, Study
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from tests.factories import api_client, header, jsonl, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
KIND = "scalar_rating"


def line(item_id, **extra):
    return {"item_id": item_id, "input": "A keeper finds a letter.",
            "candidate": {"id": "plot-a", "text": "She answers it."}, **extra}


def refused(*objects):
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(jsonl(*objects))
    assert (Study.objects.count(), Item.objects.count(), Prediction.objects.count()) == (0, 0, 0)
    return caught.value.errors


def test_a_good_batch_stores_the_metric_scores_as_predictions():
    result = import_batch_bytes(jsonl(header("rate", KIND, scale=[1, 5], comment="required"),
                                      line("a", metric_scores={"rougeL": 0.25, "bleu": 12}), line("b")))
    assert result.as_json() == {"study": "rate", "created": 2, "skipped": 0}
    assert Study.objects.get().config == {"scale": [1, 5], "comment": "required"}
    assert set(Prediction.objects.values_list("item__item_id", "evaluator", "annotator", "question", "value")) == {
        ("a", "rougeL", "", "plot-a", "0.25"), ("a", "bleu", "", "plot-a", "12")}


def test_bad_batches_are_refused_whole_with_line_numbers():
    errors = refused(header("rate", KIND, scale=[1, 5]),
                     line("ok", gold=3),
                     line("out-of-scale", gold=6),  # the score is outside the study's scale
                     {"item_id": "no-candidate", "input": "x"},
                     line("matrix", metric_scores={"rougeL": {"plot-a": 0.3}}),  # a pairwise kind's shape
                     line("not-a-number", metric_scores={"rougeL": "high"}),
                     line("bad-candidate", candidate={"id": "a|b", "text": "t"}),
                     line("empty-text", candidate={"id": "x", "text": " "}),
                     line("bad-input", input=3),
                     line("bad-reference", reference=["the user's text"]))
    assert errors == [
        "line 3: 'gold' for 'score' must be an integer in [1, 5], got 6",
        "line 4: missing key 'candidate'",
        "line 5: metric_scores['rougeL'] must be a finite number (this kind scores its one candidate)",
        "line 6: metric_scores['rougeL'] must be a finite number (this kind scores its one candidate)",
        "line 7: 'candidate.id' is reserved ('tie', 'pair_order') or contains '|'",
        "line 8: 'candidate' must be an object {\"id\", \"text\"} with a non-empty 'text'",
        "line 9: 'input' must be a string",
        "line 10: 'reference' must be a string",
    ]


def test_bad_headers_are_refused():
    assert refused(header("rate", KIND, scale=[1, 20]), line("a")) == [
        "line 1: 'scale' may have at most 11 points, got [1, 20] (20 points)"]
    assert refused(header("rate", KIND, comment="sometimes"), line("a")) == [
        "line 1: 'comment' must be one of optional, required, off"]
    assert refused(header("rate", KIND, question=""), line("a")) == [
        "line 1: 'question' must be a non-empty string of at most 1000 characters"]
    assert refused(header("rate", KIND, allow_tie=True), line("a")) == [
        "line 1: 'allow_tie' applies to pairwise kinds, not scalar_rating"]


def _next(client, slug):
    body = client.post(f"/api/studies/{slug}/assignments/next/").json()
    return body, Assignment.objects.get(pk=body["assignment"])


@pytest.mark.parametrize("mode, comment, status, error", [
    ("optional", "", 201, None), ("optional", "Fun.", 201, None),
    ("required", "", 400, "not answered"), ("required", "Loved it.", 201, None),
    ("off", "A note.", 400, "this study takes no comment"), ("off", "", 201, None)])
def test_the_review_is_optional_required_or_off(mode, comment, status, error):
    import_batch_bytes(jsonl(header("rev", KIND, comment=mode), line("a")))
    client = api_client(make_user("ann"))
    body, assignment = _next(client, "rev")
    assert body["item"] == {"input": "A keeper finds a letter.", "text": "She answers it."}  # no system id
    assert body["questions"] == [{"id": "score", "text": "How much would you enjoy this? 1 = not at all, "
                                                        "10 = very much.", "scale": [1, 10]}]
    response = client.post(f"/api/assignments/{assignment.pk}/judgments/", {"score": 8, "comment": comment},
                           format="json")
    assert response.status_code == status, response.content
    if error:
        assert response.json() == {"errors": {"comment": error}} and not Judgment.objects.exists()
    else:
        assert list(Judgment.objects.values_list("question", "value", "comment")) == [("score", "8", comment)]


def test_the_task_page_shows_the_text_and_the_review_box():
    import_batch_bytes(jsonl(header("page", KIND, comment="required"), line("a", reference="The user's own plot.")))
    client = Client()
    client.force_login(make_user("ann-page"))
    html = client.post("/annotate/page/next/", HTTP_HX_REQUEST="true").content.decode()
    assert "She answers it." in html and "A keeper finds a letter." in html and "plot-a" not in html
    assert "own plot" not in html  # the metrics' reference is never shown
    assert "Your review (required)" in html and 'name="comment"' in html and " required>" in html
    assignment = Assignment.objects.get()
    saved = client.post(f"/annotate/page/items/{assignment.pk}/submit/",
                        {"q:score": "9", "comment": "The letters got me.", "seconds": "4"}, HTTP_HX_REQUEST="true")
    assert saved.status_code == 200 and "Saved." in saved.content.decode()
    assert list(Judgment.objects.values_list("value", "comment")) == [("9", "The letters got me.")]


def test_no_review_box_when_off():
    import_batch_bytes(jsonl(header("page-off", KIND, comment="off"), line("a")))
    client = Client()
    client.force_login(make_user("ann-off"))
    html = client.post("/annotate/page-off/next/", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="item-comment"' not in html and "She answers it." in html  # (the skip form keeps its own)
