"""manage.py demo: users, one study per kind, and running it twice changes nothing."""
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from annotate.kinds import KINDS, get_kind
from annotate.models import Batch, Item, Prediction, Study
from annotate.roles import is_admin, is_researcher
from annotate.studies.batch_format import iter_items, read_header
from annotate.studies.demo_data import demo_batches, expert_explanation, unigram_f1
from annotate.studies.json_lines import iter_lines
from tests.factories import demo_slugs, is_annotator

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def local_instance(settings):
    """`demo` runs only on a development instance (DEBUG=1) unless forced."""
    settings.DEBUG = True


def run_demo(*args):
    out = io.StringIO()
    call_command("demo", *args, stdout=out)
    return out.getvalue()


def state():
    return (get_user_model().objects.count(), Study.objects.count(), Item.objects.count(), Batch.objects.count())


def test_demo_refuses_without_debug(settings):
    """Issue 14 item 6: the guard depended on HUMEVAL_PRODUCTION only; a server run without
    it reset `admin` to the published password."""
    settings.DEBUG = False
    before = state()
    with pytest.raises(CommandError) as refused:
        run_demo()
    assert str(refused.value) == ("refusing to create demo accounts with published passwords: this is not a "
                                  "development instance (DEBUG=1); use --force to run anyway")
    assert state() == before == (0, 0, 0, 0)
    assert "7 new, 0 unchanged items" in run_demo("--force")


def test_demo_never_changes_an_existing_account():
    """A real `admin` (own password, researcher only, not staff) and a real `annotator1`
    exist: the demo leaves both exactly as they were, and says so."""
    User = get_user_model()
    admin = User.objects.create_user("admin", password="the-real-admins-own-pw")
    admin.groups.add(Group.objects.get(name="researchers"))
    User.objects.create_user("annotator1", password="annotator-ones-pw", email="a1@example.org")
    def account(u):
        return u.password, u.is_staff, u.is_superuser, u.email, sorted(u.groups.values_list("name", flat=True))

    before = {u.username: account(u) for u in User.objects.all()}
    out = run_demo()
    after = {u.username: account(u) for u in User.objects.filter(username__in=["admin", "annotator1"])}
    assert after == before
    assert User.objects.get(username="admin").check_password("the-real-admins-own-pw")
    assert not User.objects.get(username="admin").check_password("demo-admin-pw")
    assert "  admin        (existing account, not changed) admins" in out
    assert "  annotator1   (existing account, not changed) annotators" in out
    assert "  annotator2   demo-annotator2-pw   annotators" in out
    assert User.objects.count() == 5


def test_demo_twice_is_idempotent():
    first = run_demo()
    assert "admin        demo-admin-pw" in first and "7 new, 0 unchanged items" in first
    state = (Study.objects.count(), Item.objects.count(), Prediction.objects.count())
    second = run_demo()
    assert "0 new, 7 unchanged items" in second
    assert "admin        (existing account, not changed)" in second
    assert (Study.objects.count(), Item.objects.count(), Prediction.objects.count()) == state
    assert Batch.objects.count() == 2 * len(KINDS)  # each run records one upload per kind
    assert sorted(Study.objects.values_list("kind", flat=True)) == sorted(KINDS)
    for kind, slug in demo_slugs().items():
        study = Study.objects.get(slug=slug)
        assert study.kind == kind
        assert study.items.count() >= 6 and study.items.filter(is_gold=True).count() == 1
    # Every item's metric scores are Prediction rows: 7 items x 2 candidates x 1 metric in
    # each of the two pairwise studies, and what the other kinds' demos score.
    scores = sum(len(get_kind(kind).metric_score_rows(line.get("metric_scores"), line))
                 for kind in KINDS for line in get_kind(kind).demo_batch()[1:])
    assert Prediction.objects.count() == scores >= 28


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
