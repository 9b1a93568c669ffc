"""best_worst (issue 33): exact counting scores worked on paper, balanced tuples from the
engine, and best == worst (or another screen's tokens, or a bad tuple_size) refused at every
door with nothing stored."""
import io
import json
from collections import Counter
from itertools import combinations

import pytest
from django.core.management import call_command
from django.test import Client

from annotate.desk.assignment import next_assignment
from annotate.desk.submission import SubmissionError, edit
from annotate.kinds import get_kind
from annotate.models import Assignment, Judgment, Study
from annotate.reports.data import study_report
from annotate.studies.answers import OPTION_REFUSED
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import import_judgments
from evaluation.report.kinds import BEST_WORST
from tests.factories import api_client, blinding, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
HX = {"HTTP_HX_REQUEST": "true"}
SAME = "best and worst must be two different outputs"
JUDGMENT_HEADER = "study,item_id,annotator,question,value,shown_order,seconds,submitted_at\n"


def batch(slug, n_items=6, systems=("A", "B", "C", "D"), **header):
    head = {"study": {"slug": slug, "kind": BEST_WORST, "title": "BWS", "annotations_per_item": 2, "gold_rate": 0.0,
                      **header}}
    items = [{"item_id": f"i{k}", "input": f"Request {k}.", "reference": f"My text {k}.",
              "candidates": [{"id": s, "text": f"Output of {s} for {k}."} for s in systems],
              "metric_scores": {"m": {s: float(n) for n, s in enumerate(reversed(systems))}}}
             for k in range(1, n_items + 1)]
    return ("\n".join(json.dumps(o) for o in [head, *items]) + "\n").encode()


# (item, annotator, best, worst), every screen showing A|B|C|D.
HAND = [("i1", "ann1", "A", "D"), ("i2", "ann1", "A", "C"), ("i3", "ann1", "B", "D"),
        ("i4", "ann2", "A", "B"), ("i5", "ann2", "C", "D"), ("i6", "ann2", "B", "A")]


def judgments_csv(slug, screens, shown="A|B|C|D"):
    lines = [JUDGMENT_HEADER]
    for n, (item, annotator, best, worst) in enumerate(screens):
        when = f"2026-12-01T10:{n:02d}:00+00:00"
        lines += [f"{slug},{item},{annotator},best,{best},{shown},5,{when}\n",
                  f"{slug},{item},{annotator},worst,{worst},{shown},5,{when}\n"]
    return "".join(lines).encode()


def test_hand_worked_bws_counts_on_four_systems_and_six_items():
    """Six screens of A, B, C, D (all four shown on each; every system shown 6 times):

        item  annotator  best  worst
        i1    ann1       A     D
        i2    ann1       A     C
        i3    ann1       B     D
        i4    ann2       A     B
        i5    ann2       C     D
        i6    ann2       B     A

    A: best 3 (i1, i2, i4), worst 1 (i6)  -> (3 - 1) / 6 = 1/3
    B: best 2 (i3, i6),     worst 1 (i4)  -> (2 - 1) / 6 = 1/6
    C: best 1 (i5),         worst 1 (i2)  -> 0
    D: best 0,              worst 3 (i1, i3, i5) -> -3/6 = -1/2
    (6 bests and 6 worsts in all.)

    Split-half with two annotators: every split puts one in each half (the same r each time).
    ann1 (i1-i3, each system shown 3 times): A 2/3, B 1/3, C -1/3 (worst on i2), D -2/3;
    ann2 (i4-i6): A 0, B 0, C 1/3, D -1/3. Both means are 0:
    sum xy = (-1/3)(1/3) + (-2/3)(-1/3) = 1/9; sum x^2 = 10/9; sum y^2 = 2/9;
    r = (1/9) / sqrt(20/81) = 1 / sqrt(20); Spearman-Brown 2r / (1 + r) = 0.36549.

    Implied pairs (5 a screen: best > each of the 3 others, each of the 2 middle ones > worst):
    A is best on i1, i2, i4 (3 wins of 3 each), middle on i3, i5 (beats the worst, loses to the
    best: 1 of 2 each), worst on i6 (0 of 3): 11 wins of 16. D is worst on i1, i3, i5 (0 of 3)
    and middle on i2, i4, i6 (1 of 2): 3 wins of 15."""
    import_batch_bytes(batch("bws-hand"))
    assert import_judgments(io.BytesIO(judgments_csv("bws-hand", HAND)))["created"] == 12
    report, _ = study_report(Study.objects.get(slug="bws-hand"))
    bws = report["bws"]
    assert {s: (bws[s]["n_shown"], bws[s]["n_best"], bws[s]["n_worst"]) for s in "ABCD"} == {
        "A": (6, 3, 1), "B": (6, 2, 1), "C": (6, 1, 1), "D": (6, 0, 3)}
    assert bws["A"]["bws_score"] == pytest.approx(1 / 3, abs=1e-12)
    assert bws["B"]["bws_score"] == pytest.approx(1 / 6, abs=1e-12)
    assert bws["C"]["bws_score"] == 0.0
    assert bws["D"]["bws_score"] == -0.5
    assert all(bws[s]["n_clusters"] == 6 and bws[s]["ci95"][0] <= bws[s]["bws_score"] <= bws[s]["ci95"][1]
               for s in "ABCD")  # six items: an item-bootstrap interval for every system
    r = 1 / 20 ** 0.5
    assert report["split_half"]["value"] == pytest.approx(2 * r / (1 + r), abs=1e-12)
    assert (report["split_half"]["n"], report["split_half"]["n_splits"]) == (2, 100)
    assert report["n_screens"] == 6 and report["n_unpaired"] == 0
    human = report["systems"]
    assert (human["A"]["human"]["wins"], human["A"]["human"]["n"]) == (11, 16)
    assert (human["D"]["human"]["wins"], human["D"]["human"]["n"]) == (3, 15)
    assert [s for s in sorted(report["ranking"], key=lambda s: report["ranking"][s]["rank"])] == ["A", "B", "C", "D"]
    assert set(report["ranking"]["A"]) >= {"strength", "ci95", "rank", "rank_ci95"}
    # metric m scores D 0 ... A 3: its system means order the systems as the bws scores do
    assert report["correlations_system"]["m"]["kendall"]["r"] == 1.0
    # item level: the 24 (item, system) units of 6 items
    assert (report["correlations"]["m"]["n"], report["correlations"]["m"]["n_clusters"]) == (24, 6)
    _, html = study_report(Study.objects.get(slug="bws-hand"), "html")
    assert 'id="bws-scores"' in html and "n = 6 screens" in html
    _, text = study_report(Study.objects.get(slug="bws-hand"), "csv")
    assert "systems,,A,bws_score,0.3333333333333333," in text


def test_tuples_of_seven_systems_cover_every_pair_once_in_seven_screens():
    """tuple_size 3 on items of 7 candidates: the design is the Fano plane (7 tuples, every
    pair once); the engine shows the tuple the study has shown least, so 7 screens (one
    annotator, 7 items) show every pair of systems together exactly once."""
    systems = tuple(f"s{k}" for k in range(7))
    import_batch_bytes(batch("bws-fano", n_items=7, systems=systems, tuple_size=3))
    study, user = Study.objects.get(slug="bws-fano"), make_user("fano")
    pairs, orders = Counter(), []
    for _ in range(7):
        assignment = next_assignment(study, user)
        shown = assignment.shown_order["candidates"]
        assert len(shown) == 3 and assignment.shown_order["best"] == shown == assignment.shown_order["worst"]
        orders.append(shown)
        pairs.update(combinations(sorted(shown), 2))
        Assignment.objects.filter(pk=assignment.pk).update(completed_at=assignment.created_at)
    assert len(pairs) == 21 and set(pairs.values()) == {1}
    assert get_kind(BEST_WORST).allocation(study.config, 7).startswith("tuples of 3 outputs from a balanced incomplete")
    body = api_client(make_user("fano2")).post("/api/studies/bws-fano/assignments/next/").json()
    assert [len(q["options"]) for q in body["questions"]] == [3, 3]  # the annotator is asked about the tuple only
    assert len(body["item"]["candidates"]) == 3


def open_study(slug="bws-doors", **header):
    import_batch_bytes(batch(slug, **header))
    return Study.objects.get(slug=slug)


def test_best_equal_worst_is_refused_at_the_page_the_api_and_an_edit():
    study = open_study()
    user = make_user("door-ann")
    client = Client()
    client.force_login(user)
    client.post(f"/annotate/{study.slug}/next/", **HX)
    assignment = Assignment.objects.get(annotator=user, completed_at=None)
    t = blinding(assignment.pk)
    first, second = [t.option(c) for c in assignment.shown_order["candidates"][:2]]
    page = client.post(f"/annotate/{study.slug}/items/{assignment.pk}/submit/",
                       {"q:best": first, "q:worst": first, "seconds": "3"}, **HX)
    assert page.status_code == 200 and SAME in page.content.decode()
    assert "Please correct the answers marked below." in page.content.decode()
    assert Judgment.objects.count() == 0
    api = api_client(user)
    refused = api.post(f"/api/assignments/{assignment.pk}/judgments/", {"best": first, "worst": first},
                       format="json")
    assert (refused.status_code, refused.json()) == (400, {"errors": {"worst": SAME}})
    assert Judgment.objects.count() == 0 and Assignment.objects.get(pk=assignment.pk).completed_at is None
    saved = api.post(f"/api/assignments/{assignment.pk}/judgments/", {"best": first, "worst": second}, format="json")
    assert saved.status_code == 201
    with pytest.raises(SubmissionError) as caught:  # the edit makes the worst the stored best
        edit(assignment.pk, user, {"worst": first}, blinded=True)
    assert caught.value.errors == {"worst": SAME}
    real = assignment.shown_order["candidates"]
    assert dict(Judgment.objects.values_list("question", "value")) == {"best": real[0], "worst": real[1]}


def test_tokens_of_another_screen_are_refused():
    study = open_study()
    one, two = make_user("scr-1"), make_user("scr-2")
    a1, a2 = next_assignment(study, one), next_assignment(study, two)
    theirs = [blinding(a2.pk).option(c) for c in a2.shown_order["candidates"][:2]]
    refused = api_client(one).post(f"/api/assignments/{a1.pk}/judgments/", {"best": theirs[0], "worst": theirs[1]},
                                   format="json")
    assert (refused.status_code, refused.json()) == (400, {"errors": {"best": OPTION_REFUSED, "worst": OPTION_REFUSED}})
    assert Judgment.objects.count() == 0


def test_import_refuses_best_equal_worst_and_mixed_tuples_with_line_numbers():
    open_study("bws-import")
    bad = judgments_csv("bws-import", [("i1", "ann1", "A", "A"), ("i2", "ann1", "A", "B")])
    with pytest.raises(BatchInvalid) as caught:
        import_judgments(io.BytesIO(bad))
    assert caught.value.errors == [f"line 3: worst: {SAME}"]
    good = judgments_csv("bws-import", [("i1", "ann1", "A", "B")])
    import_judgments(io.BytesIO(good))
    later = (JUDGMENT_HEADER + "bws-import,i1,ann1,worst,A,A|B|C|D,5,2026-12-01T10:00:00+00:00\n").encode()
    with pytest.raises(BatchInvalid) as caught:  # the stored best is A: a worst of A is refused too
        import_judgments(io.BytesIO(later))
    assert caught.value.errors == ["line 2: ann1 already answered 'worst' on 'i1' with 'B', not 'A'",
                                   f"line 2: worst: {SAME}"]
    assert Judgment.objects.count() == 2


def test_import_of_tuples_names_the_shown_ones():
    systems = ("A", "B", "C", "D", "E", "F")
    import_batch_bytes(batch("bws-tuples", n_items=1, systems=systems, tuple_size=4))
    mixed = (JUDGMENT_HEADER + "bws-tuples,i1,ann1,best,A,A|B|C|D,5,\n"
                               "bws-tuples,i1,ann1,worst,E,A|B|C|E,5,\n").encode()
    with pytest.raises(BatchInvalid) as caught:
        import_judgments(io.BytesIO(mixed))
    assert caught.value.errors == [
        "line 2: ann1's rows on 'i1' name different shown candidates (one screen showed them: give them the same "
        "shown_order)",
        "line 3: ann1's rows on 'i1' name different shown candidates (one screen showed them: give them the same "
        "shown_order)"]
    outside = (JUDGMENT_HEADER + "bws-tuples,i1,ann1,best,F,A|B|C|D,5,\n").encode()
    with pytest.raises(BatchInvalid) as caught:
        import_judgments(io.BytesIO(outside))
    assert caught.value.errors == ["line 2: value 'F' is not one of the candidates shown (A|B|C|D)"]
    three = (JUDGMENT_HEADER + "bws-tuples,i1,ann1,best,A,A|B|C,5,\n").encode()
    with pytest.raises(BatchInvalid) as caught:
        import_judgments(io.BytesIO(three))
    assert caught.value.errors == ["line 2: shown_order must name the 4 candidates shown (of A|B|C|D|E|F; then 'tie' "
                                   "where the study allows it), got 'A|B|C'"]
    assert Judgment.objects.count() == 0
    ok = (JUDGMENT_HEADER + "bws-tuples,i1,ann1,best,A,D|A|E|C,5,\nbws-tuples,i1,ann1,worst,E,D|A|E|C,5,\n").encode()
    assert import_judgments(io.BytesIO(ok))["created"] == 2
    assert Assignment.objects.get().shown_order["candidates"] == ["D", "A", "E", "C"]


@pytest.mark.parametrize("size", [2, 7, "4", 4.0, True])
def test_tuple_size_out_of_range_is_refused(size):
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(batch("bws-size", tuple_size=size))
    assert caught.value.errors == [f"line 1: tuple_size must be a whole number from 3 to 6, got {size!r}"]
    assert not Study.objects.filter(slug="bws-size").exists()


def test_gold_best_equal_worst_and_gold_on_tuples_are_refused():
    head = {"study": {"slug": "bws-gold", "kind": BEST_WORST, "title": "g", "annotations_per_item": 1}}
    item = {"item_id": "g1", "input": "x", "candidates": [{"id": s, "text": s} for s in "ABCD"],
            "gold": {"best": "A", "worst": "A"}}
    wide = {**item, "item_id": "g2", "candidates": [{"id": s, "text": s} for s in "ABCDE"],
            "gold": {"best": "A", "worst": "B"}}
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(("\n".join(json.dumps(o) for o in [head, item, wide]) + "\n").encode())
    assert caught.value.errors == [
        f"line 2: 'gold' for 'worst': {SAME}",
        "line 3: 'gold' needs an item whose candidates are all shown on one screen (this one has 5; a screen shows 4)"]


def test_demo_simulated_loads_the_best_worst_judgments_and_its_report_shows_them():
    call_command("demo", "--force", "--simulated", stdout=io.StringIO())
    study = Study.objects.get(slug="demo-best-worst")
    assert study.judgments.count() == 12 * 6 * 2
    report, _ = study_report(study)
    assert report["n_screens"] == 72 and len(report["bws"]) == 6
    order = sorted(report["bws"], key=lambda s: -report["bws"][s]["bws_score"])
    assert order[0] == "profile-rag" and order[-1] in ("generic-lm", "random-profile")
    assert all(report["bws"][s]["ci95"] is not None for s in report["bws"])
    assert report["ranking"] is not None and report["split_half"]["value"] is not None
    call_command("demo", "--force", "--simulated", stdout=io.StringIO())  # twice: nothing more
    assert study.judgments.count() == 144
