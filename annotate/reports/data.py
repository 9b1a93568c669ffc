"""Fetch one study into a ReportInput: a handful of set-based reads (items with their
candidate ids, gold answers, judgments, predictions, how items were drawn for humans,
and what the kind's report needs besides), never one query per item.

The columns come from annotate/reports/columns.py (PostgreSQL: parsed texts; elsewhere, or
when a text would not read back exactly: the ORM). Metric scores are Prediction rows (the
importer writes an item's `metric_scores` as such; ReportInput splits them off); nothing
else of an item's JSON is read but its candidate ids and the keys its kind's report names.
Annotators below the study's quality thresholds are found from the same judgment columns
(annotate/reports/quality.py) and their rows dropped here.
"""
import numpy as np
from django.db import connection
from django.db.models import Q

from annotate.kinds import get_kind, study_config
from annotate.kinds.base import NEEDS_EXPERT_SCORES, NEEDS_SUBMIT_TIMES
from annotate.models import Assignment, Item
from annotate.reports.columns import reader
from annotate.reports.quality import gold_of, kept_rows
from annotate.reports.retest import retest_pairs
from annotate.studies.allocation import is_adaptive, min_per_pair_of, policy_of
from evaluation.report.inputs import ReportInput


class _Index:
    """Maps item primary keys to positions in the item arrays (vectorized)."""

    def __init__(self, pks):
        self.pks = np.asarray(pks, dtype=np.int64)
        self.order = np.argsort(self.pks)

    def __call__(self, pks):
        pks = pks if isinstance(pks, np.ndarray) else np.fromiter(pks, dtype=np.int64)
        return self.order[np.searchsorted(self.pks[self.order], pks)] if len(pks) else np.zeros(0, np.int64)

    def known(self, pks):
        """Mask of the `pks` that are items of the report (one imported since is not)."""
        pks = np.asarray(pks, dtype=np.int64)
        return np.isin(pks, self.pks) if len(pks) else np.zeros(0, dtype=bool)


def _gold_answers(golds, pks, index):
    """The gold answer of each item (None for non-gold items), in item order."""
    gold = [None] * len(pks)
    gold_pks = np.fromiter(golds, dtype=np.int64, count=len(golds))
    gold_pks = gold_pks[index.known(gold_pks)]
    for position, pk in zip(index(gold_pks).tolist(), gold_pks.tolist()):
        gold[position] = golds[pk]
    return gold


def _known_times(time):
    """Submit times with the unknown ones (NaN) after every known one, in row order."""
    unknown = np.isnan(time)
    if unknown.any():
        time = time.copy()
        time[unknown] = (np.nanmax(time) if (~unknown).any() else 0.0) + 1 + np.flatnonzero(unknown)
    return time


def merged_candidates(study, index):
    """{(item index, candidate id): also_systems} of the study's merged candidates (one
    shown output standing for several systems: evaluation/report/merged.py)."""
    items = Item.objects.filter(study=study)
    if connection.vendor == "postgresql":  # jsonb containment: only the items that have one
        items = items.filter(data__contains={"candidates": [{"also_systems": []}]})
    rows = [(pk, c) for pk, cands in items.values_list("pk", "data__candidates")
            if isinstance(cands, list) for c in cands if isinstance(c, dict) and c.get("also_systems")]
    known = index.known([pk for pk, _ in rows])
    rows = [row for row, ok in zip(rows, known.tolist()) if ok]
    positions = index([pk for pk, _ in rows]).tolist()
    return {(pos, c["id"]): list(c["also_systems"]) for pos, (_, c) in zip(positions, rows)}


def allocation_of(study, index):
    """ReportInput.allocation (evaluation/report/allocation.py): the policy, the assignments
    that showed each system pair, and in an adaptive study each (item index, annotator)'s
    recorded probability (first assignments: a retest repeat shows the pair again). None
    (no `allocation` key) unless the study's header set `allocation` or `stop_when`."""
    if not {"allocation", "stop_when"} & set(study.config or {}):
        return None  # the key is there for studies whose header chose a policy or a stopping target
    adaptive = is_adaptive(study.config)
    rows = (Assignment.objects.filter(study=study, repeat_of__isnull=True, item__is_gold=False).order_by()
            .values_list("item_id", "annotator__username", "probability", "shown_order__candidates"))
    shown: dict = {}
    weighed = []  # (item pk, annotator, probability)
    for item_pk, username, p, pair in rows.iterator(chunk_size=10000):
        if isinstance(pair, list) and len(pair) == 2 and pair[0] != pair[1]:
            key = "|".join(sorted(map(str, pair)))
            shown[key] = shown.get(key, 0) + 1
        if adaptive and p is not None:
            weighed.append((item_pk, username, p))
    pks = np.array([pk for pk, _, _ in weighed], dtype=np.int64)
    known = index.known(pks)
    positions = iter(index(pks[known]).tolist())
    probability = {(next(positions), name): p for (_, name, p), ok in zip(weighed, known.tolist()) if ok}
    return {"policy": policy_of(study.config), "min_per_pair": min_per_pair_of(study.config) if adaptive else None,
            "shown": dict(sorted(shown.items())), "probability": probability}

def offer_columns(study, index, n):
    """(offered, offer_probability) per item position (report/ppi/part.py): one query that
    reads only the items drawn for humans or not offered (none in a study without a draw),
    the others keep the defaults (offered, no probability)."""
    offered, probability = np.ones(n, dtype=bool), np.full(n, np.nan)
    rows = list(Item.objects.filter(study=study).filter(Q(offered=False) | Q(offer_probability__isnull=False))
                .values_list("pk", "offered", "offer_probability"))
    rows = [row for row, ok in zip(rows, index.known([r[0] for r in rows]).tolist()) if ok]
    if rows:
        at = index([r[0] for r in rows])
        offered[at] = [r[1] for r in rows]
        probability[at] = [np.nan if r[2] is None else r[2] for r in rows]
    return offered, probability


def fetch_report_input(study, min_votes=None, include_flagged=False):
    """The ReportInput of `study`: items with their candidate ids, judgments, predictions
    and what its kind's report needs (StudyKind.report_needs, report_item_keys).
    Annotators below the study's quality thresholds (annotate/reports/quality.py) are left out and
    listed in `excluded_annotators`, unless `include_flagged`."""
    kind = get_kind(study.kind)
    columns = reader()
    items = columns.items(study, kind.candidates_key, kind.report_item_keys)
    index = _Index(items.pk)
    golds = gold_of(study)
    js = columns.judgments(study, NEEDS_SUBMIT_TIMES in kind.report_needs)
    keep, excluded = (np.ones(len(js.item_pk), dtype=bool), {}) if include_flagged else kept_rows(study, js, golds)
    js = js.where(keep & index.known(js.item_pk))
    preds = columns.predictions(study)
    preds_known = index.known(preds.item_pk)
    offered, offer_probability = offer_columns(study, index, len(items.pk))
    e_pk, e_candidate, e_value = columns.expert_scores(study) if NEEDS_EXPERT_SCORES in kind.report_needs \
        else (np.zeros(0, np.int64), [], [])
    return ReportInput(
        slug=study.slug, kind=kind.name, config=kind.report_config(study_config(study)),
        item_ids=items.item_id, is_gold=items.is_gold, gold=_gold_answers(golds, items.pk, index),
        c_item=items.cand_item, c_id=items.cand_id, item_data=items.data,
        j_item=index(js.item_pk), j_annotator=js.annotator,
        j_question=js.question, j_value=js.value, j_shown=js.shown,
        j_seconds=js.seconds, j_time=None if js.time is None else _known_times(js.time),
        e_item=index(e_pk), e_candidate=e_candidate, e_value=e_value,
        p_item=index(preds.item_pk[preds_known]), p_evaluator=preds.evaluator[preds_known],
        p_annotator=preds.annotator[preds_known], p_question=preds.question[preds_known],
        p_value=preds.value[preds_known],
        annotations_per_item=study.annotations_per_item,
        complete_items=Item.objects.complete_in(study).count(),
        min_votes=study_min_votes(study.config, min_votes),
        excluded_annotators=excluded,
        merged=merged_candidates(study, index) if kind.candidates_key == "candidates" else None,
        retest_pairs=retest_pairs(study), max_flip_rate=(study.quality or {}).get("max_flip_rate"),
        allocation=allocation_of(study, index) if kind.candidates_key == "candidates" else None,

        item_offered=offered, item_offer_probability=offer_probability,
    )


def study_min_votes(config, override=None):
    """`override` if given, else the study setting `min_votes` (statistics.md, "Majority
    label"), default 2."""
    value = (config or {}).get("min_votes", 2) if override is None else override
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return 2


def study_report(study, fmt="json", min_votes=None, include_flagged=False):
    """(report dict, rendered text) of `study` in `fmt`."""
    from evaluation.report import build_report, render

    inp = fetch_report_input(study, min_votes, include_flagged)
    report = build_report(inp)
    return report, render(report, inp, fmt)
