"""The assignment engine and the shown order (single-threaded; concurrency has its own file)."""
import hashlib
import hmac
import random
from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from annotate.desk.assignment import NotAllowed, next_assignment, reclaim_expired
from annotate.desk.blinding import blinding_for, secret
from annotate.desk.display import assignment_payload, shown_questions
from annotate.desk.progress import annotator_progress as progress
from annotate.desk.submission import AssignmentGone, submit
from annotate.models import Assignment, Item
from evaluation.report.kinds import ASPECT_PAIRWISE, EXPLANATION_CHOICE, PAIRWISE_ALIGNMENT, SIMILARITY_SURVEY
from tests.factories import make_items, make_study, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]


@pytest.fixture
def many(django_user_model):
    return [make_user(f"a{i:02d}") for i in range(12)]


def answer_all(assignment):
    """Answers every question with its first option / the scale minimum (real ids: the
    engine's own submit, not an annotator door)."""
    answers = {}
    for q in shown_questions(assignment.study, assignment.item.data, assignment.shown_order):
        answers[q["id"]] = q["options"][0] if "options" in q else q["scale"][0]
    return answers


def test_asking_again_returns_the_same_open_assignment(annotators):
    study = make_study()
    make_items(study, 3)
    first = next_assignment(study, annotators[0])
    again = next_assignment(study, annotators[0])
    assert again.pk == first.pk
    assert Item.objects.get(pk=first.item_id).n_assigned == 1


def test_items_closest_to_completion_come_first(many):
    """Overlap 3, three items: annotators 1-3 all get item-0000 (after the first, it has the
    most assignments), the 4th gets item-0001 because item-0000 is full."""
    study = make_study(overlap=3)
    make_items(study, 3)
    got = [next_assignment(study, user).item.item_id for user in many[:4]]
    assert got == ["item-0000", "item-0000", "item-0000", "item-0001"]


def test_overlap_is_never_exceeded_and_nobody_sees_an_item_twice(many):
    """4 annotators, overlap 2, 3 items: exactly 3 * 2 = 6 assignments, each item twice."""
    study = make_study(overlap=2)
    make_items(study, 3)
    for user in many[:4]:
        while (a := next_assignment(study, user)) is not None:
            submit(a.pk, user, answer_all(a), seconds=1)
    per_item = Counter(Assignment.objects.values_list("item__item_id", flat=True))
    assert per_item == {"item-0000": 2, "item-0001": 2, "item-0002": 2}
    pairs = list(Assignment.objects.values_list("item_id", "annotator_id"))
    assert len(pairs) == len(set(pairs)) == 6
    assert sorted(Item.objects.values_list("n_assigned", "n_completed")) == [(2, 2)] * 3


def test_listed_annotators_only(django_user_model, annotators):
    study = make_study()
    make_items(study, 1)
    outsider = make_user("listed-only", role=None)  # not in the annotators group
    study.annotators.add(outsider)
    assert next_assignment(study, outsider) is not None
    with pytest.raises(NotAllowed):
        next_assignment(study, annotators[0])


def test_users_without_the_role_are_refused(django_user_model):
    study = make_study()
    make_items(study, 1)
    with pytest.raises(NotAllowed):
        next_assignment(study, make_user("nobody", role=None))


def test_expired_assignment_returns_its_slot(annotators):
    """Default timeout 30 min: at +29 min the only slot is still taken, at +31 min the
    next request reclaims it and hands the item to someone else."""
    study = make_study(overlap=1)
    assert study.assignment_timeout_minutes == 30
    make_items(study, 1)
    t0 = timezone.now()
    held = next_assignment(study, annotators[0], now=t0)
    assert held.expires_at == t0 + timedelta(minutes=30)
    assert next_assignment(study, annotators[1], now=t0 + timedelta(minutes=29)) is None
    taken = next_assignment(study, annotators[1], now=t0 + timedelta(minutes=31))
    assert taken.item_id == held.item_id
    assert not Assignment.objects.filter(pk=held.pk).exists()
    assert Item.objects.get(pk=held.item_id).n_assigned == 1
    with pytest.raises(AssignmentGone):
        submit(held.pk, annotators[0], {"choice": "m1"}, seconds=3)


def test_reclaim_counts_and_respects_custom_timeout(annotators):
    study = make_study(overlap=3, assignment_timeout_minutes=5)
    make_items(study, 2)
    t0 = timezone.now()
    for user in annotators:
        next_assignment(study, user, now=t0)
    assert Item.objects.get(item_id="item-0000").n_assigned == 3
    assert reclaim_expired(study, now=t0 + timedelta(minutes=4)) == 0
    assert reclaim_expired(study, now=t0 + timedelta(minutes=6)) == 3
    assert Item.objects.get(item_id="item-0000").n_assigned == 0


def test_counterbalancing_overlap_4_is_two_and_two(many):
    study = make_study(overlap=4)
    make_items(study, 1)
    firsts = [next_assignment(study, user).shown_order["candidates"][0] for user in many[:4]]
    assert Counter(firsts) == {"m1": 2, "m2": 2}
    # after every new assignment the two orientations differ by at most one
    for n in range(1, 5):
        c = Counter(firsts[:n])
        assert abs(c["m1"] - c["m2"]) <= 1


def test_counterbalancing_over_many_items_is_exact(many):
    """10 items with overlap 3: every item is shown 2:1 (never 3:0), so over the study
    the A-first count is between 10 and 20 and each item contributes 1 or 2."""
    study = make_study(overlap=3)
    make_items(study, 10)
    for user in many[:3]:
        while (a := next_assignment(study, user)) is not None:
            submit(a.pk, user, answer_all(a), seconds=1)
    for item in Item.objects.all():
        firsts = Counter(a.shown_order["candidates"][0] for a in item.assignments.all())
        assert sorted(firsts.values()) == [1, 2], item.item_id


def test_aspects_share_the_candidate_order_and_tie_stays_last(annotators):
    study = make_study(ASPECT_PAIRWISE, allow_tie=True)
    make_items(study, 1)
    a = next_assignment(study, annotators[0])
    order = a.shown_order["candidates"]
    assert sorted(order) == ["plotA", "plotB"]
    for key in ("interestingness", "adaptability", "surprise", "character", "ending"):
        assert a.shown_order[key] == order + ["tie"]
    payload = assignment_payload(a)
    tokens = blinding_for(a)  # the annotator sees the candidates as tokens, in the shown order
    assert [c["id"] for c in payload["item"]["candidates"]] == [tokens.option(cid) for cid in order]
    assert [q["options"] for q in payload["questions"]] == [[tokens.option(cid) for cid in order] + ["tie"]] * 5
    assert [q["id"] for q in payload["questions"]] == ["interestingness", "adaptability", "surprise",
                                                       "character", "ending"]


def test_fixed_order_when_randomization_is_off(many):
    study = make_study(randomize_order=False, overlap=4)
    make_items(study, 1)
    assert {tuple(next_assignment(study, u).shown_order["candidates"]) for u in many[:4]} == {("m1", "m2")}


def test_similarity_pairs_and_texts_are_shuffled_per_annotator(many):
    study = make_study(SIMILARITY_SURVEY, overlap=12)
    make_items(study, 1)
    orders = []
    for user in many:
        a = next_assignment(study, user)
        payload = assignment_payload(a)
        tokens = blinding_for(a)  # pair ids are tokens for the annotator
        pair_order = a.shown_order["pair_order"]
        assert sorted(pair_order) == ["p1", "p2", "p3", "ref"]
        assert [q["id"] for q in payload["questions"]] == [tokens.question(pid) for pid in pair_order]
        assert [p["id"] for p in payload["item"]["pairs"]] == [tokens.question(pid) for pid in pair_order]
        for shown_pair in payload["item"]["pairs"]:
            pid = tokens.questions[shown_pair["id"]]
            original = {p["id"]: p for p in a.item.data["pairs"]}[pid]["texts"]
            text_order = a.shown_order[pid]
            assert shown_pair["texts"] == [original[int(text_order[0])], original[int(text_order[1])]]
        assert payload["questions"][0]["scale"] == [1, 6]
        orders.append((tuple(pair_order), tuple(tuple(a.shown_order[p]) for p in sorted(pair_order))))
    # 12 annotators, 4! * 2^4 = 384 possible orders: seeded shuffles must not all agree
    assert len(set(orders)) > 6
    # and each annotator's order is reproducible from its seed (under the SECRET_KEY-derived key)
    again = random.Random(f"{secret('order').hex()}:{study.pk}:{a.item.pk}:{many[-1].pk}")
    ids = ["ref", "p1", "p2", "p3"]
    again.shuffle(ids)
    assert ids == list(orders[-1][0])


def test_payload_hides_scores_and_answers(annotators):
    study = make_study(EXPLANATION_CHOICE)
    make_items(study, 1)
    payload = assignment_payload(next_assignment(study, annotators[0]))
    assert set(payload) == {"assignment", "item_id", "item", "questions"}
    for candidate in payload["item"]["candidates"]:
        assert set(candidate) == {"id", "explanation"}
        assert set(candidate["explanation"]) == {"aspects_reference", "aspects_generated", "matches"}
    assert payload["questions"][1] == {"id": "usefulness", "text": "How useful were the explanations for deciding?",
                                       "scale": [1, 5]}
    exp = payload["item"]["candidates"][0]["explanation"]
    assert exp["matches"][0]["reason"] == "Both discuss the film."
    study2 = make_study(PAIRWISE_ALIGNMENT, slug="pw")
    make_items(study2, 1)
    payload2 = assignment_payload(next_assignment(study2, annotators[0]))
    assert set(payload2["item"]) == {"input", "reference", "candidates"}


def expected_gold_draws(study, user, n, rate, key=None):
    """The engine's documented draw: Random("<key>:gold:<study>:<user>:<k>").random() < rate,
    where k counts the items the user was given before and key is HMAC-SHA256(SECRET_KEY,
    "humeval:gold") in hex: reproducible, but not predictable by an annotator."""
    key = key or hmac.new(settings.SECRET_KEY.encode(), b"humeval:gold", hashlib.sha256).hexdigest()
    return [random.Random(f"{key}:gold:{study.pk}:{user.pk}:{k}").random() < rate for k in range(n)]


def test_gold_items_are_mixed_in_at_the_seeded_rate(annotators):
    """40 real + 40 gold items, rate 0.25: the k-th request serves gold exactly when the
    seeded draw says so, and over 40 requests that is about 10."""
    study = make_study(overlap=1, gold_rate=0.25)
    make_items(study, 40)
    make_items(study, 40, gold={"choice": "m1"})
    user = annotators[0]
    served = []
    for _ in range(40):
        a = next_assignment(study, user)
        served.append(a.item.is_gold)
        submit(a.pk, user, {"choice": "m1"}, seconds=2)
    assert served == expected_gold_draws(study, user, 40, 0.25)
    # The rate: the draw depends on the (per-run) SECRET_KEY and the ids, so 40 draws are
    # binomial(40, 0.25) (18 came up once: p = 0.008). Over 4,000 draws of the same sequence
    # the share is 0.25 +- 0.0068 (sd): 0.22-0.28 fails by chance with p < 1e-5.
    assert 0.22 <= sum(expected_gold_draws(study, user, 4000, 0.25)) / 4000 <= 0.28
    # Before: the seed had no secret, so anyone could compute the sequence.
    unkeyed = [random.Random(f"gold:{study.pk}:{user.pk}:{k}").random() < 0.25 for k in range(40)]
    assert served != unkeyed
    assert sum(1 for s in served if not s) == Item.objects.filter(is_gold=False, n_completed=1).count()


def test_the_gold_draw_depends_on_the_secret_key(annotators, settings):
    """Issue 14 item 3: the same study, user and count under another SECRET_KEY draw a
    different sequence, so the sequence cannot be computed without the key."""
    from annotate.desk.assignment import _gold_drawn

    study = make_study(overlap=1, gold_rate=0.5)
    user = annotators[0]
    draws = {}
    for key in ("first-secret-key-" + "x" * 40, "second-secret-key-" + "y" * 40):
        settings.SECRET_KEY = key
        draws[key] = expected_gold_draws(study, user, 64, 0.5)
        assert _gold_drawn(study, user) == draws[key][0]  # the engine draws what the keyed formula says
    assert draws["first-secret-key-" + "x" * 40] != draws["second-secret-key-" + "y" * 40]
    assert Assignment.objects.count() == 0


def test_gold_is_not_capped_by_overlap_and_never_served_alone(many):
    """rate 1, overlap 1, one real and one gold item: each of 3 annotators gets the gold
    item first (gold is not capped); after the only real item is taken, nobody gets gold."""
    study = make_study(overlap=1, gold_rate=1.0)
    make_items(study, 1)
    make_items(study, 1, gold={"choice": "m2"})
    first = [next_assignment(study, u) for u in many[:3]]
    assert [a.item.is_gold for a in first] == [True, True, True]
    for u, a in zip(many[:3], first):
        submit(a.pk, u, {"choice": "m2"}, seconds=1)
    second = next_assignment(study, many[0])
    assert second is not None and not second.item.is_gold
    assert next_assignment(study, many[1]) is None  # real item full: no gold-only work


def test_no_gold_when_rate_is_zero(annotators):
    study = make_study(overlap=1, gold_rate=0.0)
    make_items(study, 5)
    make_items(study, 5, gold={"choice": "m1"})
    user = annotators[0]
    while (a := next_assignment(study, user)) is not None:
        assert not a.item.is_gold
        submit(a.pk, user, {"choice": "m1"}, seconds=1)


def test_progress_counts(annotators):
    """3 real items, overlap 2. ann1 completes one and holds one: done 1, assigned 2,
    total 3, remaining = 1 free item never seen + 1 open = 2."""
    study = make_study(overlap=2)
    make_items(study, 3)
    make_items(study, 2, gold={"choice": "m1"})
    user = annotators[0]
    a = next_assignment(study, user)
    submit(a.pk, user, {"choice": "m1"}, seconds=1)
    next_assignment(study, user)
    assert progress(study, user) == {"done": 1, "assigned": 2, "total": 3, "remaining": 2}
