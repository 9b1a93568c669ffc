"""The per-item CSV table: one row per (item, question) with judgments: the majority,
the count of each value, and each metric's pick / each evaluator's prediction."""
import csv
import io
from collections import Counter

import numpy as np

from evaluation.majority import majority_labels

from .explanation import expert_extra
from .pairwise import CHOICE, metric_picks


def item_table_rows(inp):
    """(header, rows) of the per-item table."""
    keys = list(zip(inp.j_item.tolist(), inp.j_question.tolist()))
    unit_of = {}
    units = np.array([unit_of.setdefault(k, len(unit_of)) for k in keys], dtype=np.int64)
    counts = Counter(zip(units.tolist(), inp.j_value.tolist()))
    values = sorted({v for _, v in counts}, key=lambda v: (not _is_number(v), _as_number(v), v))
    non_gold = ~inp.is_gold[inp.j_item] if len(keys) else np.zeros(0, dtype=bool)
    labels = majority_labels(units[non_gold], inp.j_value[non_gold].astype(str)) if non_gold.any() else {}
    picks = {}
    if inp.kind in ("pairwise_alignment", "explanation_choice"):
        extra = expert_extra(inp) if inp.kind == "explanation_choice" else None
        picks = {m: {(item_id, CHOICE): p for item_id, p in by.items()} for m, by in metric_picks(inp, extra).items()}
    predicted = {}
    for item, evaluator, who, question, value in zip(inp.p_item, inp.p_evaluator, inp.p_annotator, inp.p_question, inp.p_value):
        if not who and question not in inp.candidates[item]:
            predicted.setdefault(str(evaluator), {})[(str(inp.item_ids[item]), question)] = value
    for evaluator, by in predicted.items():
        picks.setdefault(evaluator, {}).update(by)
    metrics = sorted(picks)
    header = (["item_id", "question", "is_gold", "n_judgments", "majority"]
              + [f"n_{v}" for v in values] + [f"pick_{m}" for m in metrics])
    rows = []
    for (item, question), unit in sorted(unit_of.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        item_id = str(inp.item_ids[item])
        n = [counts.get((unit, v), 0) for v in values]
        majority = labels.get(unit) if not inp.is_gold[item] else None
        rows.append([item_id, question, int(inp.is_gold[item]), sum(n), "" if majority is None else majority]
                    + n + [picks[m].get((item_id, question), "") for m in metrics])
    return header, rows


def _is_number(v):
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _as_number(v):
    return float(v) if _is_number(v) else 0.0


def item_table_csv(inp, report=None):
    header, rows = item_table_rows(inp)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()
