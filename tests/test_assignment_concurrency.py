"""Assignment invariants under real concurrency on PostgreSQL: threads with their own
connections ask at the same instant (a barrier releases them together)."""
import threading
from collections import Counter

import pytest
from django.db import connection

from annotate.desk.assignment import next_assignment
from annotate.desk.submission import submit
from annotate.models import Assignment, Item, Judgment, Study
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
    from annotate.participants.participation import LinkIds, join

    study = make_study(overlap=20, recruitment={"platform": "prolific", "places": 4})
    make_items(study, 3)
    people = [join(study, LinkIds("prolific", f"p{i:02d}", "st", f"se{i}"))[0].user for i in range(20)]
    results = run_together([lambda u=u: next_assignment(study, u) for u in people])
    assert sum(r is not None for r in results) == 4
    assert Study.objects.get(pk=study.pk).places_taken == 4
    assert Participant.objects.filter(place_taken_at__isnull=False).count() == 4
    check_counters()


FOUR = ("bm25-k1", "bm25-k4", "contriever", "no-profile")


def four_system_study(n_items):
    """Items with four candidates (issue 22): each assignment shows one of their 6 pairs."""
    from tests.factories import add_items

    study = make_study(overlap=3)
    add_items(study, [(f"q{i}", {"input": f"q{i}", "reference": "r",
                                 "candidates": [{"id": s, "text": f"{s} {i}"} for s in FOUR]}, None)
                      for i in range(n_items)])
    return study


def check_pairs(n_assignments):
    """Every pair of the 4 systems shown n/6 times, give or take one, and each pair's two
    orientations within one of each other (studies.md "More than two systems")."""
    shown = Counter(tuple(order["candidates"]) for order in Assignment.objects.values_list("shown_order", flat=True))
    pairs = {(a, b): shown[(a, b)] + shown[(b, a)] for i, a in enumerate(FOUR) for b in FOUR[i + 1:]}
    assert sum(pairs.values()) == n_assignments
    assert max(pairs.values()) - min(pairs.values()) <= 1, pairs
    assert all(abs(shown[(a, b)] - shown[(b, a)]) <= 1 for a, b in pairs), shown


def test_four_systems_simultaneous_requests_balance_the_pairs(django_user_model):
    """30 annotators ask at the same instant for 10 four-system items with overlap 3: all 30
    served, no item over its overlap, each of the 6 pairs shown 5 times (A/B 2:3 or 3:2)."""
    four_system_study(10)
    people = users(django_user_model, 30)
    results = run_together([lambda u=u: next_assignment(Study.objects.get(), u) for u in people])
    assert sum(r is not None for r in results) == 30
    check_counters()
    check_pairs(30)


def test_four_systems_annotators_working_through_a_study(django_user_model):
    """15 annotators with two racing tabs each (30 threads) work through 20 four-system
    items x overlap 3: 60 judgments, each pair shown 10 times, 5 each way."""
    study = four_system_study(20)
    people = users(django_user_model, 15)

    def work(user):
        while (a := next_assignment(study, user)) is not None:
            submit(a.pk, user, {"choice": a.shown_order["candidates"][0]}, seconds=1.0)

    run_together([lambda u=u: work(u) for u in people for _tab in range(2)])
    check_counters()
    check_pairs(60)
    assert Judgment.objects.count() == 60
    assert set(Item.objects.values_list("n_completed", flat=True)) == {3}
