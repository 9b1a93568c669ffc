"""(item, shown pair) units for the pairwise sections of a study whose items hold more than
two candidates (studies.md, "More than two systems"; issue 22).

Each judgment of such an item compared the two systems it showed, so the sections written
for two candidates per item (majority, alignment of metric picks, item-level correlations,
agreement, annotators against the others, explanation and aspect sections) read a *unit*
(item, pair) as they read an item: `pair_view` returns a ReportInput whose items are those
units, each holding the pair's two candidates in item order, with the item's judgments of
that pair, its scores of the two candidates, and its predictions (a predicted candidate
outside the pair says nothing about it and is left out). A judgment without a recorded
pair takes the pair of the same annotator's other judgments of the item (one screen shows
one pair), else it is left out. Items with at most two candidates stay one unit under
their own id; a study where every item has at most two candidates is returned unchanged,
so its report does not move. Units of a pair are named "<item id> [<a> vs <b>]".

Header counts, the per-system table and the strengths read the real items (the strengths'
bootstrap resamples items, never units).
"""
from typing import Any

import numpy as np

from evaluation.vocabulary import TIE

from .inputs import ReportInput, codes_of, objects


def needs_pairs(inp: ReportInput) -> bool:
    return bool(len(inp.c_item)) and int(np.bincount(inp.c_item).max()) > 2


def _label_codes(inp: ReportInput) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
    """({label: code} over candidate ids, each candidate row's slot in its item, each
    candidate row's label code)."""
    labels, code = codes_of(objects([str(c) for c in inp.c_id.tolist()]))
    code_of = {str(label): k for k, label in enumerate(labels.tolist())}
    return code_of, inp.c_slot, code


def pair_view(inp: ReportInput) -> ReportInput:
    """`inp` itself unless an item has more than two candidates; else the unit view (module
    docstring)."""
    if not needs_pairs(inp):
        return inp
    n_cand = np.bincount(inp.c_item, minlength=inp.n_items)
    code_of, slot, c_code = _label_codes(inp)
    n_labels = len(code_of) + 1
    slot_of = np.full(inp.n_items * n_labels, -1, dtype=np.int64)  # (item, label) -> slot
    slot_of[inp.c_item * n_labels + c_code] = slot
    # Each judgment's pair of slots, from its shown order.
    orders, order_code = codes_of(inp.j_shown)
    parsed = [[code_of.get(p, -1) for p in str(o or "").split("|") if p != TIE and p in code_of]
              for o in orders.tolist()]
    first = np.array([p[0] if len(p) >= 2 else -1 for p in parsed], dtype=np.int64)[order_code]
    second = np.array([p[1] if len(p) >= 2 else -1 for p in parsed], dtype=np.int64)[order_code]
    sa = np.where(first >= 0, slot_of[inp.j_item * n_labels + np.maximum(first, 0)], -1)
    sb = np.where(second >= 0, slot_of[inp.j_item * n_labels + np.maximum(second, 0)], -1)
    multi = n_cand[inp.j_item] > 2
    lo, hi = np.minimum(sa, sb), np.maximum(sa, sb)
    width = max(int(n_cand.max()), 2)  # a unit key is item * width^2 + slot_a * width + slot_b
    key = np.where(multi, np.where((lo >= 0) & (lo != hi), (inp.j_item * width + lo) * width + hi, -1),
                   inp.j_item * width * width + 1)
    key = _borrow_screen_pairs(inp, key, multi)
    whole = np.flatnonzero(n_cand <= 2) * width * width + 1  # every item of <= 2 candidates is a unit
    units = np.unique(np.concatenate([whole, key[key >= 0]]))
    unit_item = units // (width * width)
    unit_lo, unit_hi = (units % (width * width)) // width, units % width
    is_multi = n_cand[unit_item] > 2
    keep = key >= 0
    j_unit = np.searchsorted(units, key[keep])
    # Candidates of each unit: the item's two (whole items) or the pair's, in item order.
    cand = inp.candidates
    c_first = np.where(is_multi, cand[unit_item, np.where(is_multi, unit_lo, 0)], cand[unit_item, 0])
    c_second = np.where(is_multi, cand[unit_item, np.where(is_multi, unit_hi, 1)], cand[unit_item, 1])
    c_rows = np.stack([c_first, c_second], axis=1)
    present = c_rows != None  # noqa: E711 (elementwise)
    c_item_new = np.nonzero(present)[0]
    c_id_new = objects(c_rows[present].tolist())
    ids = [str(inp.item_ids[i]) if not m else f"{inp.item_ids[i]} [{a} vs {b}]"
           for i, m, a, b in zip(unit_item.tolist(), is_multi.tolist(), c_first.tolist(), c_second.tolist())]
    # Rows on items spread to the units of their item (for multi items: those holding the row's candidate).
    starts = np.searchsorted(unit_item, np.arange(inp.n_items))
    ends = np.searchsorted(unit_item, np.arange(inp.n_items), side="right")

    def spread(item: np.ndarray, label: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(source row, unit) for rows on items; `label`: the row's candidate (object), or
        None for rows that go to every unit of their item."""
        count = ends[item] - starts[item]
        source = np.repeat(np.arange(len(item)), count)
        offset = np.arange(len(source)) - np.repeat(np.cumsum(count) - count, count)
        unit = starts[item][source] + offset
        if label is not None and len(source):
            text = objects([str(x) for x in label.tolist()])
            lab = np.array([code_of.get(x, -1) for x in text.tolist()], dtype=np.int64)[source]
            s = np.where(lab >= 0, slot_of[item[source] * n_labels + np.maximum(lab, 0)], -1)
            # a row naming a candidate of the item goes to the units holding it; one naming none
            # (N/A, tie, an unparsed answer) to every unit of its item
            on_item = s >= 0
            ok = ~is_multi[unit] | ~on_item | (s == unit_lo[unit]) | (s == unit_hi[unit])
            source, unit = source[ok], unit[ok]
        return source, unit

    s_src, s_unit = spread(inp.s_item, inp.s_candidate)
    e_src, e_unit = spread(inp.e_item, inp.e_candidate)
    other = ~inp.p_is_score
    p_rows = np.flatnonzero(other)
    p_label = np.where(inp.p_on_candidate[p_rows], inp.p_question[p_rows], inp.p_value[p_rows])
    p_src, p_unit = spread(inp.p_item[p_rows], objects(p_label.tolist()))
    p_src = p_rows[p_src]
    gold = list(inp.gold)
    data = list(inp.item_data)
    view = ReportInput(
        slug=inp.slug, kind=inp.kind, config=inp.config, item_ids=objects(ids), is_gold=inp.is_gold[unit_item],
        gold=[gold[i] for i in unit_item.tolist()], c_item=c_item_new, c_id=c_id_new,
        item_data=[data[i] for i in unit_item.tolist()],
        j_item=j_unit, j_annotator=inp.j_annotator[keep], j_question=inp.j_question[keep],
        j_value=inp.j_value[keep], j_shown=inp.j_shown[keep], j_seconds=inp.j_seconds[keep],
        j_time=inp.j_time[keep],
        s_item=s_unit, s_metric=inp.s_metric[s_src], s_candidate=inp.s_candidate[s_src], s_value=inp.s_value[s_src],
        e_item=e_unit, e_candidate=inp.e_candidate[e_src], e_value=inp.e_value[e_src],
        p_item=p_unit, p_evaluator=inp.p_evaluator[p_src], p_annotator=inp.p_annotator[p_src],
        p_question=inp.p_question[p_src], p_value=inp.p_value[p_src],
        annotations_per_item=inp.annotations_per_item, complete_items=inp.complete_items, min_votes=inp.min_votes,
        excluded_annotators=inp.excluded_annotators)
    view.unit_item = unit_item  # type: ignore[attr-defined]  # each unit's real item (clusters)
    view.n_unpaired_rows = int(np.count_nonzero(~keep))  # type: ignore[attr-defined]
    return view


def clusters_of(inp: ReportInput, item: np.ndarray) -> np.ndarray:
    """The real item of each unit index in `item` (the cluster a bootstrap resamples): the
    index itself when `inp` is not a unit view."""
    unit_item = getattr(inp, "unit_item", None)
    return item if unit_item is None else unit_item[item]


def _borrow_screen_pairs(inp: ReportInput, key: np.ndarray, multi: np.ndarray) -> np.ndarray:
    """Rows of multi-candidate items without a pair take the pair of the same (item,
    annotator)'s rows that have one (one screen shows one pair)."""
    missing = multi & (key < 0)
    if not missing.any():
        return key
    screen = inp.j_item * max(len(inp.annotator_names), 1) + inp.j_coder
    known: dict[int, Any] = {}
    for s, k in zip(screen[multi & (key >= 0)].tolist(), key[multi & (key >= 0)].tolist()):
        known.setdefault(s, k)
    out = key.copy()
    rows = np.flatnonzero(missing)
    out[rows] = [known.get(s, -1) for s in screen[rows].tolist()]
    return out
