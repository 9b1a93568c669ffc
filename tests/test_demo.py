"""manage.py demo: users, one study per kind, and running it twice changes nothing."""
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotate.batch_format import iter_items, iter_lines, read_header
from annotate.demo_data import DEMO_SLUGS, demo_batches, expert_explanation, unigram_f1
from annotate.kinds import KINDS
from annotate.models import Batch, Item, Prediction, Study
from annotate.roles import is_admin, is_annotator, is_researcher

pytestmark = pytest.mark.django_db


def run_demo():
    out = io.StringIO()
    call_command("demo", stdout=out)
    return out.getvalue()


def test_demo_twice_is_idempotent():
    first = run_demo()
    assert "admin        demo-admin-pw" in first and "7 new, 0 unchanged items" in first
    state = (Study.objects.count(), Item.objects.count(), Prediction.objects.count())
    second = run_demo()
    assert "0 new, 7 unchanged items" in second
    assert (Study.objects.count(), Item.objects.count(), Prediction.objects.count()) == state
    assert Batch.objects.count() == 8  # each run records its four uploads
    assert sorted(Study.objects.values_list("kind", flat=True)) == sorted(KINDS)
    for kind, slug in DEMO_SLUGS.items():
        study = Study.objects.get(slug=slug)
        assert study.kind == kind
        assert study.items.count() >= 6 and study.items.filter(is_gold=True).count() == 1
    # 7 items x 2 candidates x 1 metric, in each of the two pairwise studies.
    assert Prediction.objects.count() == 28


def test_demo_logins_and_roles():
    run_demo()
    users = {u.username: u for u in get_user_model().objects.all()}
    for username, password in (("admin", "demo-admin-pw"), ("researcher", "demo-researcher-pw"),
                               ("annotator1", "demo-annotator1-pw"), ("annotator2", "demo-annotator2-pw"),
                               ("annotator3", "demo-annotator3-pw")):
        assert users[username].check_password(password)
    admin, researcher, annotator = users["admin"], users["researcher"], users["annotator2"]
    assert admin.is_superuser and is_admin(admin)
    assert is_researcher(researcher) and not is_admin(researcher)
    assert is_annotator(annotator) and not is_researcher(annotator)


def test_demo_files_pass_the_validator():
    for kind, data in demo_batches().items():
        lines = iter_lines(io.BytesIO(data))
        _, header, errors = read_header(lines)
        assert errors == [] and header.kind == kind
        rows = list(iter_items(lines, header))
        assert all(not isinstance(r, list) for r in rows), rows
        assert len({r.item_id for r in rows}) == len(rows) >= 6


def test_demo_metrics_are_computed_as_documented():
    """unigram F1 of 'a b c d' vs 'a b x': overlap 2, P = 2/4, R = 2/3, F1 = 2PR/(P+R) = 4/7.
    ExPerT: 2 reference aspects, 1 generated, one match with content yes, style no:
    AVERAGE e = 0.5; recall = 0.5/2 = 0.25, precision = 0.5/1 = 0.5, F = 2*0.5*0.25/0.75 = 1/3."""
    assert unigram_f1("a b c d", "a b x") == round(4 / 7, 4)
    explanation = expert_explanation(["tone", "topic"], ["topic"], [("topic", "topic", True, False)])
    assert (explanation["recall"], explanation["precision"], explanation["score"]) == (0.25, 0.5, 0.3333)
    assert explanation["variants"] == {"content": round(2 * 1 * 0.5 / 1.5, 4), "style": 0.0, "and": 0.0,
                                       "or": 0.6667, "average": 0.3333}
    assert [m["side"] for m in explanation["matches"]] == ["recall", "precision"]
    json.dumps(explanation)
