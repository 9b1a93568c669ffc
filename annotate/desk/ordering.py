"""The order in which an annotator sees the options of one item.

Each kind decides its counterbalancing unit (annotate.kinds: two-candidate kinds balance
the A/B orientation per item, similarity surveys shuffle pairs and texts); this module
gives it a reproducible random source, seeded from (study, item, annotator) under a
SECRET_KEY-derived key (so an annotator cannot work out the order), and turns
the stored order into the Judgment.shown_order string of one question.
"""
import random

from django.db.models import BigIntegerField, ExpressionWrapper, F, Value

from annotate.kinds import get_kind, study_config
from annotate.kinds.base import CANDIDATES_KEY, PAIR_ORDER_KEY  # noqa: F401  (the keys of Assignment.shown_order)
from annotate.secrets import secret


def seeded_rng(*parts):
    """A Random seeded from the given parts (str seeds hash with SHA-512: stable across runs)."""
    return random.Random(":".join(str(p) for p in parts))


ORDER_PRIME = 2_147_483_647  # 2**31 - 1: id -> (id * m + c) mod P permutes ids below P


def item_order_of(seed):
    """The constants (m, c) of a participant's item order: ids are permuted by
    (id * m + c) mod P with m, c drawn from `seed`. Different seeds give different
    permutations (m changes the order, not just its starting point), the same seed the
    same one."""
    rng = seeded_rng("item-order", seed)
    return rng.randrange(1, ORDER_PRIME), rng.randrange(ORDER_PRIME)


def item_order_key(m, c):
    """The order (id * m + c) mod P as a database expression, so the engine still scans
    one query."""
    return ExpressionWrapper((F("id") * Value(m) + Value(c)) % Value(ORDER_PRIME), output_field=BigIntegerField())


def shown_order_for(study, item, annotator_id, previous_orders, study_pairs=None):
    """The full `shown_order` dict for a new assignment of `item` to `annotator_id`.

    `previous_orders` are the shown_order dicts of the item's existing assignments (the
    caller holds the item's row lock, so the counts cannot change underneath);
    `study_pairs` ({(first, second): n} over the study, read under the study's lock) only
    for items whose kind `needs_study_pairs`."""
    rng = seeded_rng(secret("order").hex(), study.pk, item.pk, annotator_id)  # unpredictable without SECRET_KEY
    extra = {} if study_pairs is None else {"study_pairs": study_pairs}
    return get_kind(study.kind).shown_order(item.data, study_config(study), study.randomize_order, rng,
                                            previous_orders, **extra)


def judgment_shown_order(shown_order, question_id):
    """The Judgment.shown_order string for one question: option ids joined with '|'
    ('' for a rating question with no options, e.g. usefulness)."""
    return "|".join(shown_order.get(question_id, []))
