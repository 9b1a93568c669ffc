"""The report as one self-contained HTML page (inline CSS and SVG, no external requests)
that a researcher can attach to a paper draft. Numbers have 3 decimals; every table has a
caption saying what each column means, every figure its unit, n and interval, and a figure
that would mean nothing (no data, or nothing defined) is replaced by a sentence saying so."""
from html import escape
from typing import Any

from evaluation.vocabulary import RANKED

from . import figures, ip_probe, retest
from .allocation import allocation_section
from .kinds import REPORT_MODULES
from .markup import Report, figure, interval, num, pval, rating_counts, table
from .ppi.part import html_section as ppi_section
from .ranking_html import aspects_ranking_section, systems_section

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#222}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0 1rem}th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}
caption{caption-side:bottom;text-align:left;font-size:.85rem;color:#444;padding-top:.3rem;max-width:50rem}
td.num{text-align:right;font-variant-numeric:tabular-nums}figure{margin:1rem 0}
figcaption{font-size:.9rem;color:#444;max-width:50rem}
svg{max-width:100%;height:auto}
"""
BOOTSTRAP_NOTE = ("Every bootstrap interval resamples items (the top-level cluster; documents for EGISES-HJ) and is "
                  "the bias-corrected percentile interval, widened for few clusters (quantiles at Phi(2 z0 -+ "
                  "sqrt(C/(C-1)) t(0.975, C-1)) for C clusters); there is none from fewer than 5 clusters or when "
                  "over 10% of the resamples had no defined value.")


def summary_section(r: Report) -> str:
    rows = [("Study", r["study"]), ("Kind", r["kind"]), ("Items", r["n_items"]), ("Gold items", r["n_gold_items"]),
            ("Judgments", r["n_judgments"]), ("Annotators", r["n_annotators"]), ("Complete items", r["complete_items"]),
            ("Minimum votes for a majority", r.get("min_votes"))]
    skipped = r.get("skipped") or {}
    if skipped.get("n"):
        reasons = ", ".join(f"{k}: {n}" for k, n in skipped.get("by_reason", {}).items())
        rows.append(("\"Can't judge\" skips (left out of every statistic)", f"{skipped['n']} ({reasons})"))
    for key, label in (("no_majority", "Items without a majority (top count shared)"),
                       ("too_few_votes", "Items with fewer votes than the minimum (no majority)"),
                       ("tie_majority", "Items whose majority is 'tie' (left out of alignment)")):
        if key in r:
            rows.append((label, r[key]))
    if r.get("excluded_annotators"):
        rows.append(("Annotators left out (below the study's quality thresholds)",
                     "; ".join(f"{name} ({why})" for name, why in r["excluded_annotators"].items())))
    if r.get("majority_votes"):
        rows.append(("Items with a majority, by number of votes",
                     ", ".join(f"{k} votes: {v}" for k, v in r["majority_votes"].items())))
    if "choice_matches_expert" in r:
        d = r.get("choice_matches_expert_detail") or {}
        rows.append(("Choices matching the higher ExPerT score (95% CI over items; judgments, items)",
                     f"{num(r['choice_matches_expert'])} {interval(d.get('ci95'))} "
                     f"(n = {d.get('n', 0)} judgments, {d.get('n_items', 0)} items)"))
    if "usefulness" in r:
        u = r["usefulness"]
        rows += [("Usefulness mean (95% CI over items)", f"{num(u['mean'])} {interval(u.get('ci95'))}"),
                 ("Usefulness sd", u["sd"]), ("Usefulness n (ratings, items)", f"{u['n']}, {u.get('n_items', 0)}")]
    caption = ("Counts over all items; every statistic below leaves gold (attention-check) items out. A majority is "
               "the value chosen by strictly more non-gold judgments than any other, on items with at least the "
               "minimum number of votes (report --min-votes N, or the study setting min_votes; default 2). "
               f"{BOOTSTRAP_NOTE}")
    return '<section id="summary"><h2>Summary</h2>' + table(["", "value"], rows, caption) + "</section>"


def agreement_section(r: Report) -> str:
    agreement = r["agreement"]
    rows = [(q, a["level"], a["krippendorff_alpha"], interval(a.get("krippendorff_alpha_ci95")),
             a.get("n_clusters"), a.get("dropped_resamples"),
             a.get("krippendorff_alpha_ordinal"), a["fleiss_kappa"], a["fleiss_n_units"], a["percent_agreement"],
             a["n_units"]) for q, a in agreement.items()]
    caption = ("One row per question with at least 2 pairable units (units = items; for a similarity survey, "
               "(item, pair)). alpha: Krippendorff's alpha at the level shown (choices nominal, ratings interval), "
               "over units with 2 or more values. alpha 95% CI: bootstrap over items, 1,000 resamples (seed 0), "
               "each recomputing observed and expected disagreement; a similarity survey's (item, pair) units are "
               "resampled with their item ('items resampled'); resamples where alpha is undefined are dropped and "
               "counted ('dropped'). alpha (ordinal): the rating "
               "questions at the ordinal level. Fleiss' kappa: generalised to a varying number of ratings per unit, "
               "over the units with 2 or more ratings ('Fleiss units'). Percent agreement: mean share of agreeing "
               "ordered annotator pairs per unit. An en dash is an undefined value (e.g. all values identical) or "
               f"no interval. {BOOTSTRAP_NOTE}")
    defined = [q for q, a in agreement.items() if a["krippendorff_alpha"] is not None]
    svg = None
    if defined:
        lows = [agreement[q]["krippendorff_alpha_ci95"][0] if agreement[q]["krippendorff_alpha_ci95"] else None
                for q in defined]
        highs = [agreement[q]["krippendorff_alpha_ci95"][1] if agreement[q]["krippendorff_alpha_ci95"] else None
                 for q in defined]
        svg = figures.bars("fig-agreement", defined, [agreement[q]["krippendorff_alpha"] for q in defined],
                           "Krippendorff's alpha", lo=lows, hi=highs,
                           ylim=(min([0.0] + [v for v in lows if v is not None]), 1.0))
    n_text = ", ".join(f"{q}: n = {agreement[q]['n_units']} units" for q in defined) or "none defined"
    fig_caption = (f"Krippendorff's alpha per question ({n_text}); whiskers: 95% bootstrap interval over items "
                   "(1,000 resamples, seed 0). Questions whose alpha is undefined are not drawn.")
    return ('<section id="agreement"><h2>Agreement per question</h2>'
            + table(["question", "level", "alpha", "alpha 95% CI", "items resampled", "dropped", "alpha (ordinal)",
                     "Fleiss' kappa", "Fleiss units", "percent agreement", "units"], rows, caption)
            + figure("fig-agreement", svg, fig_caption) + "</section>")


def alignment_section(r: Report) -> str:
    alignment = r.get("alignment") or {}
    rows = [(m, a["alignment"], interval(a["ci95"]), a["alignment_strict"], interval(a["ci95_strict"]), a["agree"],
             a["ties"], a["n"]) for m, a in alignment.items()]
    caption = ("n: items with a human majority for one candidate (items whose majority is 'tie', or that have no "
               "majority or fewer votes than the minimum, are left out) and scores for both candidates. The metric "
               "picks the candidate with the higher score, a tie on equal scores. alignment (half-credit) = (agree + "
               "0.5 x ties) / n; strict = agree / n. 95% CI: Wilson score interval over items at x = agree + 0.5 "
               "ties (half-credit) or x = agree (strict); none below 5 items.")
    metrics = [m for m in alignment if alignment[m]["n"]]
    cis = [alignment[m]["ci95"] or [None, None] for m in metrics]
    svg = figures.bars("fig-alignment", metrics, [alignment[m]["alignment"] for m in metrics],
                       "alignment with majority", lo=[c[0] for c in cis], hi=[c[1] for c in cis],
                       ylim=(0, 1), reference=0.5) if metrics else None
    n_text = ", ".join(f"{m}: n = {alignment[m]['n']}" for m in metrics) or "no metric has scored items with a majority"
    fig_caption = (f"Half-credit alignment of each metric with the human majority over items ({n_text}). Whiskers: "
                   "95% Wilson score interval over items, none below 5 items (not a percentile bootstrap, which "
                   "undercovers at small n). Dashed line: chance (0.5).")
    comparisons = table(["metric a", "metric b", "n", "only a agrees", "only b agrees", "McNemar p", "Holm p"],
                        [(c["a"], c["b"], c.get("n"), c.get("a_only"), c.get("b_only"), pval(c["p_value"]),
                          pval(c["p_holm"])) for c in r.get("metric_comparisons", [])],
                        "Exact McNemar test on the items where exactly one of the two metrics agrees with the majority "
                        "(a metric tie counts as not agreeing); n: items both metrics pick on; Holm p: corrected over "
                        "all metric pairs.")
    detail = r.get("win_rate_detail") or {}
    wins = table(["candidate", "win rate", "95% CI", "wins", "n"],
                 [(c, w, interval(detail.get(c, {}).get("ci95")), detail.get(c, {}).get("wins"),
                   detail.get(c, {}).get("n")) for c, w in r.get("win_rate", {}).items()],
                 "Share of the n items with a candidate majority whose majority is that candidate; 95% CI: Wilson "
                 "score interval over those items (none below 5).")
    return ('<section id="alignment"><h2>Metric alignment with human majority</h2>'
            + table(["metric", "alignment", "95% CI", "strict", "strict 95% CI", "agree", "ties", "n"], rows, caption)
            + figure("fig-alignment", svg, fig_caption)
            + "<h3>Metric comparisons</h3>" + comparisons
            + "<h3>Win rate</h3>" + wins + "</section>")


def coverage_section(r: Report) -> str:
    """How much of the study each metric really scored, and the report's warnings (a judge
    whose answers could not be parsed must not look like a metric that scored everything)."""
    coverage, warnings = r.get("coverage") or {}, r.get("warnings") or []
    if not coverage and not warnings:
        return ""
    rows = [(m, c["n_scored"], c["n_unparsed"], c["n_items"]) for m, c in coverage.items()]
    warned = ('<ul class="report-warnings" role="alert">' + "".join(f"<li>{escape(w)}</li>" for w in warnings)
              + "</ul>") if warnings else '<p class="muted">No warnings.</p>'
    return ('<section id="coverage"><h2>Coverage and warnings</h2>' + warned
            + table(["metric", "items scored", "items unparsed", "items"], rows,
                    "Per metric, over the real (non-gold) items: scored = every candidate has a score (or a predicted "
                    "choice); unparsed = at least one judge answer had no score in it (stored empty, never guessed).")
            + "</section>")


def _correlation_rows(entries: dict[str, Any]) -> list[tuple[Any, ...]]:
    rows = []
    for metric, e in entries.items():
        rows.append((metric, e["unit"], e["n"], e.get("n_clusters"),
                     e["pearson"]["r"], interval(e["pearson"]["ci95"]), pval(e["pearson"]["p_value"]),
                     e["spearman"]["r"], interval(e["spearman"]["ci95"]), pval(e["spearman"]["p_value"]),
                     e["kendall"]["r"], interval(e["kendall"]["ci95"]), pval(e["kendall"]["p_value"])))
    return rows


CORRELATION_HEADERS = ["metric", "unit", "n", "clusters", "Pearson r", "95% CI", "p", "Spearman rho", "95% CI", "p",
                       "Kendall tau-b", "95% CI", "p"]
CORRELATION_NOTE = ("Independent units (one per item or system: clusters = n): Pearson's CI by Fisher z (n >= 10); "
                    "Spearman's and Kendall's CI by bootstrap over the units (2,000 resamples, seed 0), only when "
                    "n >= 20; p: exact permutation p-value (all n! orderings) when n <= 9, else scipy's. Units nested "
                    "in items ((item, pair) units, judgments: clusters = items < n): every CI and p-value from one "
                    "bootstrap over items (2,000 resamples, seed 0; n >= 20 and 5 items), p being the interval's own "
                    "test of r = 0. An en dash: undefined (n < 3, a constant side) or not computed. "
                    + BOOTSTRAP_NOTE)


def correlations_section(r: Report) -> str:
    items = r.get("correlations") or {}
    systems = r.get("correlations_system")
    what = "; ".join(f"{m}: x = {e['x']}, y = {e['y']}" for m, e in items.items())
    parts = ['<section id="correlations"><h2>Metric-vs-human correlations</h2>']
    if items:
        parts.append(table(CORRELATION_HEADERS, _correlation_rows(items),
                           f"What is correlated (one row per metric): {what}. {CORRELATION_NOTE}"))
    else:
        parts.append("<p>No metric scores to correlate with the human judgments yet.</p>")
    if systems is not None:
        what = "; ".join(f"{m}: x = {e['x']}, y = {e['y']}, systems {', '.join(e['systems'])}"
                         for m, e in systems.items())
        parts.append("<h3>System level</h3>" + table(CORRELATION_HEADERS, _correlation_rows(systems),
                                                     f"One unit per system (candidate id). {what}. {CORRELATION_NOTE}"))
    return "".join(parts) + "</section>"


def ratings_section(r: Report) -> str:
    """Rating histograms (usefulness, similarity) and choice counts. A kind's report module
    may draw its own rating figures (`rating_figures(report, value_counts)`)."""
    counts = r.get("value_counts", {})
    own = getattr(REPORT_MODULES[r["kind"]], "rating_figures", None)
    parts = own(r, counts) if own is not None else []
    if own is None:
        rating_questions = [q for q, a in r["agreement"].items() if a["level"] != "nominal"]
        for q in rating_questions:
            fig_id = "fig-ratings" if not parts else f"fig-ratings-{q}"
            pooled = rating_counts(counts, [q])
            parts.append(figure(fig_id, figures.histogram(fig_id, pooled, f"{q} rating"),
                                f"Histogram of the '{q}' ratings of non-gold items, all annotators "
                                f"(n = {sum(pooled.values())} ratings)."))
    choice_questions = [q for q, a in r["agreement"].items() if a["level"] == "nominal"]
    if choice_questions:
        labels: dict[str, int] = {}
        for q in choice_questions:
            for value, n in counts.get(q, {}).items():
                labels[value] = labels.get(value, 0) + n
        top = dict(sorted(labels.items(), key=lambda kv: -kv[1])[:20])
        fig_id = "fig-choices" if parts else "fig-ratings"
        svg = figures.histogram(fig_id, top, "chosen option")
        parts.append(figure(fig_id, svg, f"Number of non-gold judgments choosing each option, pooled over the choice "
                                         f"questions (n = {sum(labels.values())} judgments; at most the 20 most chosen "
                                         "options shown)."))
    return '<section id="ratings"><h2>Ratings and choices</h2>' + "".join(parts) + "</section>"


SCREEN_VOTE = ("A screen is one item as one annotator saw it; it votes 'first' when most of its two-option choices "
               "(ties left out) picked the option shown first, 'second' when most picked the other, and does not "
               "vote when they split evenly.")


def position_section(r: Report) -> str:
    b = r["position_bias"]
    names = [n for n, a in r["annotators"].items() if a["first_shown_rate"] is not None]
    screens = b.get("n_screens_all", b["n"])
    labels = ["all"] + names if screens else []
    values = [b["first_shown_rate"]] + [r["annotators"][n]["first_shown_rate"]
                                                             for n in names] if screens else []
    svg = figures.bars("fig-position-bias", labels, values, "share of screens voting 'first'",
                       ylim=(0, 1), reference=0.5,
                       colors=[figures.ORANGE] + [figures.BLUE] * len(names) if labels else None)
    caption = (f"Position bias: share of screens voting 'first' overall (all {b.get('n_screens_all', 0)} voting "
               "screens pooled) and per annotator; dashed line = 0.5 (no bias). The test is over annotators "
               f"(n = {b['n']} with at least {b.get('min_screens', 5)} voting screens): one-sample t-test of their "
               f"shares against 0.5, p = {pval(b['p_value'])}. {SCREEN_VOTE}")
    per_question = b.get("per_question") or {}
    rows: list[tuple[Any, ...]] = [
        ("all choice questions (votes = screens)", b["first_shown_rate"], b.get("n_screens_all"),
         b.get("annotator_mean_rate"), interval(b.get("ci95")), b["n"], pval(b["p_value"]), None)]
    rows += [(f"{q} (votes = its choices)", v["first_shown_rate"], v.get("n_judgments"), v.get("annotator_mean_rate"),
              interval(v.get("ci95")), v["n"], pval(v["p_value"]), pval(v.get("p_holm")))
             for q, v in per_question.items()]
    questions = table(["choices", "first-shown rate (pooled)", "votes", "annotators' mean rate", "95% CI",
                       "annotators", "p", "Holm p"],
                      rows,
                      "first-shown rate: share of all votes for the option shown first. annotators' mean rate: "
                      "mean over the annotators with at least "
                      f"{b.get('min_screens', 5)} votes of their share of votes for the option shown first (ties "
                      "and screens that split evenly do not vote); 95% CI: t interval over those annotators (none "
                      "from fewer than 5, nor when every share is the same); p: two-sided one-sample t-test of the "
                      "shares against 0.5 (annotators are the unit: their habits make one annotator's votes alike). "
                      "First row: one vote per screen over all choice questions; then each choice question on its "
                      "own, Holm p corrected across the questions.")
    return ('<section id="position-bias"><h2>Position bias</h2>' + questions + figure("fig-position-bias", svg, caption)
            + "</section>")


KAPPA_ROWS = 10


def pairwise_kappa_table(r: Report) -> str:
    """The lowest pairwise Cohen's kappas per question (outlier pairs first)."""
    rows = [(q, p["a"], p["b"], p["kappa"], p.get("n")) for q, pairs in r.get("pairwise_kappa", {}).items()
            for p in pairs[:KAPPA_ROWS]]
    if not rows:
        return "<p>No annotator pair shares 10 or more units of one question yet.</p>"
    return table(["question", "annotator a", "annotator b", "Cohen's kappa", "shared units"], rows,
                 caption=f"Lowest {KAPPA_ROWS} Cohen's kappas per question (unweighted for choices, quadratic-weighted "
                         "for rating scales), over annotator pairs sharing at least 10 non-gold units (the full list "
                         "is in the JSON report).")


def annotators_section(r: Report) -> str:
    first: dict[str, Any] = next(iter(r["annotators"].values()), {})
    questions = list(first.get("loo", {}))
    rows = [[n, a["judgments"], a["median_seconds"], a["gold_accuracy"], a.get("n_gold_answers"),
             a["first_shown_rate"], a.get("n_screens"), pval(a["first_shown_p"])]
            + [a.get("loo", {}).get(q) for q in questions] for n, a in r["annotators"].items()]
    caption = ("judgments: all of the annotator's judgments, gold included. median seconds: per judged item. gold "
               "accuracy: share of the 'gold answers' equal to the expected one. first-shown rate / p: share of the "
               "annotator's 'screens' voting 'first' and its exact two-sided binomial p against 0.5, Holm-adjusted "
               "over the annotators. '<question>: vs the others', per question "
               "(never pooled): for a choice question the share of units where the annotator's value equals the "
               "strict majority of the other annotators (units without one skipped); for a rating question the mean "
               "absolute difference from the median of the others' ratings (units with 2 or more other ratings; "
               f"lower = closer). {SCREEN_VOTE}")
    headers = ["annotator", "judgments", "median seconds", "gold accuracy", "gold answers", "first-shown rate",
               "screens", "first-shown p (Holm)"]
    headers += [f"{q}: vs the others" for q in questions]
    return ('<section id="annotators"><h2>Annotators</h2>' + table(headers, rows, caption)
            + "<h3>Pairwise agreement</h3>" + pairwise_kappa_table(r) + "</section>")


# The section a kind adds to the common ones: its report module's `html_section`.
KIND_SECTIONS = {kind: module.html_section for kind, module in REPORT_MODULES.items()
                 if hasattr(module, "html_section")}


def report_fragment(report: Report, inp: Any = None) -> str:
    """The report body (no <html> wrapper): used by the dashboard and by report_html."""
    parts = [summary_section(report), agreement_section(report)]
    if "alignment" in report:
        parts.append(alignment_section(report))
    if RANKED in report:
        parts.append(systems_section(report))
        parts.append(allocation_section(report))
    elif any(RANKED in a for a in (report.get("aspects") or {}).values() if isinstance(a, dict)):
        parts.append(aspects_ranking_section(report))
    if "coverage" in report or report.get("warnings"):
        parts.append(coverage_section(report))
    if "correlations" in report:
        parts.append(correlations_section(report))
    if report["kind"] in KIND_SECTIONS:
        parts.append(KIND_SECTIONS[report["kind"]](report, inp))
    if "ip_probe" in report:
        parts.append(ip_probe.html_section(report))
    if "retest" in report:
        parts.append(retest.html_section(report))

    if report.get("ppi"):
        parts.append(ppi_section(report))
    parts += [ratings_section(report), position_section(report), annotators_section(report)]
    return "\n".join(parts)


def report_html(report: Report, inp: Any = None) -> str:
    """One self-contained HTML page of the report."""
    return html_page(report["study"], report["kind"], report_fragment(report, inp))


def html_page(study: str, kind: str, fragment: str) -> str:
    """The page around a report fragment (the cache stores the fragment, so a cached
    report's page costs no rebuild)."""
    title = f"Report: {study} ({kind})"
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{escape(title)}</h1>\n{fragment}\n</body></html>\n")
