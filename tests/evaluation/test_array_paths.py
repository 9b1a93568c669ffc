"""The fast array paths of the report give what the plain ones give: coding a few strings by
comparison, each unit pair once, alpha CI profiles as integers, shared tabulations, the
majority per item index, position bias of a bool array."""
import numpy as np
import pytest

from evaluation.agreement import (
    fleiss_kappa,
    krippendorff_alpha,
    leave_one_out_agreement,
    pairwise_cohen_kappa,
    percent_agreement,
    within_unit_pairs,
    within_unit_pairs_once,
)
from evaluation.alpha_ci import _unique_rows, krippendorff_alpha_ci95
from evaluation.majority import majority
from evaluation.position_bias import position_bias
from evaluation.report.common import Question, coded, item_majority, majority_keys
from evaluation.report.inputs import Judgments, ReportInput, codes_of, objects
from evaluation.tabulate import tabulate, top_three


def _dict_codes(values):
    seen = {}
    for v in values.tolist():
        seen.setdefault(v, len(seen))
    labels = sorted(seen, key=str)
    return labels, [labels.index(v) for v in values.tolist()]


@pytest.mark.parametrize("values", [
    ["b", "a", "b", "c"], [], ["x"], ["b", "a", 1, "1"], [f"s{i % 40}" for i in range(200)],
    ["a"] * 1500 + ["z", "y"], [None, "a", "a"],
])
def test_codes_of_is_the_dict_pass(values):
    labels, codes = codes_of(objects(values))
    want_labels, want_codes = _dict_codes(objects(values))
    assert labels.tolist() == want_labels and codes.tolist() == want_codes


def test_pairs_once_are_the_ordered_pairs_halved():
    group = np.sort(np.random.default_rng(0).integers(0, 50, 400))
    left, right = within_unit_pairs(group)
    once = set(zip(*[a.tolist() for a in within_unit_pairs_once(group)]))
    assert once == {(a, b) for a, b in zip(left.tolist(), right.tolist()) if a < b}


def test_unique_rows_is_np_unique():
    dense = np.random.default_rng(1).integers(0, 5, (3000, 3)).astype(float)
    for got, want in zip(_unique_rows(dense), np.unique(dense, axis=0, return_index=True, return_counts=True)):
        assert np.array_equal(got, want)


def test_shared_counts_give_the_same_statistics():
    rng = np.random.default_rng(2)
    units = np.repeat(np.arange(300), 3)
    coders = np.concatenate([rng.choice(12, 3, replace=False) for _ in range(300)])
    values = rng.integers(0, 3, len(units))
    c = tabulate(units, coders, values)
    args = (units, coders, values)
    assert krippendorff_alpha(*args, counts=c) == krippendorff_alpha(*args)
    assert krippendorff_alpha_ci95(*args, counts=c) == krippendorff_alpha_ci95(*args)
    assert fleiss_kappa(*args, counts=c) == fleiss_kappa(*args)
    assert percent_agreement(*args, counts=c) == percent_agreement(*args)
    assert pairwise_cohen_kappa(*args, 5, counts=c) == pairwise_cohen_kappa(*args, 5)
    assert leave_one_out_agreement(*args, counts=c) == leave_one_out_agreement(*args)


def test_item_majority_is_majority_by_item_id():
    """Ids out of sorting order: the `majority` key is still sorted by id."""
    rng = np.random.default_rng(3)
    ids = [f"i{k}" for k in range(30)]
    j_item = np.repeat(np.arange(30), 3)
    inp = ReportInput(slug="s", kind="pairwise_alignment", config={}, item_ids=ids, is_gold=[False] * 30, gold=None,
                      j_item=j_item, j_annotator=[f"a{k % 3}" for k in range(90)], j_question=["choice"] * 90,
                      j_value=rng.choice(["x", "y", "tie", ""], 90).tolist())
    js = Judgments.of(inp, inp.counted())
    result = item_majority(js, inp.n_items, inp.value_names, 2)
    keep = js.value != ""
    want = majority([ids[i] for i in js.item[keep]], js.value[keep].tolist(), 2)
    assert result.by_id(inp.item_ids) == want.labels
    keys = majority_keys(result, inp.item_ids)
    assert list(keys["majority"]) == sorted(want.labels)
    assert (keys["no_majority"], keys["too_few_votes"]) == (want.no_majority, want.too_few_votes)
    assert coded(js, Question.single("choice", "nominal"), inp.value_names).counts.m.sum() == keep.sum()


def test_position_bias_of_a_bool_array():
    flags = np.random.default_rng(4).random(101) < 0.6
    assert position_bias(flags) == position_bias(flags.tolist())


def test_top_three_dense_is_the_sorted_counts():
    """Few values take the dense path; per unit, counts descending, ties by lower value."""
    rng = np.random.default_rng(5)
    units, values = rng.integers(0, 200, 900), rng.integers(0, 4, 900)
    c = tabulate(units, np.arange(900), values, check_coders=False)
    got = [a.tolist() for a in top_three(c)]
    for u in range(len(c.unit_labels)):
        ranked = sorted(((-k, v) for v, k in zip(c.value[c.unit == u].tolist(), c.count[c.unit == u].tolist())))
        ranked += [(0, -1)] * 3
        want = [ranked[0][1], -ranked[0][0], ranked[1][1], -ranked[1][0], -ranked[2][0]]
        assert [g[u] for g in got] == want
