"""The draws of which items humans are offered (annotate/studies/human_items.py keeps the
settings), recorded on each real item as `Item.offered` and `Item.offer_probability`.

What the two fields mean (the report reads them; docs/statistics.md, "Which items humans
are offered"):
- offer_probability None, offered True: not drawn, every item offered (no setting; gold);
- offer_probability None, offered False: waiting for its draw (judge_uncertain, before the
  evaluator's scores are stored): offered to nobody yet;
- offer_probability p: drawn at random, offered to humans with probability p; offered says
  whether it was. Under `human_share` p = k / n, the exact inclusion probability of a
  simple random sample of k of the n items drawn together (= share when share x n is whole);
  under judge_uncertain each item's own pi_i, drawn independently (Bernoulli).

Draws run inside the import's (or the prediction upsert's) transaction, with the study row
locked, so they are all or nothing and never run twice for the same items. Gold items are
never drawn: attention checks stay offered.
"""
import math

from django.db import transaction

from annotate.models import Item, Prediction, Study
from annotate.studies.human_items import HUMAN_SHARE, JUDGE_UNCERTAIN, settings_of
from evaluation.prediction_powered.human_subset import active_draw, human_subset
from evaluation.prediction_powered.judge_uncertainty import offer_probabilities


def _drawn_before(study) -> int:
    """Real items already drawn in the study: the offset of the next draw's seed."""
    return Item.objects.filter(study=study, is_gold=False, offer_probability__isnull=False).count()


def draw_batch(study: Study, batch) -> None:
    """After a batch's items are inserted: `human_share` draws the batch's new real items
    now (seed + the number of real items drawn before, so the first batch uses the seed
    itself); judge_uncertain holds them back until its evaluator has scored them, and draws
    at once when the batch brought those scores (`metric_scores`)."""
    settings = settings_of(study.config)
    if settings is None:
        return
    new = Item.objects.filter(study=study, batch=batch, is_gold=False)
    if settings["allocation"] == HUMAN_SHARE:
        pairs = list(new.values_list("pk", "item_id"))
        if not pairs:
            return
        chosen = set(human_subset([item_id for _, item_id in pairs], settings["share"],
                                  settings["seed"] + _drawn_before(study)))
        probability = len(chosen) / len(pairs)
        new.update(offered=False, offer_probability=probability)
        Item.objects.filter(pk__in=[pk for pk, item_id in pairs if item_id in chosen]).update(offered=True)
    elif settings["allocation"] == JUDGE_UNCERTAIN:
        new.update(offered=False, offer_probability=None)
        draw_pending(study)


def draw_pending(study: Study) -> int:
    """judge_uncertain: once every real item waiting for its draw has a stored score of the
    study's evaluator (an empty, unparsed one counts: the most uncertain), draw them all:
    pi_i from the evaluator's scores (judge_uncertainty.offer_probabilities over the waiting
    items, budget = human_budget), one Bernoulli(pi_i) each from default_rng(seed + items
    drawn before) over the waiting items sorted by item_id. Returns how many were drawn
    (0: nothing waiting, not a judge_uncertain study, or scores still missing)."""
    settings = settings_of(study.config)
    if settings is None or settings["allocation"] != JUDGE_UNCERTAIN:
        return 0
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").first()  # one draw at a time
        waiting = dict(Item.objects.filter(study=study, is_gold=False, offered=False, offer_probability__isnull=True)
                       .values_list("item_id", "pk"))
        if not waiting:
            return 0
        scores: dict[int, list[str]] = {}
        for item, value in Prediction.objects.filter(item__in=waiting.values(), evaluator=settings["evaluator"],
                                                     annotator="").values_list("item_id", "value"):
            scores.setdefault(item, []).append(value)
        if len(scores) < len(waiting):
            return 0
        ids = sorted(waiting)
        pi = offer_probabilities([_numbers(scores[waiting[item_id]]) for item_id in ids], settings["budget"])
        took = active_draw(pi, settings["seed"] + _drawn_before(study))
        Item.objects.bulk_update([Item(pk=waiting[item_id], offered=offered, offer_probability=p)
                                  for item_id, p, offered in zip(ids, pi.tolist(), took.tolist())],
                                 ["offered", "offer_probability"], batch_size=1000)
        return len(ids)


def _numbers(values: list[str]) -> list[float]:
    """The finite numbers among stored prediction values (empty = unparsed, and any text
    that is not a number, are left out)."""
    out = []
    for value in values:
        try:
            number = float(value)
        except ValueError:
            continue
        if math.isfinite(number):
            out.append(number)
    return out
