"""The pair an item of more than two candidates shows in an adaptive study (header
`allocation: "adaptive"`; statistics.md, "Adaptive allocation"; docs/adaptive-allocation.md),
and the probability with which it was drawn (Assignment.probability).

The history the rule reads, under the study's row lock (annotate/desk/assignment.py `_store`):
- the systems: those of the pairs the study has shown, and the item's candidates;
- n (the pairs' counts): the study's assignments that showed the pair, either way round,
  open ones included (a judgment on its way: annotators served at once spread over the
  pairs instead of all taking the same one);
- W (the outcomes): the study's first answers to `choice` on real (non-gold) items, each
  crediting the shown system it names, a tie half to each.
`evaluation.allocation.adaptive.available_pair_probabilities` turns these into pi over the
item's pairs (cold start below `min_per_pair`, then the variance-reduction rule; every pair
of the item keeps uniform_share / k); the pair is drawn from pi with a generator seeded by
(study, item, annotator) under a SECRET_KEY-derived key, and its A/B order is the item's
less shown orientation, as in a balanced study. An item of two candidates in an adaptive
study shows its one pair with probability 1.
"""
from collections import Counter
from itertools import combinations

import numpy as np
from django.db.models import Count

from annotate.desk.ordering import seeded_rng
from annotate.kinds import get_kind, study_config
from annotate.kinds.base import CANDIDATES_KEY
from annotate.models import Item, Judgment
from annotate.secrets import secret
from annotate.studies.allocation import min_per_pair_of
from evaluation.vocabulary import CHOICE_QUESTION, TIE


def study_outcomes(study_id) -> Counter:
    """{(shown order "a|b|...", answer): n} of the study's first answers to `choice` on its
    real items: what W is made of (one grouped statement, read under the study's lock)."""
    gold = Item.objects.filter(study=study_id, is_gold=True).values("pk")  # few: NOT IN is cheaper than a join
    rows = (Judgment.objects.filter(study=study_id, question=CHOICE_QUESTION, repeat_of__isnull=True)
            .exclude(item__in=gold).order_by().values_list("shown_order", "value").annotate(n=Count("pk")))
    return Counter({(shown, value): n for shown, value, n in rows})


def history(candidate_ids, study_pairs: Counter, outcomes: Counter) -> tuple[list, np.ndarray, np.ndarray]:
    """(systems in sorted order, W (S, S) wins of row over column, n (S, S) shown counts)
    from the study's ordered pair counts and its outcomes (module docstring)."""
    systems = sorted({s for pair in study_pairs for s in pair} | set(candidate_ids))
    code = {s: k for k, s in enumerate(systems)}
    w, n = np.zeros((len(systems),) * 2), np.zeros((len(systems),) * 2)
    for (a, b), count in study_pairs.items():
        if a in code and b in code and a != b:
            n[code[a], code[b]] += count
            n[code[b], code[a]] += count
    for (shown, value), count in outcomes.items():
        pair = [p for p in str(shown or "").split("|") if p != TIE][:2]
        if len(pair) != 2 or pair[0] not in code or pair[1] not in code or pair[0] == pair[1]:
            continue
        a, b = code[pair[0]], code[pair[1]]
        if value == TIE:
            w[a, b] += 0.5 * count
            w[b, a] += 0.5 * count
        elif value in (pair[0], pair[1]):
            winner, loser = (a, b) if value == pair[0] else (b, a)
            w[winner, loser] += count
    return systems, w, n


def draw_pair(candidate_ids, study_pairs: Counter, outcomes: Counter, min_per_pair: int, rng) -> tuple[tuple, float]:
    """((a, b) in item order, the probability it was drawn with) for an item of 3 or more
    candidates."""
    from evaluation.allocation.adaptive import available_pair_probabilities, pair_codes

    systems, w, n = history(candidate_ids, study_pairs, outcomes)
    a, b = pair_codes(len(systems))
    on_item = set(candidate_ids)
    available = np.array([systems[i] in on_item and systems[j] in on_item for i, j in zip(a, b)])
    pi = available_pair_probabilities(w, n, available, min_per_pair)
    pick = min(int(np.searchsorted(np.cumsum(pi), rng.random() * pi.sum(), side="right")), len(pi) - 1)
    while pi[pick] <= 0:  # rounding at the top end: the last available pair
        pick -= 1
    chosen = {systems[a[pick]], systems[b[pick]]}
    pair = next(p for p in combinations(candidate_ids, 2) if set(p) == chosen)
    return pair, float(pi[pick])


def adaptive_shown_order(study, item, annotator_id, previous_orders, study_pairs: Counter,
                         outcomes: Counter) -> tuple[dict, float]:
    """(shown_order, probability) of a new assignment of `item` in an adaptive study: the
    drawn pair, in the item's less shown orientation (the kind's two-candidate order)."""
    kind = get_kind(study.kind)
    ids = [c["id"] for c in item.data["candidates"]]
    rng = seeded_rng(secret("order").hex(), "pair", study.pk, item.pk, annotator_id)
    pair, probability = draw_pair(ids, study_pairs, outcomes, min_per_pair_of(study.config), rng)
    shown_data = {**item.data, "candidates": [c for c in item.data["candidates"] if c["id"] in pair]}
    orders = [o for o in previous_orders if set((o or {}).get(CANDIDATES_KEY) or []) == set(pair)]
    order = kind.shown_order(shown_data, study_config(study), study.randomize_order, rng, orders)
    return order, probability
