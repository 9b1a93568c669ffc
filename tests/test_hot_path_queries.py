"""The annotator's cycle (next item + submit) costs a fixed, small number of statements
(issue 27), through each door: the REST API (token) and the htmx task page (session), as a
staff-made annotator and as a participant. A change that adds a statement to the hot path
fails here; docs/benchmarks.md has the EXPLAIN of each statement.

Counted with CaptureQueriesContext inside the test's transaction, where the engine's
transaction shows as SAVEPOINT ... RELEASE (in production: BEGIN ... COMMIT). Not counted
here, as they are not Django queries: Django's health check of a reused connection
(SELECT 1, once per request) and the transaction's BEGIN / COMMIT. The counts are
PostgreSQL's (one-statement writes); SQLite runs the same steps as separate statements.

API next (new item): token, [SAVEPOINT], desk + user lock, the user's open assignment and
count, lock a free item, earlier orders + new id, insert (+ item counter), [RELEASE]: 8.
API submit: token, the assignment read with the access decision, claim + answers + counter
in one statement: 3. A participant's session on the API: session and user instead of the
token, and on submit the scope gate's check that the assignment is in their study
(ParticipantScopeMiddleware).
htmx submit, which also draws the next item: session, user, desk, read, store, [SAVEPOINT],
user lock, open assignment and count, pick, earlier orders + id, insert, [RELEASE],
progress: 13.
A participant's very first item also takes their place in the study (annotate/participants/recruitment.py:
the study's counter and the participant's row in one statement, after the pick): +1 once
per participant, not per item.
An item with more than two candidates (issue 22) takes the study's row lock first: API next 9."""
import pytest
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotate.models import Assignment, Judgment
from tests.factories import make_items, make_study, make_user, participant_link, tokens

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
POSTGRES_COUNTS = pytest.mark.postgres("the pinned counts are PostgreSQL's one-statement writes")
PROLIFIC = "?PROLIFIC_PID=5f2c0a1b&STUDY_ID=st01&SESSION_ID=se01"


def counted(call):
    """(response, number of queries) of one request."""
    with CaptureQueriesContext(connection) as queries:
        response = call()
    return response, len(queries.captured_queries), "\n".join(q["sql"][:160] for q in queries.captured_queries)


def api_door(study, participant):
    """An API client: a staff-made annotator with a token, or a participant's session."""
    if participant:
        client = APIClient()
        assert client.get(participant_link(study, PROLIFIC)).status_code == 302
        client.get(f"/p/{study.slug}/go/")
        return client
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=make_user('ann')).key}")
    return client


def htmx_door(study, participant):
    client = Client()
    if participant:
        assert client.get(participant_link(study, PROLIFIC)).status_code == 302
        client.get(f"/p/{study.slug}/go/")
    else:
        client.force_login(make_user("ann"))
    return client


@pytest.fixture
def study():
    """A pairwise study of 4 items, overlap 3, that recruits from Prolific."""
    made = make_study(overlap=3, recruitment={"platform": "prolific"})
    make_items(made, 4)
    return made


def the_open_assignment():
    return Assignment.objects.get(completed_at__isnull=True)


# (participant?) -> queries of: first next, a repeated next, submit, a repeated submit
API_COUNTS = {False: (8, 5, 3, 3), True: (10, 6, 5, 5)}  # participant's first next: + taking the place


@POSTGRES_COUNTS
@pytest.mark.parametrize("participant", [False, True], ids=["staff", "participant"])
def test_api_cycle_statements(study, participant):
    client = api_door(study, participant)
    url = f"/api/studies/{study.slug}/assignments/next/"
    first, n_next, sql_next = counted(lambda: client.post(url))
    again, n_again, sql_again = counted(lambda: client.post(url))
    assert first.status_code == again.status_code == 200 and first.json() == again.json()
    body = {q["id"]: q["options"][0] for q in first.json()["questions"]}
    submit_url = f"/api/assignments/{first.json()['assignment']}/judgments/"
    stored, n_submit, sql_submit = counted(lambda: client.post(submit_url, body, format="json"))
    repeat, n_repeat, sql_repeat = counted(lambda: client.post(submit_url, body, format="json"))
    assert (stored.status_code, repeat.status_code) == (201, 200) and Judgment.objects.count() == 1
    assert stored.json()["judgments"] == repeat.json()["judgments"]
    assert (n_next, n_again, n_submit, n_repeat) == API_COUNTS[participant], "\n\n".join(
        [sql_next, sql_again, sql_submit, sql_repeat])


@POSTGRES_COUNTS
def test_an_item_of_more_than_two_candidates_costs_one_statement_more():
    """Issue 22: the pair shown depends on the whole study, so the engine takes the study's
    row lock in one statement more (then reads the item's orders, the study's pairs and the
    new id in one); submit is unchanged."""
    from tests.factories import add_items

    study = make_study(slug="four", overlap=3)
    add_items(study, [("q0", {"input": "q", "reference": "r",
                              "candidates": [{"id": f"m{n}", "text": f"t{n}"} for n in range(4)]}, None)])
    client = api_door(study, participant=False)
    url = f"/api/studies/{study.slug}/assignments/next/"
    first, n_next, sql_next = counted(lambda: client.post(url))
    assert first.status_code == 200 and len(first.json()["item"]["candidates"]) == 2
    body = {q["id"]: q["options"][0] for q in first.json()["questions"]}
    stored, n_submit, sql_submit = counted(
        lambda: client.post(f"/api/assignments/{first.json()['assignment']}/judgments/", body, format="json"))
    assert stored.status_code == 201
    assert (n_next, n_submit) == (API_COUNTS[False][0] + 1, API_COUNTS[False][2]), sql_next + "\n\n" + sql_submit
    assert "FOR NO KEY UPDATE" in sql_next


# (participant?) -> queries of: Start (next), submit + next item, a repeated submit
HTMX_COUNTS = {False: (11, 13, 10), True: (12, 13, 10)}  # participant's Start: + taking the place


@POSTGRES_COUNTS
@pytest.mark.parametrize("participant", [False, True], ids=["staff", "participant"])
def test_task_page_cycle_statements(study, participant):
    client = htmx_door(study, participant)
    start, n_start, sql_start = counted(lambda: client.post(f"/annotate/{study.slug}/next/", HTTP_HX_REQUEST="true"))
    assert start.status_code == 200
    assignment = the_open_assignment()
    answer = {"q:choice": tokens(assignment.pk, {"choice": "m1"})["choice"], "seconds": 3}
    url = f"/annotate/{study.slug}/items/{assignment.pk}/submit/"
    saved, n_submit, sql_submit = counted(lambda: client.post(url, answer, HTTP_HX_REQUEST="true"))
    repeat, n_repeat, sql_repeat = counted(lambda: client.post(url, answer, HTTP_HX_REQUEST="true"))
    assert b"Saved." in saved.content and b"Already saved." in repeat.content
    assert Judgment.objects.count() == 1 and Assignment.objects.filter(completed_at__isnull=True).count() == 1
    assert (n_start, n_submit, n_repeat) == HTMX_COUNTS[participant], "\n\n".join([sql_start, sql_submit, sql_repeat])


# --- the one access decision is the access rules' ----------------------------------------------

def test_desk_decides_as_the_study_querysets(django_user_model):
    """desk_for and study_for (group membership decided in SQL, one statement) give every
    user the same may-annotate / may-read as Study.objects.annotatable_by / readable_by
    (membership read by annotate.roles.has_role): listed or not, in each group or none,
    participants who joined or declined, superusers."""
    from django.utils import timezone

    from annotate.access import STUDY, study_for
    from annotate.desk.assignment import desk_for
    from annotate.models import Participant, Study

    open_study = make_study(slug="open-to-groups")
    listed = make_study(slug="listed-only")
    people = {name: make_user(name, role) for name, role in [
        ("plain-annotator", "annotators"), ("listed-guest", None), ("researcher", "researchers"),
        ("admin", "admins"), ("nobody", None), ("joined", None), ("declined", None)]}
    people["root"] = make_user("root", None, is_superuser=True)
    listed.annotators.add(people["listed-guest"])
    listed.researchers.add(people["nobody"])
    Participant.objects.create(study=listed, user=people["joined"], platform="pid", external_id="j")
    Participant.objects.create(study=listed, user=people["declined"], platform="pid", external_id="d",
                               declined_at=timezone.now())
    for user in people.values():
        for study in (open_study, listed):
            expected = (Study.objects.annotatable_by(user).filter(pk=study.pk).exists(),
                        Study.objects.readable_by(user).filter(pk=study.pk).exists())
            assert desk_for(user, study.slug).may_annotate == expected[0], (user.username, study.slug)
            decided = STUDY.first(slug=study.slug, user_id=None if user.is_superuser else user.pk,
                                  superuser=user.is_superuser)  # as study_for asks
            assert (decided["may_annotate"], decided["may_read"]) == expected, (user.username, study.slug)
    assert desk_for(people["admin"], "no-such-slug").study is None
    assert study_for(people["root"], listed.slug, "read") == listed  # superusers: a statement naming no user


def test_prepared_statement_takes_new_values_in_the_stand_ins_places():
    """A Prepared statement compiled once returns what the ORM returns for each new set of
    values (ints, strings, datetimes as parameters; a bool picks another statement)."""
    from datetime import timedelta

    from django.utils import timezone

    from annotate.models import Item
    from annotate.prepared import Prepared

    study = make_study(overlap=2)
    make_items(study, 3)
    Item.objects.filter(item_id="item-0001").update(n_assigned=1, is_gold=True)
    now = timezone.now()

    def build(study_id, item_id, after, gold):
        return (Item.objects.filter(study=study_id, item_id__gte=item_id, is_gold=gold, study__created_at__gt=after)
                .order_by("position").values("item_id", "data", "n_assigned"))

    statement = Prepared(build)
    day_ago = now - timedelta(days=1)
    for args in [(study.pk, "item-0000", day_ago, False), (study.pk, "item-0001", day_ago, False),
                 (study.pk, "item-0000", day_ago, True), (study.pk, "item-0000", now, False),
                 (study.pk + 1, "item-0000", day_ago, False)]:
        assert statement.rows(study_id=args[0], item_id=args[1], after=args[2], gold=args[3]) == list(build(*args))
    assert len(statement._compiled[connections["default"]]) == 2  # gold False / True
    with pytest.raises(ValueError, match="not parameters"):
        Prepared(lambda study_id, unused: Item.objects.filter(study=study_id).values("pk")).rows(study_id=1, unused=2)


def test_api_next_reclaims_an_expired_assignment_before_picking():
    """The API door decides access and locks the user in one statement; when that statement
    says expired assignments wait, they are reclaimed in a transaction of their own first,
    so the only slot of the only item goes to the next annotator."""
    from datetime import timedelta

    from django.utils import timezone

    study = make_study(overlap=1)
    make_items(study, 1)
    first = api_door(study, participant=False)
    assert first.post(f"/api/studies/{study.slug}/assignments/next/").status_code == 200
    Assignment.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    second = APIClient()
    second.force_authenticate(make_user("ann2"))
    response = second.post(f"/api/studies/{study.slug}/assignments/next/")
    assert response.status_code == 200
    assert list(Assignment.objects.values_list("annotator__username", flat=True)) == ["ann2"]
    assert study.items.get().n_assigned == 1
