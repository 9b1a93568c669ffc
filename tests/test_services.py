"""annotate.services, the runtime's one door into annotate, tested on its own (PostgreSQL)."""
import pytest
from runtime.helpers import make_study

from annotate import services
from annotate.models import Item, Prediction, Study
from tests.factories import perse_study

pytestmark = pytest.mark.django_db


def keys_of(study):
    return {i.item_id: str(i.pk) for i in study.items.all()}


def test_get_study():
    assert services.get_study("nope") is None
    make_study()
    assert services.get_study("rt-study") == services.StudyInfo(
        slug="rt-study", kind="pairwise_alignment", title="Runtime test", n_items=3, items_have_candidates=True,
        aspects=(), config={"allow_tie": False})


def test_get_study_aspects():
    perse_study()  # header aspects: ending, surprise
    info = services.get_study("perdoc-mini")
    assert (info.kind, info.n_items) == ("aspect_pairwise", 4)
    assert [a["key"] for a in info.aspects] == ["ending", "surprise"]
    Study.objects.create(slug="perdoc-default", kind="aspect_pairwise", title="t")
    assert [a["key"] for a in services.get_study("perdoc-default").aspects] == [
        "interestingness", "adaptability", "surprise", "character", "ending"]


def test_items_for_scoring_in_the_order_asked():
    study = make_study()
    keys = keys_of(study)
    got = services.items_for_scoring(study.slug, [keys["i3"], keys["i1"]])
    assert got[0] == services.ScoringItem(
        key=keys["i3"], item_id="i3", input="Describe i3", reference="the cat sat on the mat", meta=None,
        candidates=(services.Candidate("a", "dogs bark"), services.Candidate("b", "the cat sat")))
    assert [i.item_id for i in got] == ["i3", "i1"]
    assert services.study_item_keys(study.slug) == [keys["i1"], keys["i2"], keys["i3"]]
    other = make_study(slug="other-study")
    with pytest.raises(KeyError, match="are not in study 'rt-study'"):
        services.items_for_scoring(study.slug, [keys_of(other)["i1"]])


def test_study_items_carry_the_whole_data():
    study = make_study()
    first = services.study_items(study.slug)[0]
    assert (first.item_id, first.is_gold, first.meta) == ("i1", False, None)
    assert first.data == Item.objects.get(study=study, item_id="i1").data


def test_judgments_for_perse_oldest_first_without_gold():
    study = perse_study()
    assert services.judging_annotators(study.slug) == ["ann1", "ann2"]
    ending = services.judgments_for_perse(study.slug, ["ending"])
    # ann1 judged p0, p1, p2 at T0, T0+1, T0+2; ann2 p0 at T0 (stored after ann1's p0).
    assert [(j.annotator, j.item_data["premise"], j.value) for j in ending] == [
        ("ann1", "Premise 0.", "b0"), ("ann2", "Premise 0.", "a0"), ("ann1", "Premise 1.", "a1"),
        ("ann1", "Premise 2.", "b2")]
    assert ending[0].item_key == str(study.items.get(item_id="p0").pk) and ending[0].question == "ending"
    only = services.judgments_for_perse(study.slug, ["ending", "surprise"], annotators=["ann2"])
    assert [(j.question, j.value) for j in only] == [("ending", "a0"), ("surprise", "a0")]


def test_upsert_predictions_counts_and_refuses_foreign_items():
    study = make_study()
    keys = keys_of(study)
    row = services.PredictionRow
    first = [row(keys["i1"], "m", "a", "0.5"), row(keys["i1"], "m", "b", ""), row(keys["i2"], "m", "a", "1", "ann1")]
    assert services.upsert_predictions(study.slug, first) == services.UpsertCounts(created=3, updated=0, unchanged=0)
    again = [row(keys["i1"], "m", "a", "0.5"), row(keys["i1"], "m", "b", "0.25"), row(keys["i3"], "m", "a", "0")]
    assert services.upsert_predictions(study.slug, again) == services.UpsertCounts(created=1, updated=1, unchanged=1)
    assert Prediction.objects.get(item__item_id="i1", question="b").value == "0.25"
    # Non-personalized rows only (the one for ann1 is not a metric score): i1/a, i1/b, i3/a.
    assert services.prediction_counts(study.slug, ["m"]) == {"total": 3, "empty": 0, "empty_by_evaluator": {}}
    other = make_study(slug="other-study")
    with pytest.raises(ValueError, match="are not in study 'rt-study'"):
        services.upsert_predictions(study.slug, [row(keys_of(other)["i1"], "m", "a", "9")])
    with pytest.raises(ValueError, match="repeat"):
        services.upsert_predictions(study.slug, [row(keys["i1"], "m", "a", "1"), row(keys["i1"], "m", "a", "2")])
    assert Prediction.objects.count() == 4


def test_role_helpers_are_reexported():
    from annotate.api.permissions import IsAdminRole
    from annotate.roles import is_researcher

    assert services.IsAdminRole is IsAdminRole and services.is_researcher is is_researcher
