"""Adaptive pair allocation through the real engine on PostgreSQL (statistics.md,
"Adaptive allocation"; issue 34): a seeded study of 4 systems is worked through one
judgment at a time, and every recorded choice is recomputed from the recorded history with
evaluation.allocation.adaptive's own functions (and one active step from the formulas by
hand), the draw included (its seed is the engine's: SECRET_KEY-derived, per (study, item,
annotator))."""
import random
from collections import Counter

import numpy as np
import pytest

from annotate.desk.assignment import next_assignment
from annotate.desk.ordering import seeded_rng
from annotate.desk.submission import submit
from annotate.models import Assignment, Item, Study
from annotate.secrets import secret
from evaluation.allocation.adaptive import (
    PRIOR_TIE,
    UNIFORM_SHARE,
    allocation_strengths,
    pair_codes,
    pair_probabilities,
)
from tests.factories import add_items, ensure_roles, make_study, make_user

SYSTEMS = ("s0", "s1", "s2", "s3")  # sorted: the engine's system order
STRENGTH = {"s0": 1.5, "s1": 0.5, "s2": -0.5, "s3": -1.5}
MIN_PER_PAIR = 2
K = 6


def adaptive_study(n_items, overlap=1, slug="adaptive", config=None):
    study = make_study(overlap=overlap, slug=slug,
                       config=config or {"allocation": "adaptive", "min_per_pair": MIN_PER_PAIR})
    add_items(study, [(f"q{i:03d}", {"input": f"q{i}", "reference": "r",
                                     "candidates": [{"id": s, "text": f"{s} says {i}"} for s in SYSTEMS]}, None)
                      for i in range(n_items)])
    return study


def work_through(study, people, n, seed=7):
    """n judgments, annotators in turn, each answered before the next is served; the
    winner drawn from Bradley-Terry at STRENGTH (seeded)."""
    rng = random.Random(seed)
    served = []
    for t in range(n):
        user = people[t % len(people)]
        a = next_assignment(study, user)
        assert a is not None
        x, y = a.shown_order["candidates"]
        p = 1 / (1 + np.exp(STRENGTH[y] - STRENGTH[x]))
        submit(a.pk, user, {"choice": x if rng.random() < p else y}, seconds=1.0)
        served.append(a.pk)
    return served


def pair_index(x, y):
    a, b = pair_codes(len(SYSTEMS))
    i, j = sorted((SYSTEMS.index(x), SYSTEMS.index(y)))
    return int(np.flatnonzero((a == i) & (b == j))[0])


def history_before(rows, t):
    """W (S, S) of the judgments of assignments 0..t-1 (all answered), from the DB rows."""
    w = np.zeros((4, 4))
    for a in rows[:t]:
        x, y = a.shown_order["candidates"]
        won = a.judgments.get(question="choice").value
        loser = y if won == x else x
        w[SYSTEMS.index(won), SYSTEMS.index(loser)] += 1
    return w


@pytest.fixture
def people(db):
    ensure_roles()
    return [make_user(f"a{i}") for i in range(3)]


@pytest.mark.django_db
def test_every_choice_is_the_rule_of_the_recorded_history(people):
    """60 judgments, 3 annotators, min_per_pair 2: each assignment's recorded probability is
    pair_probabilities(W before it)[its pair] (1e-12), its pair is the engine's seeded draw
    from those probabilities, the cold start lasts exactly until every pair has 2
    judgments, the active steps follow the largest reduction, every probability is in (0, 1]
    and no annotator has an item twice."""
    study = adaptive_study(80)
    work_through(study, people, 60)
    rows = list(Assignment.objects.filter(study=study).order_by("id").select_related("item"))
    assert len(rows) == 60
    assert len({(a.item_id, a.annotator_id) for a in rows}) == 60  # never an item twice
    key = secret("order").hex()
    a_code, b_code = pair_codes(4)
    cold_steps, active_steps = 0, 0
    for t, a in enumerate(rows):
        w = history_before(rows, t)
        pi, theta = pair_probabilities(w[None], MIN_PER_PAIR)
        pi = pi[0]
        k = pair_index(*a.shown_order["candidates"])
        assert 0 < a.probability <= 1
        assert a.probability == pytest.approx(pi[k], abs=1e-12)
        draw = seeded_rng(key, "pair", study.pk, a.item_id, a.annotator_id).random()
        assert k == int(np.searchsorted(np.cumsum(pi), draw * pi.sum(), side="right"))
        counts = (w + w.T)[a_code, b_code]
        if counts.min() < MIN_PER_PAIR:
            cold_steps += 1
            fewest = counts == counts.min()
            assert np.allclose(pi, (1 - UNIFORM_SHARE) * fewest / fewest.sum() + UNIFORM_SHARE / K)
        else:
            active_steps += 1
            assert not np.isnan(theta).any()
    assert cold_steps >= MIN_PER_PAIR * K and active_steps > 0
    # the cold start ends exactly when every pair has min_per_pair judgments
    first_active = next(t for t in range(60) if (lambda c: c.min())((history_before(rows, t) + history_before(
        rows, t).T)[a_code, b_code]) >= MIN_PER_PAIR)
    assert first_active == cold_steps
    assert len({frozenset(a.shown_order["candidates"]) for a in rows[:first_active]}) == K


@pytest.mark.django_db
def test_one_active_step_by_hand(people):
    """After the cold start (12 judgments), the next assignment's probabilities recomputed
    from the formulas: strengths of W + 1/2 tie per pair, the Laplacian L of n p (1 - p),
    L^+ = (L + J/S)^-1 - J/S, reduction w |L^+ d|^2 / (1 + w d' L^+ d); the target is the
    largest reduction with 0.8 + 0.2 / 6, every other pair 0.2 / 6."""
    study = adaptive_study(40)
    work_through(study, people, 14)
    rows = list(Assignment.objects.filter(study=study).order_by("id"))
    a_code, b_code = pair_codes(4)
    t = next(t for t in range(14) if (history_before(rows, t) + history_before(rows, t).T)[a_code, b_code].min()
             >= MIN_PER_PAIR)
    w = history_before(rows, t)
    # strengths: the BT MLE of W + PRIOR_TIE off the diagonal (checked by its score equations)
    theta = allocation_strengths(w[None])[0]
    wp = w + PRIOR_TIE * (1 - np.eye(4))
    p = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))
    np.testing.assert_allclose(wp.sum(axis=1), ((wp + wp.T) * p).sum(axis=1), atol=1e-8)
    n = w + w.T
    lap = np.zeros((4, 4))
    red = []
    for i, j in zip(a_code, b_code):
        q = n[i, j] * p[i, j] * (1 - p[i, j])
        lap[i, i] += q
        lap[j, j] += q
        lap[i, j] -= q
        lap[j, i] -= q
    cov = np.linalg.inv(lap + np.full((4, 4), 0.25)) - np.full((4, 4), 0.25)
    for i, j in zip(a_code, b_code):
        d = np.zeros(4)
        d[i], d[j] = 1, -1
        wt = p[i, j] * (1 - p[i, j])
        red.append(wt * (cov @ d) @ (cov @ d) / (1 + wt * d @ cov @ d))
    red = np.array(red)
    best = red >= red.max() * (1 - 1e-9)  # pairs tied for the largest share the target
    expected = 0.8 * best / best.sum() + 0.2 / K
    got = rows[t]
    k = pair_index(*got.shown_order["candidates"])
    assert got.probability == pytest.approx(expected[k], abs=1e-12)
    pi, _ = pair_probabilities(w[None], MIN_PER_PAIR)
    np.testing.assert_allclose(pi[0], expected, atol=1e-12)


@pytest.mark.django_db
def test_two_candidate_items_and_balanced_studies(people):
    """In an adaptive study an item of two candidates shows its one pair with probability 1;
    a balanced study records no probability."""
    study = make_study(overlap=1, slug="adaptive-two", config={"allocation": "adaptive"})
    add_items(study, [("two", {"input": "q", "reference": "r",
                               "candidates": [{"id": "s0", "text": "a"}, {"id": "s1", "text": "b"}]}, None)])
    assert next_assignment(study, people[0]).probability == 1.0
    balanced = adaptive_study(3, slug="balanced", config={"allocation": "balanced"})
    assert next_assignment(balanced, people[0]).probability is None
    assert Assignment.objects.get(study=balanced).probability is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("plain_http", "empty_tables_after_module")
@pytest.mark.postgres("row locks: the study row lock orders concurrent adaptive choices")
def test_concurrent_adaptive_choices_keep_the_counts():
    """12 annotators with two racing tabs each work through 20 four-system items x overlap
    3 in an adaptive study (min_per_pair 3): 60 assignments, each item judged by 3 different
    people, item counters equal to the rows, every probability in (0, 1], every pair shown
    and the pairs' counts adding up to the assignments."""
    from tests.test_assignment_concurrency import check_counters, run_together

    ensure_roles()
    people = [make_user(f"c{i:02d}") for i in range(12)]
    study = adaptive_study(20, overlap=3, slug="adaptive-race",
                           config={"allocation": "adaptive", "min_per_pair": 3})

    def work(user):
        while (a := next_assignment(Study.objects.get(pk=study.pk), user)) is not None:
            submit(a.pk, user, {"choice": a.shown_order["candidates"][0]}, seconds=1.0)

    run_together([lambda u=u: work(u) for u in people for _tab in range(2)])
    check_counters()
    rows = list(Assignment.objects.filter(study=study))
    assert len(rows) == 60
    assert set(Item.objects.filter(study=study).values_list("n_completed", flat=True)) == {3}
    assert len({(a.item_id, a.annotator_id) for a in rows}) == 60
    assert all(0 < a.probability <= 1 for a in rows)
    pairs = Counter(frozenset(a.shown_order["candidates"]) for a in rows)
    assert len(pairs) == K and sum(pairs.values()) == 60


def test_history_counts_pairs_both_ways_and_ties_half():
    """history(): n from the ordered shown counts (both orientations), W from the answers: a
    tie half to each side, an answer naming neither shown system nothing."""
    from annotate.desk.adaptive_pairs import history

    systems, w, n = history(["s0", "s1", "s2"], Counter({("s0", "s1"): 2, ("s1", "s0"): 1, ("s1", "s3"): 1}),
                            Counter({("s0|s1", "s0"): 1, ("s1|s0|tie", "tie"): 1, ("s0|s1", "s2"): 1,
                                     ("s1|s3", "s3"): 1}))
    assert systems == ["s0", "s1", "s2", "s3"]
    assert n[0, 1] == n[1, 0] == 3 and n[1, 3] == n[3, 1] == 1 and n.sum() == 8
    assert w[0, 1] == 1.5 and w[1, 0] == 0.5 and w[3, 1] == 1 and w.sum() == 3


@pytest.mark.django_db
def test_outcomes_leave_out_gold_items_and_other_questions(people):
    from annotate.desk.adaptive_pairs import study_outcomes
    from tests.factories import add_judgments

    study = adaptive_study(2)
    add_items(study, [("g", {"input": "q", "reference": "r", "candidates": [{"id": "s0", "text": "a"},
                                                                           {"id": "s1", "text": "b"}]},
                       {"choice": "s0"})])
    add_judgments(study, [("q000", "a0", "choice", "s1", "s0|s1", 1.0), ("g", "a0", "choice", "s0", "s0|s1", 1.0),
                          ("q001", "a0", "usefulness", "3", "", 1.0)])
    assert study_outcomes(study.pk) == Counter({("s0|s1", "s1"): 1})
