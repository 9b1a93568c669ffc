"""Test-retest repeats (studies.md, "Repeats for test-retest"; statistics.md, "Test-retest";
issue 33): the engine re-shows a share of an annotator's own judged items with the order
reversed, records repeat_of, and the repeats count toward nothing but the report's `retest`."""
import json

import pytest
from django.utils import timezone

from annotate.desk.assignment import next_assignment, reclaim_expired
from annotate.desk.display import shown_questions
from annotate.desk.progress import annotator_progress
from annotate.desk.retest import due_first, repeats_due
from annotate.desk.submission import skip, submit
from annotate.kinds import get_kind
from annotate.models import Assignment, Item, Judgment, Participant, Study
from annotate.participants.participation import participant_table
from annotate.reports.data import study_report
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from evaluation.report.kinds import PAIRWISE_ALIGNMENT, SCALAR_RATING, SIMILARITY_SURVEY
from tests.factories import api_client, get_annotator, header, jsonl, make_items, make_study, make_user, pairwise

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]


# --- the reversed order (StudyKind.reversed_order, the default every kind uses) ----------------

def test_reversed_order_swaps_a_pair_and_keeps_tie_last():
    kind = get_kind(PAIRWISE_ALIGNMENT)
    assert kind.reversed_order({"candidates": ["m1", "m2"], "choice": ["m1", "m2", "tie"]}) == {
        "candidates": ["m2", "m1"], "choice": ["m2", "m1", "tie"]}


def test_reversed_order_of_n_outputs_reverses_the_permutation():
    """No N-output kind is on main yet: the default reverses any list, tie kept in place."""
    kind = get_kind(PAIRWISE_ALIGNMENT)
    assert kind.reversed_order({"candidates": ["c", "a", "d", "b"], "best": ["c", "a", "d", "b"]}) == {
        "candidates": ["b", "d", "a", "c"], "best": ["b", "d", "a", "c"]}


def test_reversed_order_of_similarity_pairs_reverses_pairs_and_texts():
    kind = get_kind(SIMILARITY_SURVEY)
    first = {"pair_order": ["p2", "p0", "p1"], "p0": ["0", "1"], "p1": ["1", "0"], "p2": ["0", "1"]}
    assert kind.reversed_order(first) == {"pair_order": ["p1", "p0", "p2"], "p0": ["1", "0"], "p1": ["0", "1"],
                                          "p2": ["1", "0"]}
    assert get_kind(SCALAR_RATING).reversed_order({}) == {}


def test_repeats_due_is_floor_of_share_times_judged_plus_phase():
    assert [repeats_due(0.1, n, 0.0) for n in (0, 9, 10, 19, 20)] == [0, 0, 1, 1, 2]
    assert [repeats_due(0.1, n, 0.95) for n in (0, 1, 10, 11)] == [0, 1, 1, 2]


# --- the engine ------------------------------------------------------------------------------

def first_option(assignment):
    """The first shown option of every question (a position-biased annotator), real ids."""
    return {q["id"]: q["options"][0] if "options" in q else q["scale"][0]
            for q in shown_questions(assignment.study, assignment.item.data, assignment.shown_order)}


def run_annotator(study, user, answer=first_option):
    """Asks for items and answers them until none is left; the assignments in order."""
    done = []
    while (assignment := next_assignment(study, user)) is not None:
        submit(assignment.pk, user, answer(assignment), seconds=3)
        done.append(assignment)
    return done


def until_repeat(study, user):
    """Answers first showings until the engine serves a repeat: (its first, the repeat)."""
    while (assignment := next_assignment(study, user)).repeat_of_id is None:
        submit(assignment.pk, user, first_option(assignment), seconds=3)
    return Assignment.objects.get(pk=assignment.repeat_of_id), assignment


def test_engine_repeats_the_share_reversed_after_the_gap():
    """10 items, share 0.5, after 2: exactly floor(0.5 * 10 + u) = 5 repeats (u in [0, 1)),
    each of a different judged item, at least 2 answers after its first showing, its A/B
    swapped, new tokens, repeat_of on the assignment and on the judgment; no slot, no
    completion, no progress."""
    study = make_study(overlap=1, config={"retest": {"share": 0.5, "after": 2}})
    make_items(study, 10)
    user = make_user("ann")
    done = run_annotator(study, user)
    repeats = [a for a in done if a.repeat_of_id]
    assert (len(done), len(repeats)) == (15, 5)
    order = [a.pk for a in done]
    for repeat in repeats:
        first = Assignment.objects.get(pk=repeat.repeat_of_id)
        assert first.repeat_of_id is None and first.item_id == repeat.item_id
        assert order.index(repeat.pk) - order.index(first.pk) - 1 >= 2  # `after` other answers between
        assert repeat.shown_order["candidates"] == first.shown_order["candidates"][::-1]
        assert repeat.shown_order["choice"] == first.shown_order["choice"][::-1]  # no tie in this study
        assert set(repeat.blind["options"]).isdisjoint(first.blind["options"])  # new tokens
        assert repeat.blind["item"] != first.blind["item"]
        again = Judgment.objects.get(assignment=repeat)
        original = Judgment.objects.get(assignment=first)
        assert again.repeat_of_id == original.pk
        # the first-shown option is chosen both times: the swap makes every repeat a flip
        assert again.value != original.value
    assert len({r.item_id for r in repeats}) == 5
    assert set(Item.objects.filter(study=study).values_list("n_assigned", "n_completed")) == {(1, 1)}
    assert annotator_progress(study, user) == {"done": 10, "assigned": 10, "total": 10, "remaining": 0}
    assert Judgment.objects.filter(study=study, repeat_of__isnull=True).count() == 10


def test_repeats_are_reproducible():
    """The schedule is a function of the study, the annotator and their answers."""
    study = make_study(overlap=1, config={"retest": {"share": 0.3, "after": 1}})
    make_items(study, 8)
    user = make_user("ann")
    for _ in range(6):
        assignment = next_assignment(study, user)
        if assignment.repeat_of_id is None:
            submit(assignment.pk, user, first_option(assignment), seconds=3)
        else:
            break
    if assignment.repeat_of_id is None:
        pytest.skip("no repeat in the first six items")  # pragma: no cover (seeded: does not happen)
    Assignment.objects.filter(pk=assignment.pk).delete()
    assert due_first(study, user).pk == assignment.repeat_of_id  # asked again: the same item


def test_similarity_repeat_reverses_pairs_and_texts():
    study = make_study(SIMILARITY_SURVEY, overlap=1, config={"retest": {"share": 0.5, "after": 0}})
    make_items(study, 2)
    user = make_user("sim")
    done = run_annotator(study, user)
    repeats = [a for a in done if a.repeat_of_id]
    assert len(repeats) == 1
    first = Assignment.objects.get(pk=repeats[0].repeat_of_id)
    assert repeats[0].shown_order == get_kind(SIMILARITY_SURVEY).reversed_order(first.shown_order)
    assert repeats[0].shown_order["pair_order"] == first.shown_order["pair_order"][::-1]
    pairs = first.shown_order["pair_order"]
    assert all(repeats[0].shown_order[p] == first.shown_order[p][::-1] for p in pairs)
    firsts = dict(Judgment.objects.filter(assignment=first).values_list("question", "pk"))
    assert {j.question: j.repeat_of_id for j in Judgment.objects.filter(assignment=repeats[0])} == firsts
    # ratings: Krippendorff's alpha (interval) between first and repeat, one pair per rated text pair
    retest = study_report(study)[0]["retest"]
    assert (retest["n_pairs"], retest["agreement"]["statistic"], retest["agreement"]["level"]) == (
        len(pairs), "krippendorff_alpha", "interval")
    # the position-biased annotator rates every pair the scale's minimum both times: no flip
    assert retest["flip_rate"] == 0.0


def test_double_submit_of_a_repeat_stores_once():
    study = make_study(overlap=1, config={"retest": {"share": 0.5, "after": 0}})
    make_items(study, 2)
    user = make_user("ann")
    first, repeat = until_repeat(study, user)
    _, stored, created = submit(repeat.pk, user, first_option(repeat), seconds=3)
    _, again, created_again = submit(repeat.pk, user, {"choice": "m1"}, seconds=3)
    assert (created, created_again) == (True, False)
    assert len(again) == len(stored) == 1 and again[0].value == stored[0].value  # the first submit stands
    assert again[0].repeat_of_id == Judgment.objects.get(assignment=first).pk
    assert Judgment.objects.filter(item_id=first.item_id, annotator=user).count() == 2
    assert Item.objects.get(pk=first.item_id).n_completed == 1


def test_skipped_or_expired_repeat_gives_back_no_slot():
    study = make_study(overlap=1, config={"retest": {"share": 0.5, "after": 0}})
    make_items(study, 3)
    user = make_user("ann")
    first, repeat = until_repeat(study, user)
    _, skipped, _ = skip(repeat.pk, user, "other")
    assert skipped.repeat_of_id == Judgment.objects.get(assignment=first).pk
    assert Item.objects.get(pk=first.item_id).n_assigned == 1
    # another annotator's repeat expires: reclaimed without touching the item's slots
    other = make_user("bob")
    study.annotations_per_item = 3
    study.save()
    mine, theirs = until_repeat(study, other)
    before = Item.objects.get(pk=mine.item_id).n_assigned
    Assignment.objects.filter(pk=theirs.pk).update(expires_at=timezone.now())
    assert reclaim_expired(study) == 1
    assert Item.objects.get(pk=mine.item_id).n_assigned == before


# --- participants: a repeat is never a paid place ------------------------------------------------

def test_participant_quota_counts_first_showings_only(client):
    """Quota 4, share 0.5 after 1: the participant answers 4 first showings (paid) plus their
    repeats (extra, unpaid), then gets the completion code; every count says 4."""
    study = make_study(overlap=1, completion_code="CODE42", max_items_per_participant=4,
                       recruitment={"platform": "prolific"}, config={"retest": {"share": 0.5, "after": 1}})
    make_items(study, 8)
    from tests.test_participants import answer_all, participant_client

    browser = participant_client(study.slug)
    answered = answer_all(browser, study.slug)
    participant = Participant.objects.get()
    repeats = Assignment.objects.filter(study=study, repeat_of__isnull=False).count()
    assert repeats >= 1 and answered == 4 + repeats
    assert Assignment.objects.filter(study=study, repeat_of__isnull=True, completed_at__isnull=False).count() == 4
    assert annotator_progress(study, participant.user)["done"] == 4
    page = browser.get(f"/p/{study.slug}/go/")
    assert page.status_code == 200 and b"CODE42" in page.content
    assert Participant.objects.get().status == "completed"
    header_row, rows = participant_table(study)
    assert rows[0][header_row.index("items")] == 4


# --- the report ----------------------------------------------------------------------------------

def hand_worked_study(max_flip_rate=None):
    """One annotator, 6 items, first and repeat answers (m1,m1) (m1,m1) (m1,m2) (m2,m2)
    (m2,m2) (m2,m1); a second annotator judges every item once (no repeats)."""
    quality = {"max_flip_rate": max_flip_rate} if max_flip_rate is not None else {}
    study = make_study(overlap=2, config={"retest": {"share": 0.5, "after": 1}}, quality=quality)
    items = make_items(study, 6)
    ann, bob = get_annotator("ann"), get_annotator("bob")
    pairs = [("m1", "m1"), ("m1", "m1"), ("m1", "m2"), ("m2", "m2"), ("m2", "m2"), ("m2", "m1")]
    for item, (first, again) in zip(items, pairs):
        original = Judgment.objects.create(study=study, item=item, annotator=ann, question="choice", value=first,
                                           shown_order="m1|m2|tie")
        Judgment.objects.create(study=study, item=item, annotator=ann, question="choice", value=again,
                                shown_order="m2|m1|tie", repeat_of=original)
        Judgment.objects.create(study=study, item=item, annotator=bob, question="choice", value="m1",
                                shown_order="m1|m2|tie")
    return study


def test_hand_worked_flip_rate_and_kappa():
    """flip rate 2/6; kappa: p_o = 4/6, marginals 3/3 both times, p_e = 1/2, kappa = 1/3."""
    report, _ = study_report(hand_worked_study())
    retest = report["retest"]
    assert (retest["n_pairs"], retest["n_annotators"]) == (6, 1)
    assert retest["flip_rate"] == pytest.approx(1 / 3)
    assert retest["agreement"]["statistic"] == "cohen_kappa"
    assert retest["agreement"]["value"] == pytest.approx(1 / 3)
    assert retest["flip_rate_ci95"] is None and retest["agreement"]["ci95"] is None  # 1 annotator: no interval
    assert retest["annotators"]["ann"]["n_pairs"] == 6
    assert retest["annotators"]["ann"]["flip_rate"] == pytest.approx(1 / 3)
    assert retest["annotators"]["ann"]["agreement"] == pytest.approx(1 / 3)
    assert retest["annotators"]["ann"]["flag"] == ""
    assert report["n_judgments"] == 12  # first answers only


def test_report_with_repeats_equals_report_without_but_retest():
    study = hand_worked_study()
    with_repeats = {k: v for k, v in study_report(study)[0].items() if k != "retest"}
    csv_with = study_report(study, "csv")[1]
    html = study_report(study, "html")[1]
    assert '<section id="retest"><h2>Test-retest</h2>' in html and "Cohen&#x27;s kappa" in html
    Judgment.objects.filter(repeat_of__isnull=False).delete()
    without = study_report(study)[0]
    assert without["retest"]["n_pairs"] == 0 and without["retest"]["reason"] == "no repeats"
    assert with_repeats == {k: v for k, v in without.items() if k != "retest"}
    csv_without = study_report(study, "csv")[1]
    retest_at = csv_with.index("retest_table")
    assert csv_with[:retest_at] == csv_without[:csv_without.index("retest_table")]
    assert "\nretest,,*,6,0.333" in csv_with and "\nretest,,ann,6,0.333" in csv_with


def test_flip_rate_above_the_threshold_is_a_quality_flag():
    study = hand_worked_study(max_flip_rate=0.3)
    report, _ = study_report(study)
    assert report["retest"]["annotators"]["ann"]["flag"] == "flip rate 0.33 > 0.3"
    assert report["excluded_annotators"] == {"ann": "flip rate 0.33 > 0.3"}
    assert report["n_judgments"] == 6  # bob's only
    assert study_report(study, include_flagged=True)[0]["n_judgments"] == 12


# --- the header ------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, reason", [
    ({"share": 0, "after": 5}, "line 1: 'retest': retest.share must be above 0 and at most 0.5, got 0"),
    ({"share": 0.6, "after": 5}, "line 1: 'retest': retest.share must be above 0 and at most 0.5, got 0.6"),
    ("x", "line 1: 'retest': retest must be an object such as {\"share\": 0.1, \"after\": 5}"),
    ({"share": 0.1, "after": -1}, "line 1: 'retest': retest.after must be a whole number of items, 0 or more, got -1"),
])
def test_bad_retest_header_is_refused_whole(value, reason):
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(jsonl(header("rt", PAIRWISE_ALIGNMENT, retest=value), pairwise("a")))
    assert caught.value.errors == [reason]
    assert (Study.objects.count(), Item.objects.count()) == (0, 0)


def test_retest_header_is_stored_and_api_refuses_bad_ones(admin_user_):
    import_batch_bytes(jsonl(header("rt", PAIRWISE_ALIGNMENT, retest={"share": 0.1},
                                    quality={"max_flip_rate": 0.25}), pairwise("a")))
    study = Study.objects.get()
    assert (study.config["retest"], study.quality) == ({"share": 0.1, "after": 5}, {"max_flip_rate": 0.25})
    client = api_client(admin_user_)
    bad = client.post("/api/studies/", {"slug": "rt2", "kind": PAIRWISE_ALIGNMENT, "title": "T",
                                        "retest": {"share": 0.6}}, format="json")
    assert bad.status_code == 400 and bad.json() == {
        "errors": ["line 1: 'retest': retest.share must be above 0 and at most 0.5, got 0.6"]}
    good = client.post("/api/studies/", {"slug": "rt2", "kind": PAIRWISE_ALIGNMENT, "title": "T",
                                         "retest": {"share": 0.2, "after": 3}}, format="json")
    assert good.status_code == 201 and json.loads(good.content)["config"]["retest"] == {"share": 0.2, "after": 3}


def test_bad_max_flip_rate_is_refused():
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(jsonl(header("rt", PAIRWISE_ALIGNMENT, quality={"max_flip_rate": 1.5}), pairwise("a")))
    assert caught.value.errors == ["line 1: 'quality.max_flip_rate' must be a number in [0, 1]"]
    assert Study.objects.count() == 0


# --- exports: repeats included, marked ------------------------------------------------------------

def engine_study_with_repeats():
    study = make_study(overlap=1, config={"retest": {"share": 0.5, "after": 1}})
    make_items(study, 6)
    run_annotator(study, make_user("ann"))
    assert Judgment.objects.filter(repeat_of__isnull=False).count() == 3  # floor(0.5 * 6 + u)
    return study


def pairs_of(study):
    """(item, question, first value, repeat value) of every repeat, sorted."""
    return sorted(Judgment.objects.filter(study=study, repeat_of__isnull=False).values_list(
        "item__item_id", "question", "repeat_of__value", "value"))


def test_judgments_export_marks_repeats_and_reads_them_back():
    import io

    from annotate.studies.judgments_csv import write_judgments
    from annotate.studies.judgments_io import export_judgment_rows, import_judgments

    study = engine_study_with_repeats()
    before = pairs_of(study)
    out = io.StringIO()
    write_judgments(export_judgment_rows(study), out)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith(",comment,platform,study_id,session_id,repeat")
    assert sum(line.endswith(",1") for line in lines[1:]) == 3 and len(lines) == 1 + 9
    data = out.getvalue().encode()
    assert import_judgments(io.BytesIO(data))["skipped"] == 9  # idempotent: nothing new
    Judgment.objects.filter(study=study).delete()
    assert import_judgments(io.BytesIO(data))["created"] == 9
    assert pairs_of(study) == before
    assert Judgment.objects.filter(study=study, repeat_of__isnull=True).count() == 6
    assert set(Item.objects.filter(study=study).values_list("n_completed", flat=True)) == {1}


def test_a_repeat_without_its_first_answer_is_refused():
    import io

    from annotate.studies.judgments_io import import_judgments

    study = make_study(overlap=1)
    make_items(study, 1)
    text = ("study,item_id,annotator,question,value,shown_order,seconds,submitted_at,repeat\n"
            f"{study.slug},item-0000,ann,choice,m1,,,,1\n")
    with pytest.raises(BatchInvalid) as caught:
        import_judgments(io.BytesIO(text.encode()))
    assert caught.value.errors == [
        "line 2: a repeat needs the first answer of ann to 'choice' on 'item-0000' (stored or in the file)"]
    assert Judgment.objects.count() == 0


def test_backup_restores_repeats():
    import io

    from annotate.studies.backup import import_study, write_study

    study = engine_study_with_repeats()
    before = pairs_of(study)
    stream = io.StringIO()
    write_study(study, stream)
    restored = import_study(io.StringIO(stream.getvalue().replace('"slug": "pairwise-alignment"',
                                                                  '"slug": "restored"')))
    assert restored.slug == "restored" and pairs_of(restored) == before
    assert Assignment.objects.filter(study=restored, repeat_of__isnull=False).count() == 3


def test_release_tables_mark_repeats():
    from annotate.studies.release import release_tables

    study = engine_study_with_repeats()
    rows = release_tables(study)["judgments"]
    assert sum(row["repeat"] for row in rows) == 3 and len(rows) == 9


def test_choices_and_ratings_of_one_study_are_reported_apart():
    """explanation_choice asks a choice (nominal: `retest`) and a usefulness rating
    (interval: `retest.ratings`); the engine's position-biased annotator flips every choice
    (the swap) and repeats every rating (the scale minimum)."""
    from evaluation.report.kinds import EXPLANATION_CHOICE

    study = make_study(EXPLANATION_CHOICE, overlap=1, config={"retest": {"share": 0.5, "after": 0},
                                                              "usefulness_scale": [1, 5]})
    make_items(study, 2)
    run_annotator(study, make_user("ann"))
    retest = study_report(study)[0]["retest"]
    assert (retest["n_pairs"], retest["flip_rate"], retest["agreement"]["statistic"]) == (1, 1.0, "cohen_kappa")
    ratings = retest["ratings"]
    assert (ratings["n_pairs"], ratings["flip_rate"], ratings["agreement"]["statistic"]) == (
        1, 0.0, "krippendorff_alpha")


def test_datasheet_has_the_retest_table():
    from annotate.reports.datasheet import datasheet, render_datasheet

    sheet = datasheet(hand_worked_study())
    table = next(t for t in sheet["results"] if t["key"] == "retest")
    assert table["rows"][0][:4] == ["all", "*", 6, pytest.approx(1 / 3)]
    text = render_datasheet(sheet, "md")
    assert "## Test-retest (first answer vs its repeat, order reversed)" in text and "| all | * | 6 | 0.333 |" in text
    assert "\\begin{tabular}" in render_datasheet(sheet, "tex")
