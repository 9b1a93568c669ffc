"""Every figure has its n (issue 24; statistics.md, "Clustered data"): the JSON report of
each demo study, judged by six annotators at random (seeded) with evaluator predictions
added, is walked,
and every float must sit in an object that has an `n` or `n_*` key beside it, or be one
of the documented short list (docs/reports.md, "Every figure has its n"): keys whose
shape interfaces.md fixes as {name: float}, with the n of each value in a named sibling.
Every interval says what it resamples: beside each `ci95` / `krippendorff_alpha_ci95`
there are `ci_method` and `n_clusters`.
"""
import io
import json
import re

import numpy as np
import pytest
from django.core.management import call_command

from annotate.kinds import all_kinds, questions_for
from annotate.models import Judgment, Study
from tests.factories import add_predictions, get_annotator

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# (path pattern, sibling key holding the n of each value, levels up to the dict holding the
# sibling): the documented short list.
SHORT_LIST = [
    (r"win_rate\.[^.]+", "win_rate_detail", 1),
    (r"mean_similarity\.[^.]+", "mean_similarity_detail", 1),
    (r"egises_hj\.[^.]+\.[^.]+", "egises_hj_detail", 2),
    (r"aspects\.[^.]+\.majority_share\.[^.]+", "majority_share_detail", 1),
    (r"evaluators_average\.[^.]+", "evaluators_average_detail", 1),
    (r"annotators\.[^.]+\.loo\.[^.]+", "loo_n", 1),
    (r"pairwise_wins\.[^.]+\.[^.]+", "pairwise_n", 2),
    (r"aspects\.[^.]+\.pairwise_wins\.[^.]+\.[^.]+", "pairwise_n", 2),
]
INTERVALS = ("ci95", "krippendorff_alpha_ci95")


def has_n(obj):
    return any(k == "n" or k.startswith("n_") for k in obj)


def walk(obj, path, parents, problems):
    """Collects each float without an n beside it (or a listed sibling with its n)."""
    if isinstance(obj, dict):
        if any(obj.get(k) is not None for k in INTERVALS) and not {"ci_method", "n_clusters"} <= set(obj):
            problems.append(f"{path}: an interval without ci_method / n_clusters")
        for key, value in obj.items():
            here = f"{path}.{key}" if path else str(key)
            if isinstance(value, float) and not has_n(obj) and not listed(here, parents + [obj], problems):
                problems.append(f"{here} = {value}: no n beside it")
            elif isinstance(value, list) and any(isinstance(v, float) for v in value) and not has_n(obj):
                problems.append(f"{here}: a list of numbers without an n beside it")
            walk(value, here, parents + [obj], problems)
    elif isinstance(obj, list):
        for k, value in enumerate(obj):
            walk(value, f"{path}[{k}]", parents, problems)


def listed(path, chain, problems):
    """True if `path` is on the short list and its detail sibling carries an n for it."""
    for pattern, sibling, up in SHORT_LIST:
        if re.fullmatch(pattern, path):
            holder = chain[-1 - up] if up < len(chain) else {}
            detail = holder.get(sibling)
            for key in path.split(".")[-up:]:
                detail = detail.get(key) if isinstance(detail, dict) else None
            if not (isinstance(detail, int) or (isinstance(detail, dict) and has_n(detail))):
                problems.append(f"{path}: listed, but {sibling} has no n for it")
            return True
    return False


def judge_at_random(study, annotators=6, seed=24):
    """Every question of every item answered by `annotators` annotators, seeded: ratings
    near an item level, choices and display orders at random (so that agreement,
    correlations and the position-bias test have something to say)."""
    rng = np.random.default_rng(seed)
    rows = []
    for item in study.items.order_by("position"):
        level = rng.integers(1, 7)
        for k in range(annotators):
            for q in questions_for(study.kind, {**study.config, "allow_tie": study.allow_tie}, item.data):
                if "options" in q:
                    options = [o for o in q["options"] if o != "tie"]
                    shown = list(rng.permutation(options))
                    value = shown[0] if rng.random() < 0.6 else shown[-1]
                else:
                    lo, hi = q["scale"]
                    value, shown = str(int(np.clip(level + rng.integers(-1, 2), lo, hi))), []
                rows.append(Judgment(study=study, item=item, annotator=get_annotator(f"demo-judge{k}"),
                                     question=q["id"], value=value, shown_order="|".join(shown), seconds=4.0))
    Judgment.objects.bulk_create(rows)


def demo_reports():
    call_command("demo", "--force", stdout=io.StringIO())
    reports = {}
    for study in Study.objects.order_by("slug"):
        judge_at_random(study)
        rows = []
        for index, item in enumerate(study.items.order_by("position")):
            for q in questions_for(study.kind, {**study.config, "allow_tie": study.allow_tie}, item.data):
                if "scale" in q and study.kind == "similarity_survey":
                    rows.append((item.item_id, "jsd", "", q["id"], f"{0.1 + 0.03 * (index % 7):.2f}"))
                elif "options" in q and study.kind == "aspect_pairwise":
                    rows.append((item.item_id, "judge", "", q["id"], q["options"][index % 2]))
                elif "scale" in q and study.kind == "scalar_rating":  # a personalized evaluator's scores
                    rows += [(item.item_id, "judge", f"demo-judge{k}", q["id"], str(1 + (index + k) % 10))
                             for k in range(6)]
        add_predictions(study, rows)
        out = io.StringIO()
        call_command("report", study.slug, "--format", "json", stdout=out)
        reports[study.kind] = json.loads(out.getvalue())
    return reports


def test_every_float_of_every_demo_report_has_its_n():
    reports = demo_reports()
    assert set(reports) == {kind.name for kind in all_kinds()}  # every registered kind has a demo study
    for kind, report in reports.items():
        problems = []
        walk(report, "", [], problems)
        assert problems == [], kind
    # the walk saw the figures the issue named: each now with its n
    similarity, pairwise = reports["similarity_survey"], reports["pairwise_alignment"]
    assert similarity["mean_similarity_detail"] and similarity["egises_hj_detail"] and similarity["paradoxes_detail"]
    assert pairwise["win_rate_detail"] and pairwise["position_bias"]["n"] == 6
    assert pairwise["position_bias"]["p_value"] is not None and similarity["correlations"]["jsd"]["n_clusters"] == 6
    assert reports["aspect_pairwise"]["evaluators_average_detail"]["judge"]["n_judgments"] > 0
    assert reports["explanation_choice"]["choice_matches_expert_detail"]["n"] > 0
    scalar = reports["scalar_rating"]  # (item, annotator) pairs cluster in items: the item bootstrap
    assert set(scalar["evaluators"]) >= {"reviewer_avg", "item_avg", "judge"}
    for name, entry in scalar["evaluators"].items():
        assert entry["n_items"] == entry["pearson"]["n_clusters"] == 6 and entry["n_pairs"] > 6, name
        assert entry["pearson"]["p_method"].startswith("bootstrap over items"), name


def test_the_walk_catches_a_float_without_n():
    problems = []
    walk({"n_items": 3, "usefulness": {"mean": 2.5}, "win_rate": {"a": 0.5}, "x": {"ci95": [0.1, 0.2], "n": 4}},
         "", [], problems)
    assert problems == ["usefulness.mean = 2.5: no n beside it", "win_rate.a: listed, but win_rate_detail has no n "
                        "for it", "x: an interval without ci_method / n_clusters"]
