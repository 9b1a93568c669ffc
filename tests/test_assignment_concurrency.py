"""Assignment invariants under real concurrency on PostgreSQL: threads with their own
connections ask at the same instant (a barrier releases them together)."""
import threading
from collections import Counter

import pytest
from django.db import connection

from annotate.assignment import next_assignment
from annotate.models import Assignment, Item, Judgment
from annotate.submission import submit
from tests.factories import ensure_roles, make_items, make_study, make_user

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("plain_http", "empty_tables_after_module"),
    pytest.mark.postgres("row locks: SELECT ... FOR UPDATE SKIP LOCKED under concurrent requests"),
]


def run_together(workers):
    """Runs each callable in its own thread, all released by one barrier; returns their
    results in order and re-raises the first exception any of them hit."""
    barrier = threading.Barrier(len(workers))
    results, errors = [None] * len(workers), []

    def run(i, work):
        try:
            barrier.wait()
            results[i] = work()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if errors:
        raise errors[0]
    return results


def users(django_user_model, n):
    ensure_roles()
    return [make_user(f"c{i:02d}") for i in range(n)]


def check_counters():
    """Item counters equal the rows, and no item is over its overlap."""
    per_item = Counter(Assignment.objects.values_list("item_id", flat=True))
    done = Counter(Assignment.objects.filter(completed_at__isnull=False).values_list("item_id", flat=True))
    for item in Item.objects.select_related("study"):
        assert item.n_assigned == per_item[item.pk] <= item.study.annotations_per_item
        assert item.n_completed == done[item.pk]


def test_simultaneous_requests_fill_every_slot_and_never_more(django_user_model):
    """30 annotators ask at the same instant for 5 items with overlap 3: exactly 5 * 3 = 15
    get an item (no slot lost to SKIP LOCKED, none over the overlap), 15 get nothing."""
    study = make_study(overlap=3)
    make_items(study, 5)
    people = users(django_user_model, 30)
    results = run_together([lambda u=u: next_assignment(study, u) for u in people])
    served = [r for r in results if r is not None]
    assert len(served) == 15
    assert Counter(a.item_id for a in served) == {item.pk: 3 for item in Item.objects.all()}
    check_counters()


def test_concurrent_annotators_working_through_a_study(django_user_model):
    """8 annotators, each with two browser tabs racing, work until nothing is left:
    20 items x overlap 3 = 60 judgments, each item judged by 3 different people."""
    study = make_study(overlap=3)
    make_items(study, 20)
    people = users(django_user_model, 8)

    def work(user):
        count = 0
        while (a := next_assignment(study, user)) is not None:
            submit(a.pk, user, {"choice": a.shown_order["candidates"][0]}, seconds=1.0)
            count += 1
        return count

    run_together([lambda u=u: work(u) for u in people for _tab in range(2)])
    check_counters()
    pairs = list(Assignment.objects.values_list("item_id", "annotator_id"))
    assert len(pairs) == len(set(pairs)) == 60
    assert set(Item.objects.values_list("n_completed", flat=True)) == {3}
    assert Judgment.objects.count() == 60


def test_one_user_double_request_gets_one_assignment(django_user_model):
    study = make_study(overlap=3)
    make_items(study, 10)
    user = users(django_user_model, 1)[0]
    results = run_together([lambda: next_assignment(study, user) for _ in range(6)])
    assert len({a.pk for a in results}) == 1
    assert Assignment.objects.count() == 1
    check_counters()


def test_simultaneous_double_submit_stores_once(django_user_model):
    study = make_study(overlap=3)
    make_items(study, 1)
    user = users(django_user_model, 1)[0]
    assignment = next_assignment(study, user)
    results = run_together([lambda v=v: submit(assignment.pk, user, {"choice": v}, seconds=2.0)
                            for v in ("m1", "m2") * 4])
    assert sum(1 for _, _, created in results if created) == 1
    assert Judgment.objects.count() == 1
    winner = next(j for _, js, created in results if created for j in js).value
    assert all(js[0].value == winner for _, js, _ in results)
    assert Item.objects.get().n_completed == 1


def test_simultaneous_participants_take_at_most_the_places():
    """20 participants of a study with 4 places ask for their first item at the same
    instant: exactly 4 get one and hold a place (the study's counter re-checked on the row
    it updates), 16 get nothing; the counter equals the participants holding a place."""
    from annotate.models import Participant, Study
    from annotate.participation import LinkIds, join

    study = make_study(overlap=20, recruitment={"platform": "prolific", "places": 4})
    make_items(study, 3)
    people = [join(study, LinkIds("prolific", f"p{i:02d}", "st", f"se{i}"))[0].user for i in range(20)]
    results = run_together([lambda u=u: next_assignment(study, u) for u in people])
    assert sum(r is not None for r in results) == 4
    assert Study.objects.get(pk=study.pk).places_taken == 4
    assert Participant.objects.filter(place_taken_at__isnull=False).count() == 4
    check_counters()
