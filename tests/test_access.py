"""Who may see, annotate and read a study (annotate/access.py), and the one definition of
progress (annotate/desk/progress.py): each defect of issues 12 and 14 replayed, then the
expected status, body and unchanged rows."""
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from annotate.desk.assignment import next_assignment
from annotate.desk.submission import submit
from annotate.models import Assignment, Item, Judgment, Study
from annotate.studies.importing import import_batch_bytes
from models_runtime.models import Job
from tests.factories import blinding, header, jsonl, make_user, pairwise, tokens

pytestmark = pytest.mark.django_db
ANNOTATOR_FIELDS = {"slug", "kind", "title", "instructions", "allow_tie", "config"}


@pytest.fixture(autouse=True)
def plain_http(settings):
    settings.SECURE_SSL_REDIRECT = False  # the test client speaks http


def api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def web(user):
    client = Client()
    client.force_login(user)
    return client


def study_with(slug, *items, **header_keys):
    import_batch_bytes(jsonl(header(slug, "pairwise_alignment", **header_keys), *items))
    return Study.objects.get(slug=slug)


# --- issue 12: one definition of who may see a study ----------------------------------------------

def test_listed_user_outside_the_group_sees_and_annotates_the_study(django_user_model, annotators):
    """Listed on the study but in no group: the engine served them, yet the API listed []
    and the detail answered 404. Now the list, the detail and next agree."""
    guest = make_user("guest-listed", role=None)  # no group
    study = study_with("listed", pairwise("a"), annotators=["guest-listed"], gold_rate=0.0)
    client = api(guest)
    assert [s["slug"] for s in client.get("/api/studies/").json()] == ["listed"]
    detail = client.get("/api/studies/listed/")
    assert detail.status_code == 200 and detail.json()["slug"] == "listed"
    response = client.post("/api/studies/listed/assignments/next/")
    assert response.status_code == 200
    assert response.json()["item_id"] == blinding(response.json()["assignment"]).item  # an opaque handle
    assert Assignment.objects.get(pk=response.json()["assignment"]).item.item_id == "a"
    assert list(Study.objects.annotatable_by(guest)) == [study] == list(Study.objects.visible_to(guest))
    assert list(Study.objects.readable_by(guest)) == []
    assert api(annotators[0]).get("/api/studies/").json() == []  # in the group, not listed


def test_querysets_by_role(django_user_model, annotators, researcher, admin_user_):
    """The three definitions over four studies: open, listing ann1, listing researcher
    rita2, listing both. Expected sets worked out from the rules in docs/access.md."""
    rita2 = make_user("rita2", "researchers")
    study_with("open-all")
    study_with("ann1-only", annotators=["ann1"])
    study_with("rita2-only", researchers=["rita2"])
    study_with("both", annotators=["ann1"], researchers=["rita2"])
    root = django_user_model.objects.create_superuser("root", password=None)

    def slugs(queryset):
        return sorted(queryset.values_list("slug", flat=True))

    everything = ["ann1-only", "both", "open-all", "rita2-only"]
    assert slugs(Study.objects.annotatable_by(annotators[0])) == everything
    assert slugs(Study.objects.annotatable_by(annotators[1])) == ["open-all", "rita2-only"]
    assert slugs(Study.objects.readable_by(annotators[0])) == []
    assert slugs(Study.objects.readable_by(researcher)) == ["ann1-only", "open-all"]
    assert slugs(Study.objects.readable_by(rita2)) == everything
    assert slugs(Study.objects.visible_to(researcher)) == ["ann1-only", "open-all"]
    assert slugs(Study.objects.annotatable_by(researcher)) == []  # not an annotator
    for boss in (admin_user_, root):
        assert slugs(Study.objects.readable_by(boss)) == everything == slugs(Study.objects.visible_to(boss))
    assert slugs(Study.objects.annotatable_by(admin_user_)) == []  # admins read; they do not annotate
    assert slugs(Study.objects.annotatable_by(root)) == everything


# --- issue 12: one definition of complete items and open assignments ---------------------------

def test_dashboard_and_report_count_the_same_complete_items(annotators, researcher):
    """2 real items + 1 gold item, overlap 2, both annotators judge all three through the
    engine. Before: the panel said "2 complete items of 3", the report 3 (gold counted).
    Now both count real items only: 2."""
    study = study_with("agree", pairwise("r1"), pairwise("r2"), pairwise("g1", gold="m1"),
                       annotations_per_item=2, gold_rate=1.0)
    for annotator in annotators[:2]:
        while (assignment := next_assignment(study, annotator)) is not None:
            submit(assignment.pk, annotator, {"choice": "m1"}, seconds=3)
    assert sorted(Item.objects.values_list("item_id", "n_completed")) == [("g1", 2), ("r1", 2), ("r2", 2)]

    report = api(researcher).get("/api/studies/agree/report/").json()
    assert report["complete_items"] == 2 and report["n_items"] == 3 and report["n_gold_items"] == 1
    client = web(researcher)
    panel = client.get("/studies/agree/progress/").content.decode()
    assert "4 of 4 annotations (100.0%) · 2 complete items of 2 (and 1 gold, not counted)" in panel
    page = client.get("/studies/agree/").content.decode()
    assert '<td>Complete items</td><td class="num">2</td>' in page


def test_progress_panel_does_not_count_expired_assignments_as_open(annotators, researcher):
    study = study_with("expiry", pairwise("a"), pairwise("b"), gold_rate=0.0)
    ann = annotators[0]
    first = next_assignment(study, ann)
    submit(first.pk, ann, {"choice": "m2"}, seconds=2)
    second = next_assignment(study, ann)
    row = re.compile(r"<tr><td>ann1</td><td class=\"num\">1</td><td class=\"num\">1</td><td class=\"num\">(\d+)</td>")
    client = web(researcher)
    assert row.search(client.get("/studies/expiry/progress/").content.decode()).group(1) == "1"
    Assignment.objects.filter(pk=second.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert row.search(client.get("/studies/expiry/progress/").content.decode()).group(1) == "0"
    assert Assignment.objects.filter(study=study).open().count() == 0
    assert Assignment.objects.filter(study=study).expired().count() == 1


# --- issue 14 item 13: removed annotators cannot submit ---------------------------------------------

def test_removed_annotator_cannot_submit_or_edit_through_the_api(annotators):
    study = study_with("removal", pairwise("a"), pairwise("b"), annotations_per_item=2,
                       annotators=["ann1", "ann2"], gold_rate=0.0)
    ann1 = annotators[0]
    client = api(ann1)
    done = client.post("/api/studies/removal/assignments/next/").json()["assignment"]
    assert client.post(f"/api/assignments/{done}/judgments/", tokens(done, {"choice": "m1"}),
                       format="json").status_code == 201
    open_one = client.post("/api/studies/removal/assignments/next/").json()["assignment"]

    study.annotators.set([annotators[1]])  # ann1 is taken off the list
    before = Judgment.objects.count()
    response = client.post(f"/api/assignments/{open_one}/judgments/", {"choice": "m1"}, format="json")
    assert (response.status_code, response.json()) == (403, {"detail": "You may no longer annotate this study."})
    response = client.put(f"/api/assignments/{done}/judgments/", tokens(done, {"choice": "m2"}), format="json")
    assert response.status_code == 403
    assert Judgment.objects.count() == before == 1
    assert Judgment.objects.get().value == "m1"
    assert Assignment.objects.get(pk=open_one).completed_at is None
    # ann1 may no longer see the study at all: 404, as for a study that does not exist.
    assert client.post("/api/studies/removal/assignments/next/").status_code == 404


def test_removed_annotator_cannot_submit_through_another_studys_page(annotators):
    """ann1 still annotates `other` (open to the group); its page URL must not carry an
    assignment of `removal`, from which ann1 was removed."""
    removal = study_with("removal", pairwise("a"), annotators=["ann1"], gold_rate=0.0)
    study_with("other", pairwise("x"), gold_rate=0.0)
    ann1 = annotators[0]
    assignment = next_assignment(removal, ann1)
    removal.annotators.set([annotators[1]])
    client = web(ann1)
    response = client.post(f"/annotate/other/items/{assignment.pk}/submit/", {"q:choice": "m1", "seconds": "3"})
    assert response.status_code == 200 and "That item had expired" in response.content.decode()
    assert client.post(f"/annotate/removal/items/{assignment.pk}/submit/",
                       {"q:choice": "m1", "seconds": "3"}).status_code == 404
    assert Judgment.objects.count() == 0
    assert Assignment.objects.get(pk=assignment.pk).completed_at is None


def test_annotator_leaving_the_group_cannot_submit_to_an_open_study(annotators):
    from django.contrib.auth.models import Group

    study = study_with("group-left", pairwise("a"), gold_rate=0.0)
    ann1 = annotators[0]
    assignment = next_assignment(study, ann1)
    ann1.groups.remove(Group.objects.get(name="annotators"))
    ann1 = type(ann1).objects.get(pk=ann1.pk)  # fresh: the role cache is per user object
    response = api(ann1).post(f"/api/assignments/{assignment.pk}/judgments/", {"choice": "m1"}, format="json")
    assert response.status_code == 403 and Judgment.objects.count() == 0


# --- issue 14 item 15: what annotators see; 404 instead of 403 --------------------------------------

def test_annotators_do_not_see_who_else_works_on_a_study(annotators, researcher):
    study_with("team", pairwise("a"), annotators=["ann1", "ann2"], researchers=["rita-researcher"])
    body = api(annotators[0]).get("/api/studies/team/").json()
    assert set(body) == ANNOTATOR_FIELDS
    assert "ann2" not in api(annotators[0]).get("/api/studies/").content.decode()
    full = api(researcher).get("/api/studies/team/").json()
    assert full["annotators"] == ["ann1", "ann2"] and full["researchers"] == ["rita-researcher"]
    assert {k: full[k] for k in ("n_items", "n_gold_items", "n_judgments")} == {
        "n_items": 1, "n_gold_items": 0, "n_judgments": 0}


WEB_PAGES = ["/studies/{}/", "/studies/{}/progress/", "/studies/{}/report-panel/", "/annotate/{}/quality/",
             "/annotate/{}/", "/studies/{}/upload/", "/studies/{}/jobs/"]
API_GETS = ["/api/studies/{}/", "/api/studies/{}/report/", "/api/studies/{}/judgments/"]


def without_csrf(page: bytes) -> bytes:
    """A page with its CSRF token blanked: Django masks the token anew on every response."""
    return re.sub(rb'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]*', rb"\1", page)


def test_a_hidden_study_is_indistinguishable_from_a_missing_one(annotators, researcher, django_user_model):
    """For each URL, a study the user may not see and a slug that does not exist give the
    same status and the same body (the 403 vs 404 oracle of issue 14 item 15)."""
    make_user("rita-other", "researchers")
    study_with("secret", pairwise("a"), annotators=["ann2"], researchers=["rita-other"])
    for user in (annotators[0], researcher):
        for url in WEB_PAGES:
            hidden, missing = web(user).get(url.format("secret")), web(user).get(url.format("no-such"))
            assert hidden.status_code == missing.status_code == 404, (user, url)
            assert without_csrf(hidden.content) == without_csrf(missing.content), (user, url)
        client = api(user)
        for url in API_GETS:
            hidden, missing = client.get(url.format("secret")), client.get(url.format("no-such"))
            assert (hidden.status_code, hidden.json()) == (missing.status_code, missing.json()) == (
                404, {"detail": "No such study."}), (user, url)
        hidden = client.post("/api/studies/secret/assignments/next/")
        assert hidden.status_code == 404 and hidden.json() == client.post(
            "/api/studies/no-such/assignments/next/").json()


# --- issue 14 item 16: per-study researchers ---------------------------------------------------------

def test_researcher_not_on_the_list_gets_404_everywhere(django_user_model, researcher, admin_user_, annotators):
    listed = make_user("rita2", "researchers")
    outsider = make_user("reader-no-group", role=None)  # listed, in no group
    study = study_with("scoped", pairwise("a"), researchers=["rita2", "reader-no-group"], gold_rate=0.0)
    submit(next_assignment(study, annotators[0]).pk, annotators[0], {"choice": "m1"}, seconds=1)
    job = Job.objects.create(kind="score", params={"study": "scoped"}, created_by=admin_user_)
    urls = ["/api/studies/scoped/report/", "/api/studies/scoped/report/?format=csv",
            "/api/studies/scoped/judgments/", f"/api/jobs/{job.pk}/", "/api/studies/scoped/"]
    pages = ["/studies/scoped/", "/studies/scoped/progress/", "/studies/scoped/report-panel/",
             "/annotate/scoped/quality/"]
    for url in urls:
        assert api(researcher).get(url).status_code == 404, url
        for reader in (listed, outsider, admin_user_):
            assert api(reader).get(url).status_code == 200, (reader, url)
    for url in pages:
        assert web(researcher).get(url).status_code == 404, url
        for reader in (listed, outsider, admin_user_):
            assert web(reader).get(url).status_code == 200, (reader, url)
    assert [s["slug"] for s in api(researcher).get("/api/studies/").json()] == []
    assert "scoped" not in web(researcher).get("/").content.decode()
    assert "/studies/scoped/" in web(listed).get("/").content.decode()
    export = api(listed).get("/api/studies/scoped/judgments/?format=csv")
    assert b"".join(export.streaming_content).decode().splitlines()[1].startswith("scoped,a,ann1,choice,m1,")


def test_researchers_header_key(django_user_model):
    from annotate.studies.batch_format import BatchInvalid

    make_user("rita2", "researchers")
    study = study_with("hdr", pairwise("a"), researchers=["rita2"])
    assert list(study.researchers.values_list("username", flat=True)) == ["rita2"]
    with pytest.raises(BatchInvalid) as refused:
        import_batch_bytes(jsonl(header("hdr2", "pairwise_alignment", researchers=["nobody"]), pairwise("a")))
    assert refused.value.errors == ["line 1: 'researchers' names unknown user 'nobody'"]
    with pytest.raises(BatchInvalid) as refused:
        import_batch_bytes(jsonl(header("hdr3", "pairwise_alignment", researchers="rita2"), pairwise("a")))
    assert refused.value.errors == ["line 1: 'researchers' must be a list of usernames"]
    assert not Study.objects.filter(slug__in=["hdr2", "hdr3"]).exists()


def test_backup_keeps_the_researcher_list(django_user_model, tmp_path):
    """A restored study must not widen who reads it."""
    import io

    from annotate.studies.backup import import_study, write_study

    make_user("rita2", "researchers")
    study = study_with("bk-res", pairwise("a"), researchers=["rita2"])
    out = io.StringIO()
    write_study(study, out)
    study.delete()
    restored = import_study(io.StringIO(out.getvalue()))
    assert list(restored.researchers.values_list("username", flat=True)) == ["rita2"]


# --- issue 31 item 9: jobs are no slug oracle and follow their study ----------------------------

def test_jobs_panel_answers_the_same_404_for_a_missing_and_an_unreadable_study(researcher, admin_user_):
    """Before: /studies/<missing>/jobs/ answered 200 to every researcher, an unreadable one 404."""
    make_user("rita-other", "researchers")
    study_with("secret", pairwise("a"), researchers=["rita-other"])
    hidden, missing = web(researcher).get("/studies/secret/jobs/"), web(researcher).get("/studies/no-such/jobs/")
    assert hidden.status_code == missing.status_code == 404
    assert without_csrf(hidden.content) == without_csrf(missing.content)
    assert web(admin_user_).get("/studies/no-such/jobs/").status_code == 404  # no study: nothing to list
    assert web(admin_user_).get("/studies/secret/jobs/").status_code == 200


def test_a_job_is_read_only_by_those_who_may_read_its_study(django_user_model, researcher, admin_user_, annotators):
    """A running plan's job names a study not imported yet (its params hold the header with
    the researcher list): before, every researcher read it. Now: admins and its creator;
    once the study exists, whoever may read it. Detail, file download and jobs panel agree."""
    listed = make_user("rita2", "researchers")
    plan_header = {"slug": "planned", "kind": "pairwise_alignment", "title": "P", "researchers": ["rita2"]}
    plan = Job.objects.create(kind="pipeline", params={"study": "planned", "study_header": plan_header},
                              created_by=admin_user_, files=["plan.json"])
    file_kind = Job.objects.create(kind="import", params={"slug": "planned"}, created_by=admin_user_)
    creator = make_user("res-creator", "researchers")  # on no list; a job they started
    own = Job.objects.create(kind="score", params={"study": "planned"}, created_by=creator)
    loose = Job.objects.create(kind="score", params={}, created_by=admin_user_)

    def readers(job):
        users = {"researcher": researcher, "listed": listed, "annotator": annotators[0], "admin": admin_user_,
                 "creator": creator}
        return {name for name, user in users.items() if api(user).get(f"/api/jobs/{job.pk}/").status_code == 200}

    assert readers(plan) == readers(file_kind) == {"admin"}
    assert readers(own) == {"admin", "creator"}
    assert readers(loose) == {"researcher", "listed", "admin", "creator"}  # a job about no study
    unread = api(researcher).get(f"/api/jobs/{plan.pk}/")
    assert (unread.status_code, unread.json()) == (404, {"detail": "No such job."})
    assert api(researcher).get(f"/api/jobs/{plan.pk}/files/plan.json").status_code == 404

    study_with("planned", pairwise("a"), researchers=["rita2"])  # the plan's import step ran
    assert readers(plan) == readers(file_kind) == {"listed", "admin"}
    assert readers(own) == {"listed", "admin", "creator"}
    assert web(listed).get("/studies/planned/jobs/").status_code == 200
    assert web(researcher).get("/studies/planned/jobs/").status_code == 404
    assert web(annotators[0]).get("/studies/planned/jobs/").status_code == 404
