"""The report as one self-contained HTML page (inline CSS and SVG, no external requests)
that a researcher can attach to a paper draft. Numbers have 3 decimals; every figure has a
caption saying what it shows and how it was computed."""
from html import escape

from . import figures
from .inputs import to_float

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0 1rem}th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}figure{margin:1rem 0}figcaption{font-size:.9rem;color:#444;max-width:50rem}
svg{max-width:100%;height:auto}
"""


def num(x, digits=3):
    """A number for people: 3 decimals for floats, plain ints, an en dash for missing."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return escape(str(x))


def table(headers, rows, caption=None, cls=""):
    """An HTML table; cells that are numbers (or None) are right-aligned and formatted."""
    out = [f'<table class="{cls}">' if cls else "<table>"]
    if caption:
        out.append(f"<caption>{escape(caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{escape(str(h))}</th>" for h in headers) + "</tr></thead><tbody>")
    for row in rows:
        cells = []
        for cell in row:
            if cell is None or isinstance(cell, (int, float)):
                cells.append(f'<td class="num">{num(cell)}</td>')
            else:
                cells.append(f"<td>{escape(str(cell))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def figure(fig_id, svg, caption):
    if svg is None:
        return f'<p id="{fig_id}" class="no-figure">No data yet for this figure. {escape(caption)}</p>'
    return f'<figure id="{fig_id}">{svg}<figcaption>{escape(caption)}</figcaption></figure>'


def summary_section(r):
    rows = [("Study", r["study"]), ("Kind", r["kind"]), ("Items", r["n_items"]), ("Gold items", r["n_gold_items"]),
            ("Judgments", r["n_judgments"]), ("Annotators", r["n_annotators"]), ("Complete items", r["complete_items"])]
    if "no_majority" in r:
        rows.append(("Items without a majority", r["no_majority"]))
    if "choice_matches_expert" in r:
        rows.append(("Choices matching the higher ExPerT score", r["choice_matches_expert"]))
    if "usefulness" in r:
        u = r["usefulness"]
        rows += [("Usefulness mean", u["mean"]), ("Usefulness sd", u["sd"]), ("Usefulness n", u["n"])]
    if "egises_hj_skipped" in r:
        rows.append(("EGISES-HJ skipped (document, user pair)s", r["egises_hj_skipped"]))
    b = r["position_bias"]
    rows += [("First-shown rate", b["first_shown_rate"]), ("Position bias n", b["n"]), ("Position bias p", b["p_value"])]
    return '<section id="summary"><h2>Summary</h2>' + table(["", "value"], rows) + "</section>"


def agreement_section(r):
    agreement = r["agreement"]
    rows = [(q, a["level"], a["krippendorff_alpha"], a.get("krippendorff_alpha_ordinal"), a["fleiss_kappa"],
             a["percent_agreement"], a["n_units"]) for q, a in agreement.items()]
    svg = figures.grouped_bars(
        "fig-agreement", list(agreement),
        {"Krippendorff's alpha": [a["krippendorff_alpha"] for a in agreement.values()],
         "Fleiss' kappa": [a["fleiss_kappa"] for a in agreement.values()],
         "percent agreement": [a["percent_agreement"] for a in agreement.values()]},
        "agreement", ylim=(min([0.0] + [a["krippendorff_alpha"] or 0 for a in agreement.values()]), 1.0))
    caption = ("Agreement per question over non-gold items. Krippendorff's alpha uses the coincidence matrix "
               "at the level shown (choices nominal, ratings interval; units with fewer than 2 values are "
               "ignored); Fleiss' kappa uses the units with the most common number of ratings; percent agreement "
               "is the share of agreeing ordered annotator pairs. Missing bars are undefined values.")
    return ('<section id="agreement"><h2>Agreement per question</h2>'
            + table(["question", "level", "alpha", "alpha (ordinal)", "Fleiss kappa", "percent agreement", "units"], rows)
            + figure("fig-agreement", svg, caption) + "</section>")


def alignment_section(r):
    alignment = r.get("alignment") or {}
    rows = [(m, a["alignment"], a["alignment_strict"], a["agree"], a["ties"], a["n"], a["ci95"][0], a["ci95"][1])
            for m, a in alignment.items()]
    metrics = list(alignment)
    svg = figures.bars("fig-alignment", metrics, [alignment[m]["alignment"] for m in metrics], "alignment with majority",
                       lo=[alignment[m]["ci95"][0] for m in metrics], hi=[alignment[m]["ci95"][1] for m in metrics],
                       ylim=(0, 1), reference=0.5)
    caption = ("Alignment of each metric with the human majority: (agree + 0.5 x ties) / n over items that have a "
               "majority and scores for both candidates; the metric picks the candidate with the higher score. "
               "Whiskers: 95% percentile bootstrap interval (2000 resamples of items, seed 0). Dashed line: chance (0.5).")
    comparisons = table(["metric a", "metric b", "McNemar p", "Holm p"],
                        [(c["a"], c["b"], c["p_value"], c["p_holm"]) for c in r.get("metric_comparisons", [])])
    wins = table(["candidate", "win rate"], list(r.get("win_rate", {}).items()))
    return ('<section id="alignment"><h2>Metric alignment with human majority</h2>'
            + table(["metric", "alignment", "strict", "agree", "ties", "n", "CI low", "CI high"], rows)
            + figure("fig-alignment", svg, caption)
            + "<h3>Metric comparisons (exact McNemar, Holm-corrected)</h3>" + comparisons
            + "<h3>Win rate (share of items with a majority won by each candidate)</h3>" + wins + "</section>")


def _rating_counts(value_counts, questions):
    """Pool the counts of rating questions, keyed by the integer rating in ascending order."""
    pooled = {}
    for q in questions:
        for value, n in value_counts.get(q, {}).items():
            x = to_float([value])[0]
            if x == x:
                pooled[x] = pooled.get(x, 0) + n
    return {f"{k:g}": pooled[k] for k in sorted(pooled)}


def ratings_section(r):
    """Rating histograms (usefulness, similarity) or, for choice-only kinds, choice counts."""
    counts = r.get("value_counts", {})
    parts = []
    rating_questions = [q for q, a in r["agreement"].items() if a["level"] != "nominal"]
    if r["kind"] == "similarity_survey":
        svg = figures.histogram("fig-ratings", _rating_counts(counts, rating_questions), "similarity rating")
        parts.append(figure("fig-ratings", svg, "Histogram of all similarity ratings (every pair of every non-gold "
                                                "item, all annotators); 1 = low, 6 = very high similarity."))
    elif rating_questions:
        for q in rating_questions:
            svg = figures.histogram("fig-ratings" if not parts else f"fig-ratings-{q}", _rating_counts(counts, [q]), f"{q} rating")
            parts.append(figure("fig-ratings" if len(parts) == 0 else f"fig-ratings-{q}", svg,
                                f"Histogram of the '{q}' ratings of non-gold items, all annotators."))
    choice_questions = [q for q, a in r["agreement"].items() if a["level"] == "nominal"]
    if choice_questions:
        labels = {}
        for q in choice_questions:
            for value, n in counts.get(q, {}).items():
                labels[value] = labels.get(value, 0) + n
        top = dict(sorted(labels.items(), key=lambda kv: -kv[1])[:20])
        fig_id = "fig-choices" if parts else "fig-ratings"
        svg = figures.histogram(fig_id, top, "chosen option")
        parts.append(figure(fig_id, svg, "Number of non-gold judgments choosing each option, pooled over the choice "
                                         "questions (at most the 20 most chosen options shown)."))
    return '<section id="ratings"><h2>Ratings and choices</h2>' + "".join(parts) + "</section>"


def position_section(r):
    b = r["position_bias"]
    names = [n for n, a in r["annotators"].items() if a["first_shown_rate"] is not None]
    labels = ["all"] + names if b["n"] else []
    values = [b["first_shown_rate"]] + [r["annotators"][n]["first_shown_rate"] for n in names] if b["n"] else []
    svg = figures.bars("fig-position-bias", labels, values, "share choosing the first-shown option",
                       ylim=(0, 1), reference=0.5, colors=[figures.ORANGE] + [figures.BLUE] * len(names) if labels else None)
    caption = (f"Position bias: share of two-option choices (ties and unrecorded orders excluded) that picked the "
               f"option shown first, overall and per annotator; dashed line = 0.5 (no bias). Exact two-sided "
               f"binomial test of the overall rate against 0.5: n = {b['n']}, p = {num(b['p_value'])}.")
    return '<section id="position-bias"><h2>Position bias</h2>' + figure("fig-position-bias", svg, caption) + "</section>"


KAPPA_ROWS = 10


def pairwise_kappa_table(r):
    """The lowest pairwise Cohen's kappas per question (outlier pairs first)."""
    rows = [(q, p["a"], p["b"], p["kappa"]) for q, pairs in r.get("pairwise_kappa", {}).items()
            for p in pairs[:KAPPA_ROWS]]
    if not rows:
        return "<p>No annotator pair shares 10 or more units of one question yet.</p>"
    return table(["question", "annotator a", "annotator b", "Cohen's kappa"], rows,
                 caption=f"Lowest {KAPPA_ROWS} Cohen's kappas per question, over annotator pairs sharing "
                         "at least 10 non-gold items (the full list is in the JSON report).")


def annotators_section(r):
    rows = [(n, a["judgments"], a["median_seconds"], a["gold_accuracy"], a["first_shown_rate"], a.get("loo_agreement"))
            for n, a in r["annotators"].items()]
    return ('<section id="annotators"><h2>Annotators</h2>'
            + table(["annotator", "judgments", "median seconds", "gold accuracy", "first-shown rate",
                     "agreement with leave-one-out majority"], rows)
            + "<h3>Pairwise agreement</h3>" + pairwise_kappa_table(r) + "</section>")


def similarity_section(r):
    mean = table(["pair", "mean similarity"], list(r.get("mean_similarity", {}).items()))
    hj = r.get("egises_hj", {})
    styles = sorted({s for by_style in hj.values() for s in by_style})
    egises = table(["model"] + styles, [[m] + [hj[m].get(s) for s in styles] for m in hj])
    paradox = table(["model", "PX-5", "PX-6"], [(m, num(p.get("PX-5")), num(p.get("PX-6")))
                                                 for m, p in r.get("paradoxes", {}).items()])
    return ('<section id="similarity"><h2>Similarity survey</h2><h3>Mean similarity per pair</h3>' + mean
            + "<h3>EGISES-HJ (lower = more personalized)</h3>" + egises
            + f"<p>Skipped (document, user pair)s without the needed ratings: {num(r.get('egises_hj_skipped'))}</p>"
            + "<h3>Paradoxes (true = the richer contrastive prompt did not personalize more)</h3>" + paradox + "</section>")


def aspects_section(r):
    aspects = r.get("aspects", {})
    rows = []
    for key, a in aspects.items():
        shares = ", ".join(f"{c}: {num(s)}" for c, s in a["majority_share"].items())
        rows.append((key, a["krippendorff_alpha"], shares))
    evaluators = sorted({e for a in aspects.values() for e in a["evaluators"]})
    acc = [[e] + [aspects[k]["evaluators"].get(e, {}).get("accuracy") for k in aspects]
           + [r.get("evaluators_average", {}).get(e)] for e in evaluators]
    strict = [[e] + [aspects[k]["evaluators"].get(e, {}).get("accuracy_strict") for k in aspects] for e in evaluators]
    avg = r.get("evaluators_average", {})
    svg = figures.bars("fig-evaluators", list(avg), list(avg.values()), "mean aspect accuracy", ylim=(0, 1), reference=0.5)
    caption = ("Mean over the aspects of each evaluator's accuracy: the share of human judgments (item, annotator, "
               "aspect) where the evaluator's prediction for that annotator equals the annotator's choice "
               "(unparsed predictions dropped, N/A counted wrong). reviewer_prior predicts each annotator's "
               "earliest other choice position on the same aspect.")
    return ('<section id="aspects"><h2>Aspects</h2>' + table(["aspect", "alpha", "majority share"], rows)
            + "<h3>Evaluator accuracy (lenient)</h3>" + table(["evaluator"] + list(aspects) + ["average"], acc)
            + "<h3>Evaluator accuracy (strict: unparsed counted wrong)</h3>" + table(["evaluator"] + list(aspects), strict)
            + figure("fig-evaluators", svg, caption) + "</section>")


def report_fragment(report, inp=None):
    """The report body (no <html> wrapper): used by the dashboard and by report_html."""
    parts = [summary_section(report), agreement_section(report)]
    if "alignment" in report:
        parts.append(alignment_section(report))
    if report["kind"] == "similarity_survey":
        parts.append(similarity_section(report))
    if report["kind"] == "aspect_pairwise":
        parts.append(aspects_section(report))
    parts += [ratings_section(report), position_section(report), annotators_section(report)]
    return "\n".join(parts)


def report_html(report, inp=None):
    """One self-contained HTML page of the report."""
    title = f"Report: {report['study']} ({report['kind']})"
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{escape(title)}</h1>\n{report_fragment(report, inp)}\n</body></html>\n")
