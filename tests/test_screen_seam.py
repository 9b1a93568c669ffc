"""The seam for kinds that show several outputs on one screen (issue 33): labels and keys
come from the kind (pairwise kinds keep 1/A, 2/B, 3/T and "Response A/B"), an all-shown
kind records a balanced permutation of every shown candidate, and the cross-answer hook
defaults to accepting."""
import random

from annotate.kinds import get_kind
from annotate.kinds.all_shown import AllShownKind, balanced_permutation, set_counts
from annotate.kinds.base import CANDIDATES_KEY
from evaluation.report.kinds import ASPECT_PAIRWISE, PAIRWISE_ALIGNMENT


class Three(AllShownKind):
    """An all-shown kind with one choice question, for the base's behaviour alone."""
    name = "three_test"

    def questions(self, config, item_data):
        return [{"id": "pick", "text": "?", "options": [c["id"] for c in item_data["candidates"]]}]


def test_pairwise_kinds_keep_their_labels_and_keys():
    for name in (PAIRWISE_ALIGNMENT, ASPECT_PAIRWISE):
        kind = get_kind(name)
        noun = kind.option_noun
        assert [kind.option_label(i, o) for i, o in enumerate(["x", "y", "tie"])] == [f"{noun} A", f"{noun} B", "Tie"]
        assert [kind.option_keys("choice", i, o) for i, o in enumerate(["x", "y", "tie"])] == [
            ("1", "a"), ("2", "b"), ("3", "t")]
        assert kind.key_help({}) is None
        assert kind.answers_error({"choice": "m1"}, {}, {}) is None
        assert kind.screen_size({}, {"candidates": [{"id": "a"}, {"id": "b"}, {"id": "c"}]}) == 2
        assert (kind.allocation({}, 2), kind.allocation({}, 3)) == ("fixed", "balanced (least-shown pair first)")


def test_all_shown_labels_run_to_h_and_keys_by_position():
    kind = Three()
    assert [kind.option_label(i, f"o{i}") for i in range(8)] == [f"Output {c}" for c in "ABCDEFGH"]
    assert [kind.option_keys("pick", i, f"o{i}") for i in range(3)] == [("1",), ("2",), ("3",)]


def test_balanced_permutation_gives_each_candidate_each_position_equally():
    """2n assignments of n candidates (n = 3, 4, 8; several seeds): every candidate is shown in
    every position exactly twice (8 candidates: the first position, which goes first)."""
    for ids in (["a", "b", "c"], ["a", "b", "c", "d"], list("abcdefgh")):
        for seed in range(5):
            orders, rng = [], random.Random(seed)
            for _ in range(2 * len(ids)):
                orders.append({CANDIDATES_KEY: balanced_permutation(ids, orders, rng)})
            for position in range(len(ids) if len(ids) <= 6 else 1):
                at = [o[CANDIDATES_KEY][position] for o in orders]
                assert sorted(at) == sorted(ids * 2), (ids, seed, position)
            assert all(sorted(o[CANDIDATES_KEY]) == ids for o in orders)


def test_all_shown_shown_order_lists_every_candidate_and_the_options_follow_it():
    kind = Three()
    item = {"candidates": [{"id": i, "text": i} for i in ("m1", "m2", "m3", "m4")]}
    shown = kind.shown_order(item, {}, True, random.Random(1), [])
    assert sorted(shown[CANDIDATES_KEY]) == ["m1", "m2", "m3", "m4"]
    assert shown["pick"] == shown[CANDIDATES_KEY]
    assert kind.shown_item(item, shown) is item  # all shown: the item itself
    assert kind.shown_order(item, {}, False, random.Random(1), [])[CANDIDATES_KEY] == ["m1", "m2", "m3", "m4"]
    assert kind.example_answers([{"id": "best", "options": ["x", "y"]}, {"id": "worst", "options": ["x", "y"]}]) == {
        "best": "x", "worst": "y"}


def test_set_counts_count_shown_sets_whatever_their_order():
    assert set_counts([(["b", "a", "c"], 2), (["a", "c", "b"], 1), (["a", "d", "c"], 1), (None, 3)]) == {
        ("a", "b", "c"): 3, ("a", "c", "d"): 1}
