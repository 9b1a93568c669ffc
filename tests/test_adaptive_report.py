"""The report of an adaptive study (statistics.md, "Adaptive allocation"; interfaces.md key
`allocation`): win rates inverse-probability weighted (Hajek), worked by hand on a small
example, labelled so in JSON, CSV and HTML; the Bradley-Terry ranking the unweighted MLE
of the same comparisons; the pairs' shown counts with their n."""
import numpy as np
import pytest

from annotate.models import Assignment
from annotate.reports.data import study_report
from evaluation.bradley_terry import Comparisons, bt_ranking
from tests.factories import make_judged_study

SYSTEMS = ["x", "y", "z"]
# (item, annotator, shown pair, winner, probability of the pair)
ROWS = [("i1", "u1", ("x", "y"), "x", 0.5), ("i2", "u1", ("x", "z"), "z", 0.25),
        ("i3", "u1", ("y", "z"), "y", 0.25), ("i1", "u2", ("y", "x"), "y", 0.8),
        ("i2", "u2", ("z", "y"), "z", 0.5)]


def item(item_id):
    return (item_id, {"input": f"q {item_id}", "reference": "r",
                      "candidates": [{"id": s, "text": f"{s} on {item_id}"} for s in SYSTEMS]}, None)


def adaptive_report_study(slug="ipw", probabilities=True, allocation="adaptive"):
    judgments = [(i, who, "choice", won, f"{a}|{b}", 1.0) for i, who, (a, b), won, _ in ROWS]
    study = make_judged_study(slug, "pairwise_alignment", [item(i) for i in ("i1", "i2", "i3")], judgments,
                              overlap=2, config={"allocation": allocation, "min_per_pair": 1})
    for i, who, (a, b), _, p in ROWS:
        Assignment.objects.filter(study=study, item__item_id=i, annotator__username=who).update(
            shown_order={"candidates": [a, b], "choice": [a, b]}, probability=p if probabilities else None)
    return study


@pytest.mark.django_db
def test_weighted_win_rates_by_hand_and_unweighted_strengths():
    """Weights 1/p: x: won 2 (i1 u1), lost 4 (i2 u1), lost 1.25 (i1 u2) -> 2 / 7.25;
    y: lost 2, won 4, won 1.25, lost 2 -> 5.25 / 9.25; z: won 4, lost 4, won 2 -> 6 / 10.
    Unweighted: x 1/3, y 2/4, z 2/3. Strengths: the plain BT fit of the five comparisons."""
    report, _ = study_report(adaptive_report_study())
    human = {s: report["systems"][s]["human"] for s in SYSTEMS}
    assert human["x"]["win_rate"] == pytest.approx(2 / 7.25, abs=1e-12)
    assert human["y"]["win_rate"] == pytest.approx(5.25 / 9.25, abs=1e-12)
    assert human["z"]["win_rate"] == pytest.approx(6 / 10, abs=1e-12)
    assert [human[s]["unweighted_win_rate"] for s in SYSTEMS] == [pytest.approx(1 / 3), 0.5, pytest.approx(2 / 3)]
    assert [human[s]["n"] for s in SYSTEMS] == [3, 4, 3]
    for s in SYSTEMS:
        assert human[s]["weighting"] == "inverse-probability weighted"
        assert human[s]["ci_method"].startswith("inverse-probability weighted (Hajek) win rate; bootstrap over items")
    code = {s: k for k, s in enumerate(SYSTEMS)}
    items = {"i1": 0, "i2": 1, "i3": 2}
    plain = Comparisons(SYSTEMS, np.array([items[i] for i, *_ in ROWS]),
                        np.array([code[a] for _, _, (a, b), _, _ in ROWS]),
                        np.array([code[b] for _, _, (a, b), _, _ in ROWS]),
                        np.array([1.0 if won == a else 0.0 for _, _, (a, b), won, _ in ROWS]))
    expected = bt_ranking(plain)
    assert report["ranking"] == expected["ranking"]
    assert report["allocation"] == {
        "policy": "adaptive", "min_per_pair": 1, "n_shown": 5, "n": 5, "win_rates": "inverse-probability weighted",
        "pairs": [{"a": "x", "b": "y", "shown": 2, "n": 2}, {"a": "x", "b": "z", "shown": 1, "n": 1},
                  {"a": "y", "b": "z", "shown": 2, "n": 2}]}


@pytest.mark.django_db
def test_csv_and_html_say_weighted():
    study = adaptive_report_study()
    _, csv_text = study_report(study, "csv")
    rows = [line for line in csv_text.splitlines() if "human_win_rate" in line]
    assert len(rows) == 3 and all("inverse-probability weighted" in line for line in rows)
    _, html = study_report(study, "html")
    assert "win rate: inverse-probability weighted (Hajek; adaptive allocation" in html
    assert 'id="allocation-policy">Pair allocation: adaptive (cold start: 1 judgments per pair' in html
    assert '<tr><td>x</td><td class="num">–</td><td class="num">2</td><td class="num">1</td></tr>' in html


@pytest.mark.django_db
def test_missing_probabilities_are_not_weighted_and_balanced_studies_say_so():
    report, _ = study_report(adaptive_report_study(probabilities=False))
    assert report["allocation"]["win_rates"] == "unweighted"
    assert report["allocation"]["weighting_reason"].startswith("5 of 5 judgments have no recorded probability")
    assert "weighting" not in report["systems"]["x"]["human"]
    assert report["systems"]["x"]["human"]["win_rate"] == pytest.approx(1 / 3)
    balanced, _ = study_report(adaptive_report_study("bal", allocation="balanced"))
    assert balanced["allocation"]["policy"] == "balanced" and balanced["allocation"]["min_per_pair"] is None
    assert balanced["allocation"]["win_rates"] == "unweighted"
    assert "weighting" not in balanced["systems"]["y"]["human"]


@pytest.mark.django_db
def test_datasheet_names_the_allocation():
    from annotate.reports.datasheet import datasheet

    sheet = datasheet(adaptive_report_study())
    assert sheet["design"]["allocation"] == (
        "adaptive (each pair first shown 1 times, then the pair that most reduces the summed variance of the "
        "Bradley-Terry strengths, with a 20% uniform share; each pair's probability recorded, win rates "
        "inverse-probability weighted, strengths unweighted)")
