"""Issue 31 item 1 (annotation and report side): a candidate standing for several systems
whose outputs were identical (`also_systems`, docs/formats.md). The importer takes and
checks it, the annotator is shown it once and never sees a system name, and the report
credits every system it stands for (judgments, majority, metric means, ranking) and
counts the identical pairs. The numbers are worked by hand below."""
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotate.models import Item, Judgment, Study
from annotate.reports.data import study_report
from annotate.studies.importing import import_batch_bytes
from evaluation.report.kinds import ASPECT_PAIRWISE, PAIRWISE_ALIGNMENT
from tests.factories import (
    add_judgments,
    api_client,
    aspects,
    blinding,
    complete_assignments,
    header,
    jsonl,
    make_user,
    write,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]


def item(item_id, candidates, scores):
    return {"item_id": item_id, "input": f"Request {item_id}.", "reference": f"The user's text {item_id}.",
            "candidates": candidates, "metric_scores": {"rouge1": scores}}


# i1: systems b and c wrote the same text: one candidate b standing for c. i2: three outputs.
BATCH = [header("merged", PAIRWISE_ALIGNMENT),
         item("i1", [{"id": "a", "text": "Output one."}, {"id": "b", "text": "Output two.", "also_systems": ["c"]}],
              {"a": 0.2, "b": 0.6}),
         item("i2", [{"id": "a", "text": "Output one."}, {"id": "b", "text": "Output two."},
                     {"id": "c", "text": "Output three."}], {"a": 0.1, "b": 0.3, "c": 0.5})]
# (item, annotator, shown order, choice): i1 has two candidates, i2 one judgment per pair.
JUDGMENTS = [("i1", "u1", "a|b", "b"), ("i1", "u2", "b|a", "b"), ("i1", "u3", "a|b", "a"),
             ("i2", "u1", "a|b", "a"), ("i2", "u2", "b|c", "c"), ("i2", "u3", "a|c", "c")]


def judged_study():
    import_batch_bytes(jsonl(*BATCH))
    study = Study.objects.get(slug="merged")
    rows = [(i, who, "choice", value, shown, 5.0) for i, who, shown, value in JUDGMENTS]
    add_judgments(study, rows)
    complete_assignments(study, rows)
    return study


def test_the_report_credits_every_system_a_merged_candidate_stands_for():
    report, html = study_report(judged_study(), "html")[0], study_report(Study.objects.get(slug="merged"), "html")[1]
    systems = report["systems"]
    # Comparisons: i1's three judgments of a vs b also count as a vs c (c = b there):
    #   a: 3 (vs b) + 3 (vs c) on i1 + 2 on i2 = 8, won by u3 twice (vs b, vs c) and u1 on i2 = 3;
    #   b: 3 on i1 (won 2) + 2 on i2 (lost both) = 5, won 2; c: 3 on i1 (won 2) + 2 on i2 (won both) = 5, won 4.
    assert {s: (v["human"]["n"], v["human"]["wins"], v["human"]["ties"], v["human"]["win_rate"])
            for s, v in systems.items()} == {"a": (8, 3, 0, 0.375), "b": (5, 2, 0, 0.4), "c": (5, 4, 0, 0.8)}
    assert report["pairwise_wins"] == {"a": {"b": 2.0, "c": 1.0}, "b": {"a": 2.0, "c": 0.0},
                                       "c": {"a": 3.0, "b": 1.0}}
    assert report["pairwise_n"] == {"a": {"b": 4, "c": 4}, "b": {"a": 4, "c": 1}, "c": {"a": 4, "b": 1}}
    # Each system is in both items; c's rouge1 on i1 is b's (the same text): (0.6 + 0.5) / 2.
    assert {s: v["n_items"] for s, v in systems.items()} == {"a": 2, "b": 2, "c": 2}
    assert {s: (v["metrics"]["rouge1"]["mean"], v["metrics"]["rouge1"]["n"]) for s, v in systems.items()} == {
        "a": (pytest.approx(0.15), 2), "b": (pytest.approx(0.45), 2), "c": (pytest.approx(0.55), 2)}
    # Majority: i1 goes to b (2 of 3), which is also a win for c; i2's pairs have one vote each.
    assert {s: (v["wins"], v["decided"]) for s, v in systems.items()} == {"a": (0, 1), "b": (1, 1), "c": (1, 1)}
    assert report["identical_outputs"]["n_items"] == 1
    assert (report["identical_outputs"]["pairs"], report["identical_outputs"]["per_pair"]) == (1, {"b|c": 1})
    # The Bradley-Terry strengths solve the likelihood equations: each system's wins equal
    # its expected wins (an independent check of the fit on the credited win matrix).
    w = report["pairwise_wins"]
    theta = {s: report["ranking"][s]["strength"] for s in "abc"}
    for s in "abc":
        expected = sum((w[s][o] + w[o][s]) / (1 + np.exp(theta[o] - theta[s])) for o in "abc" if o != s)
        assert expected == pytest.approx(sum(w[s].values()), abs=1e-9)
    assert 'id="identical-outputs"' in html and "b = c" in html


def test_the_merged_candidate_is_shown_once_and_no_system_name_reaches_the_annotator():
    import_batch_bytes(jsonl(header("merged", PAIRWISE_ALIGNMENT, annotations_per_item=1), BATCH[1]))
    user = make_user("ann-merged")
    client = api_client(user)
    body = client.post("/api/studies/merged/assignments/next/").json()
    assignment = Study.objects.get(slug="merged").assignments.get()
    assert sorted(assignment.shown_order["candidates"]) == ["a", "b"]  # two shown, c inside b
    text = json.dumps(body)
    assert [c["text"] for c in body["item"]["candidates"]].count("Output two.") == 1
    assert "also_systems" not in text and '"c"' not in text and '"b"' not in text
    answer = client.post(f"/api/assignments/{assignment.pk}/judgments/",
                         {"choice": blinding(assignment.pk).option("b")}, format="json")
    assert answer.status_code == 201
    assert list(Judgment.objects.values_list("value", flat=True)) == ["b"]


REFUSED = {
    "not a list": ("c", "line 2: candidate 2: 'also_systems' must be a non-empty list of system ids"),
    "empty": ([], "line 2: candidate 2: 'also_systems' must be a non-empty list of system ids"),
    "a shown id": (["a"], "line 2: 'also_systems' names 'a', which is already a system of this item"),
    "too many": ([f"s{n}" for n in range(7)], "line 2: candidates and their also_systems name 9 systems; at most 8"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_bad_also_systems_is_refused_with_nothing_written(case, tmp_path):
    value, expected = REFUSED[case]
    bad = json.loads(json.dumps(BATCH[1]))
    bad["candidates"][1]["also_systems"] = value
    err = __import__("io").StringIO()
    with pytest.raises(CommandError):
        call_command("import_batch", str(write(tmp_path, BATCH[0], bad)), stdout=err, stderr=err)
    assert err.getvalue().splitlines() == [expected]
    assert (Study.objects.count(), Item.objects.count()) == (0, 0)


def test_aspect_pairwise_refuses_also_systems_its_report_would_not_credit(tmp_path):
    bad = aspects("p1")
    bad["candidates"][1]["also_systems"] = ["plot-c"]
    err = __import__("io").StringIO()
    with pytest.raises(CommandError):
        call_command("import_batch", str(write(tmp_path, header("asp", ASPECT_PAIRWISE, aspects=[
            {"key": "ending", "question": "Which ending is better?"}]), bad)), stdout=err, stderr=err)
    assert err.getvalue().splitlines() == [
        "line 2: 'also_systems' is not taken by aspect_pairwise items (its report does not credit merged candidates)"]
    assert Study.objects.count() == 0
