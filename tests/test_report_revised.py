"""Study reports after the 2026-11-23 statistics revision (issue 13): the report-level items,
each on a hand-worked study, and every demo study's JSON carrying the revised keys."""
import csv
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from annotate.models import Study
from annotate.reports.data import fetch_report_input
from evaluation.report import build_report, render
from tests.factories import judge_every_item, make_judged_study, two

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def report_of(study, **kwargs):
    return build_report(fetch_report_input(study, **kwargs))


def survey_item(doc, users, references, summaries, item_id):
    return {"document": {"id": doc, "text": "apple banana cherry date"}, "users": users,
            "pairs": [{"id": f"{item_id}-ref", "source": "reference", "texts": references},
                      {"id": f"{item_id}-m", "source": "model", "model": "m", "prompt_style": "C-0-shot",
                       "texts": summaries}]}


def test_item01_egises_hj_pools_a_user_pair_listed_in_either_order():
    """Item s1 lists users [a, b], item s2 the same document with [b, a] (texts follow the
    users): the model pair rated 5 on s1 and 1 on s2 pools to mean 3, the reference pair 2
    -> EGISES-HJ 0.2499969 (statistics.md's minimal check). Document d2: items s3 and s4
    show user b different model texts -> one error, those ratings unused, d2 skipped."""
    items = [
        ("s1", survey_item("d", ["a", "b"], ["apple banana", "cherry date"], ["apple", "date"], "s1"), None),
        ("s2", survey_item("d", ["b", "a"], ["cherry date", "apple banana"], ["date", "apple"], "s2"), None),
        ("s3", survey_item("d2", ["a", "b"], ["apple banana", "cherry date"], ["apple", "date"], "s3"), None),
        ("s4", survey_item("d2", ["a", "b"], ["apple banana", "cherry date"], ["apple", "cherry"], "s4"), None),
    ]
    judgments = [("s1", "ann1", "s1-ref", "2", "0|1", 5.0), ("s1", "ann1", "s1-m", "5", "0|1", 5.0),
                 ("s2", "ann2", "s2-m", "1", "1|0", 5.0),
                 ("s3", "ann1", "s3-ref", "2", "0|1", 5.0), ("s3", "ann1", "s3-m", "3", "0|1", 5.0),
                 ("s4", "ann1", "s4-m", "4", "0|1", 5.0)]
    r = report_of(make_judged_study("hj", "similarity_survey", items, judgments, overlap=1))
    assert round(r["egises_hj"]["m"]["C-0-shot"], 7) == 0.2499969
    assert r["egises_hj_skipped"] == 1
    [error] = r["egises_hj_errors"]
    assert error.startswith("document d2, users a / b, model / m / C-0-shot: item s4 shows a different text for b")


def test_item06_no_agreement_entry_below_two_pairable_units():
    """One item judged twice is one pairable unit: no agreement entry (not alpha 0 or '-')."""
    items = [("i1", {"input": "q", "reference": "r", "candidates": two()}, None)]
    judgments = [("i1", "ann1", "choice", "x", "x|y", 3.0), ("i1", "ann2", "choice", "y", "y|x", 3.0)]
    study = make_judged_study("one-unit", "pairwise_alignment", items, judgments)
    report = report_of(study)
    assert report["agreement"] == {}
    inp = fetch_report_input(study)
    assert "Agreement per question" in render(report, inp, "html")


def test_item09_report_rating_values_compare_as_numbers():
    """usefulness "4" and "4.0" on e1 agree; e2 "2" vs "3". Percent (1 + 0)/2 = 0.5;
    Fleiss: pi_4 = .5, pi_2 = pi_3 = .25, P_e = .375, P_a = .5 -> .125/.625 = 0.2."""
    items = [(i, {"input": "q", "reference": "r", "candidates": two(), "explanations": {}}, None) for i in ("e1", "e2")]
    judgments = [("e1", "ann1", "usefulness", "4", "", 3.0), ("e1", "ann2", "usefulness", "4.0", "", 3.0),
                 ("e2", "ann1", "usefulness", "2", "", 3.0), ("e2", "ann2", "usefulness", "3", "", 3.0)]
    a = report_of(make_judged_study("num", "explanation_choice", items, judgments))["agreement"]["usefulness"]
    assert a["percent_agreement"] == 0.5 and a["fleiss_kappa"] == pytest.approx(0.2) and a["fleiss_n_units"] == 2


TIE_ROWS = [  # item, annotator, value
    ("t1", "ann1", "x"), ("t1", "ann2", "x"), ("t1", "ann3", "y"),
    ("t2", "ann1", "y"),
    ("t3", "ann1", "tie"), ("t3", "ann2", "tie"),
    ("t4", "ann1", "x"), ("t4", "ann2", "y"),
    ("t5", "ann1", "y"), ("t5", "ann2", "y"),
]
TIE_SCORES = {"t1": (0.9, 0.1), "t2": (0.1, 0.9), "t3": (0.9, 0.1), "t4": (0.5, 0.4), "t5": (0.2, 0.3)}


def tie_study(slug, **fields):
    items = [(i, {"input": "q", "reference": "r", "candidates": two(),
                  "metric_scores": {"rougeL": {"x": a, "y": b}}}, None) for i, (a, b) in TIE_SCORES.items()]
    judgments = [(i, who, "choice", v, "x|y|tie", 4.0) for i, who, v in TIE_ROWS]
    return make_judged_study(slug, "pairwise_alignment", items, judgments, allow_tie=True, **fields)


def test_item10_min_votes_and_tie_majority():
    """Default min votes 2: t1 x (3 votes), t2 one vote (too few), t3 tie (2), t4 1-1 (no
    majority), t5 y (2). rougeL picks x on t1, y on t2, x on t3, x on t4, y on t5; t3's tie
    majority is left out of n: agree t1, t5 -> 2/2. Win rate over t1, t5."""
    r = report_of(tie_study("ties"))
    assert r["majority"] == {"t1": "x", "t2": None, "t3": "tie", "t4": None, "t5": "y"}
    assert (r["no_majority"], r["too_few_votes"], r["tie_majority"], r["min_votes"]) == (1, 1, 1, 2)
    assert r["majority_votes"] == {"2": 2, "3": 1}
    assert {k: r["alignment"]["rougeL"][k] for k in ("agree", "ties", "n", "alignment")} == {
        "agree": 2, "ties": 0, "n": 2, "alignment": 1.0}
    assert r["win_rate"] == {"x": 0.5, "y": 0.5}


def test_item10_min_votes_from_command_and_study_setting(capsys):
    """--min-votes 1: t2's single vote is a majority (y, agreeing with rougeL) -> n 3.
    Study setting min_votes 3: only t1 qualifies; the other four have too few votes."""
    tie_study("ties-cmd")
    call_command("report", "ties-cmd", "--min-votes", "1")
    r = json.loads(capsys.readouterr().out)
    assert r["majority"]["t2"] == "y" and r["too_few_votes"] == 0 and r["majority_votes"] == {"1": 1, "2": 2, "3": 1}
    assert (r["alignment"]["rougeL"]["agree"], r["alignment"]["rougeL"]["n"]) == (3, 3)
    r = report_of(tie_study("ties-3", config={"min_votes": 3}))
    assert r["majority"] == {"t1": "x", "t2": None, "t3": None, "t4": None, "t5": None}
    assert (r["too_few_votes"], r["no_majority"], r["min_votes"]) == (4, 0, 3)


def test_item12_reviewer_prior_uses_the_order_shown_to_the_annotator():
    """ann1 judged a1 (shown q|p, chose q: first shown), a2 (shown p|q, chose p: first),
    a3 (shown q|p, chose p: second). Each judgment is predicted by the position of the
    earliest other one, mapped to the candidate shown there in the predicted item:
    a1 <- a2 first -> q right; a2 <- a1 first -> p right; a3 <- a1 first -> q wrong: 2/3.
    (Batch positions would give q (pos 1) on a1 -> p wrong, a2 <- pos 1 -> q wrong,
    a3 <- pos 1 -> q wrong: 0/3.)"""
    items = [(i, {"premise": i, "candidates": two("p", "q")}, None) for i in ("a1", "a2", "a3")]
    rows = [("a1", "q|p", "q", 1), ("a2", "p|q", "p", 2), ("a3", "q|p", "p", 3)]
    judgments = [(i, "ann1", "fun", v, shown, 9.0, T0 + timedelta(minutes=t)) for i, shown, v, t in rows]
    r = report_of(make_judged_study("prior", "aspect_pairwise", items, judgments,
                             config={"aspects": [{"key": "fun", "question": "Fun?"}]}))
    prior = r["aspects"]["fun"]["evaluators"]["reviewer_prior"]
    assert {k: prior[k] for k in ("accuracy", "accuracy_strict", "n")} == {
        "accuracy": pytest.approx(2 / 3), "accuracy_strict": pytest.approx(2 / 3), "n": 3}


def three_systems():
    """u1 (s1, s2): s1 s1 s2; u2 (s2, s3): s2 s2 s3; u3 (s1, s3): s1 s1 s1; u4 (s3, s1): s3 s3 s1."""
    plan = {"u1": (("s1", 0.9), ("s2", 0.5), "s1 s1 s2"), "u2": (("s2", 0.6), ("s3", 0.2), "s2 s2 s3"),
            "u3": (("s1", 0.8), ("s3", 0.3), "s1 s1 s1"), "u4": (("s3", 0.4), ("s1", 0.7), "s3 s3 s1")}
    items, judgments = [], []
    for item, ((a, sa), (b, sb), votes) in plan.items():
        items.append((item, {"input": "q", "reference": "r", "candidates": two(a, b),
                             "metric_scores": {"rougeL": {a: sa, b: sb}}}, None))
        judgments += [(item, f"ann{k}", "choice", v, f"{a}|{b}", 3.0) for k, v in enumerate(votes.split(), 1)]
    return make_judged_study("systems", "pairwise_alignment", items, judgments)


def test_item14_system_level_correlations_in_json_csv_and_html():
    """Win rates (items whose majority it is / items with a majority where it competes):
    s1 2/3 (u1, u3 of u1, u3, u4), s2 1/2, s3 1/3. Mean rougeL: s1 .8, s2 .55, s3 .3 ->
    collinear: r = rho = tau = 1, exact p = 2/3! = 1/3; Fisher z needs n >= 10: no interval."""
    study = three_systems()
    inp = fetch_report_input(study)
    r = build_report(inp)
    system = r["correlations_system"]["rougeL"]
    assert (system["n"], system["unit"], system["systems"]) == (3, "system", ["s1", "s2", "s3"])
    for method in ("pearson", "spearman", "kendall"):
        assert {k: system[method][k] for k in ("r", "p_value", "ci95", "n_clusters", "p_method")} == {
            "r": pytest.approx(1.0), "p_value": pytest.approx(1 / 3), "ci95": None, "n_clusters": 3,
            "p_method": "exact permutation (all n! orderings)"}
    assert r["correlations"]["rougeL"]["n"] == 4
    text = render(r, inp, "csv")
    table = list(csv.reader(io.StringIO(text.split("\n\n")[1])))
    assert table[0][:5] == ["correlation_table", "metric", "unit", "n", "coefficient"]
    assert [row[0] for row in table[1:]] == ["correlations"] * 3 + ["correlations_system"] * 3
    html = render(r, inp, "html")
    assert '<section id="correlations">' in html and "System level" in html
    assert "exact permutation p-value" in html and "Fisher z" in html


def test_item14_similarity_correlations_per_pair():
    """jsd predicted per pair (question = pair id) against the pair's mean rating over
    (item, pair) units: (0.1, 5.5), (0.5, 2.0), (0.9, 1.0) -> Spearman -1, exact p 1/3."""
    items = [(f"s{k}", survey_item(f"d{k}", ["a", "b"], ["apple banana", "cherry date"], ["apple", "date"],
                                   f"s{k}"), None) for k in (1, 2, 3)]
    ratings = {"s1": ("5", "6"), "s2": ("2", "2"), "s3": ("1", "1")}
    judgments = [(i, who, f"{i}-m", v, "0|1", 2.0) for i, vs in ratings.items() for who, v in zip(("ann1", "ann2"), vs)]
    predictions = [("s1", "jsd", "", "s1-m", "0.1"), ("s2", "jsd", "", "s2-m", "0.5"), ("s3", "jsd", "", "s3-m", "0.9")]
    r = report_of(make_judged_study("sim-corr", "similarity_survey", items, judgments, predictions, overlap=2))
    c = r["correlations"]["jsd"]
    assert (c["n"], c["unit"]) == (3, "(item, pair)")
    assert c["spearman"]["r"] == pytest.approx(-1.0) and c["spearman"]["p_value"] == pytest.approx(1 / 3)


def test_every_demo_study_reports_the_revised_keys(capsys):
    """manage.py demo, then three annotators judge every item; `report --format json` of
    each demo study shows correlations, pooled similarity agreement, Wilson ci95 /
    ci95_strict and the min-votes counts."""
    call_command("demo", "--force", stdout=io.StringIO())
    for study in Study.objects.all():
        judge_every_item(study)
        call_command("report", study.slug, "--format", "json")
        r = json.loads(capsys.readouterr().out)
        assert r["min_votes"] == 2 and "correlations" in r and r["position_bias"]["unit"] == "screen"
        assert all("krippendorff_alpha_ci95" in a and "fleiss_n_units" in a for a in r["agreement"].values())
        if study.kind in ("pairwise_alignment", "explanation_choice"):
            assert {"too_few_votes", "tie_majority", "majority_votes"} <= set(r)
            metric = "unigram_f1" if study.kind == "pairwise_alignment" else "expert"
            assert r["correlations"][metric]["n"] >= 6
            assert {"ci95", "ci95_strict"} <= set(r["alignment"][metric])
        if study.kind == "similarity_survey":
            assert list(r["agreement"]) == ["similarity"] and r["agreement"]["similarity"]["n_units"] >= 2
            assert r["jsd_preprocessing"][0] == "remove_punctuation" and r["egises_hj_errors"] == []
        if study.kind == "aspect_pairwise":
            assert set(r["aspects_covered"]) >= {"reviewer_prior"}
