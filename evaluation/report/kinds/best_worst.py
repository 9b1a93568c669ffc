"""The best-worst scaling study's report (statistics.md, "Best-worst and listwise ranking").

One screen = one annotator's `best` and `worst` on one item, with the outputs it showed (the
judgments' shown order: a tuple, or all of the item's candidates). Keys besides the common
ones (agreement on `best` and on `worst` over items; position bias is not tested: its null
of one half is the pairwise kinds'):
- `bws`: {system: {bws_score, ci95, n_shown, n_best, n_worst, n_clusters, ci_method}}
  (evaluation.screens.best_worst.bws_scores: counting, item bootstrap);
- `ranking`, `ranking_detail`, `pairwise_wins`, `pairwise_n`, `intransitivity`: Bradley-Terry
  of the implied pairs (best > every other shown, every other shown > worst), the pairwise
  kinds' rules (report/strengths.py);
- `systems`: the pairwise kinds' per-system table (metric means on the items where the
  system was shown, the `human` row of the implied pairs, wins = items whose majority `best`
  it was), plus `bws` per system;
- `correlations`: per metric, (item, system) units: its score against the system's bws score
  on the item, clustered in items;
- `correlations_system`: each metric's system means against the bws scores (Kendall tau-b,
  Pearson, Spearman over systems); `correlations_ranking`: against the BT strengths;
- `split_half`: Spearman-Brown-corrected split-half reliability of the bws scores over
  annotators (100 seeded splits), with `n` (annotators);
- `n_screens` (screens read), `n_unpaired` (screens left out: no best or worst, or a shown
  order that does not hold both, or best = worst).
"""
from html import escape
from typing import Any

import numpy as np

from evaluation.correlation import correlations
from evaluation.screens.best_worst import BestWorst, bws_scores, counts_by, implied_comparisons, split_half
from evaluation.vocabulary import LOWER_IS_BETTER, TIE

from .. import figures
from ..choice import metric_scores, slot_scores
from ..common import NOMINAL, Question, base_report, clean, clean_list, item_majority, majority_keys, question_rows
from ..correlations import entry, entry_from
from ..inputs import Judgments, ReportInput, objects
from ..markup import figure, interval, num, table
from ..strengths import compared_slots, correlations_ranking, human_part, ranking_part
from ..systems import system_codes, system_wins, systems_table

BEST, WORST = "best", "worst"
REPORT_SCHEMA = {
    "bws": {"type": "object", "additionalProperties": {"type": "object"},
            "description": "system id -> bws_score ((best - worst) / shown), ci95 (bootstrap over items), n_shown, "
                           "n_best, n_worst, n_clusters, ci_method."},
    "split_half": {"type": "object", "description": "value (mean Spearman-Brown-corrected split-half r of the bws "
                                                    "scores over annotators), n, n_splits, n_annotators, n_systems."},
    "n_screens": {"type": "integer", "description": "best-worst screens (one annotator, one item) read."},
}


def screens(inp: ReportInput, js: Judgments, systems: list[str]) -> tuple[BestWorst, int]:
    """(one row per screen with a best and a worst among its shown systems, screens left out)."""
    code_of = {s: k for k, s in enumerate(systems)}
    picks: dict[tuple[int, int], dict[str, Any]] = {}
    for item, coder, question, value, shown in zip(js.item.tolist(), js.coder.tolist(), js.question.tolist(),
                                                    js.value.tolist(), js.shown.tolist()):
        if question in (BEST, WORST):
            screen = picks.setdefault((item, coder), {"shown": shown})
            screen[question] = value
    rows, left_out = [], 0
    for (item, coder), screen in sorted(picks.items()):
        shown = [code_of[p] for p in str(screen["shown"] or "").split("|") if p != TIE and p in code_of]
        if not shown:  # no recorded order: the item's candidates
            shown = [code_of[str(c)] for c in inp.item_candidates(item) if str(c) in code_of]
        best, worst = code_of.get(str(screen.get(BEST)), -1), code_of.get(str(screen.get(WORST)), -1)
        if best in shown and worst in shown and best != worst:
            rows.append((item, coder, shown, best, worst))
        else:
            left_out += 1
    column = [np.array([r[k] for r in rows], dtype=np.int64) for k in (0, 1, 3, 4)]
    return BestWorst(systems, column[0], column[1], [r[2] for r in rows], column[2], column[3]), left_out


def bws_part(bw: BestWorst) -> dict[str, dict[str, Any]]:
    return {s: {k: clean_list(v) if k == "ci95" else clean(v) for k, v in row.items()}
            for s, row in bws_scores(bw).items()}


def bws_correlations(bws: dict[str, Any], systems_keys: dict[str, Any]) -> dict[str, Any] | None:
    """{metric: entry + systems}: each metric's system means (lower-is-better negated) against
    the bws scores, over the systems with both; None below 3 systems."""
    metrics = sorted({m for entry in systems_keys.values() for m in entry.get("metrics", {})})
    out = {}
    for metric in metrics:
        names = [s for s, e in systems_keys.items() if (e.get("metrics", {}).get(metric) or {}).get("mean") is not None
                 and bws.get(s, {}).get("bws_score") is not None]
        if len(names) < 3:
            continue
        sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
        x = np.array([sign * systems_keys[s]["metrics"][metric]["mean"] for s in names])
        y = np.array([bws[s]["bws_score"] for s in names])
        label = f"{'minus ' if sign < 0 else ''}mean {metric} score of the system (items where it was shown)"
        out[metric] = {**entry_from(correlations(x, y, unit="systems"), "system", label,
                                    "bws score of the system ((best - worst) / shown)"), "systems": names}
    return out or None


def item_correlations(inp: ReportInput, bw: BestWorst, slots: dict[str, np.ndarray]) -> dict[str, Any]:
    """{metric: entry}: each (item, system shown on it) as a unit, the metric's score
    (lower-is-better negated) against the system's bws score on that item; clustered in
    items. Metrics with fewer than 3 units are left out."""
    shown, best, worst = counts_by(bw, bw.item, inp.n_items)
    code_of = {s: k for k, s in enumerate(bw.systems)}
    out = {}
    for metric, matrix in sorted(slots.items()):
        sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
        xs, ys, clusters = [], [], []
        for i, row in enumerate(inp.candidates.tolist()):
            for k, candidate in enumerate(row):
                s = code_of.get(str(candidate), -1) if candidate is not None else -1
                if s < 0 or np.isnan(matrix[i, k]) or not shown[i, s]:
                    continue
                xs.append(sign * matrix[i, k])
                ys.append((best[i, s] - worst[i, s]) / shown[i, s])
                clusters.append(i)
        if len(xs) >= 3:
            out[metric] = entry(np.array(xs), np.array(ys), "(item, system)",
                                f"{'minus ' if sign < 0 else ''}{metric} score of the output",
                                "bws score of the output on the item ((best - worst) / shown)", np.array(clusters))
    return out


def build(inp: ReportInput) -> dict[str, Any]:
    counted = Judgments.of(inp, inp.counted())
    # Agreement and annotator statistics as every kind has them; no position-bias test (the
    # pairwise null of 1/2 does not hold for N outputs): the common part reads no shown order.
    unordered = Judgments(**{**counted.__dict__, "shown": objects([""] * len(counted))})
    report, _ = base_report(inp, [Question.single(BEST, NOMINAL), Question.single(WORST, NOMINAL)], BEST, unordered)
    report["position_bias"]["note"] = "not tested: screens show more than two outputs"
    systems = [str(s) for s in system_codes(inp)[0].tolist()]
    bw, left_out = screens(inp, counted, systems)
    report["bws"] = bws_part(bw)
    report["n_screens"], report["n_unpaired"] = len(bw), left_out
    compared = implied_comparisons(bw)
    ranked = ranking_part(compared, left_out)
    majority = item_majority(question_rows(counted, BEST), inp.n_items, inp.value_names, inp.min_votes)
    wins = system_wins(inp, majority.label)
    slots = slot_scores(inp, metric_scores(inp))
    systems_keys = systems_table(inp, wins, slots, compared_slots(inp, compared) if len(compared) else None)
    for system, human in human_part(compared).items():
        systems_keys[system]["human"] = human
    for system, row in systems_keys.items():
        row["bws"] = report["bws"].get(system)
    report.update(majority_keys(majority, inp.item_ids))
    report["systems"] = systems_keys
    report.update(ranked)
    report["ranking_detail"]["comparisons"] = ("implied by each screen (best > every other shown output, every "
                                               "other shown output > worst, best > worst once: 2k - 3 from k shown)")
    report["correlations_ranking"] = correlations_ranking(
        ranked["ranking"], {m: {s: v["metrics"][m]["mean"] for s, v in systems_keys.items() if m in v["metrics"]}
                            for m in slots})
    report["correlations"] = item_correlations(inp, bw, slots)
    report["correlations_system"] = bws_correlations(report["bws"], systems_keys)
    half = split_half(bw)
    report["split_half"] = {**{k: clean(v) for k, v in half.items()}, "n": half["n_annotators"]}
    return report


def html_section(report: dict[str, Any], inp: Any = None) -> str:
    """The bws table and its forest plot (best score on top), and the split-half reliability."""
    bws = report.get("bws") or {}
    names = sorted(bws, key=lambda s: (-(bws[s]["bws_score"] if bws[s]["bws_score"] is not None else -9), s))
    rows = [(s, bws[s]["bws_score"], interval(bws[s]["ci95"]), bws[s]["n_shown"], bws[s]["n_best"],
             bws[s]["n_worst"], bws[s]["n_clusters"]) for s in names]
    cis = [bws[s]["ci95"] or [None, None] for s in names]
    svg = figures.forest("bws-scores", names, [bws[s]["bws_score"] for s in names], [c[0] for c in cis],
                         [c[1] for c in cis], "best-worst score ((best - worst) / shown)")
    alt = "Best-worst scores: " + "; ".join(f"{s} {num(bws[s]['bws_score'])} 95% CI {interval(bws[s]['ci95'])}"
                                            for s in names)
    n_items = max((bws[s]["n_clusters"] for s in names), default=0)
    half = report.get("split_half") or {}
    reliability = (f"Split-half reliability (Spearman-Brown, mean of {half.get('n_splits', 0)} splits of "
                   f"n = {half.get('n', 0)} annotators): {num(half.get('value'))}"
                   + (f" ({escape(str(half['reason']))})" if half.get("reason") else ""))
    return ("<section id=\"best-worst\"><h2>Best-worst scaling</h2>"
            + table(["system", "bws score", "95% CI", "shown", "best", "worst", "items"], rows,
                    f"Counting scores (best - worst) / shown over n = {report.get('n_screens', 0)} screens; "
                    "intervals: bootstrap over items (2,000 resamples, seed 0).")
            + figure("bws-scores", svg, f"Best-worst score of each system (n = {report.get('n_screens', 0)} screens "
                                        f"on up to {n_items} items), best on top. Lines: 95% interval, bootstrap "
                                        "over items (2,000 resamples, seed 0). Dashed line: 0 (as often best as "
                                        "worst).", alt)
            + f"<p>{escape(reliability)}</p></section>")
