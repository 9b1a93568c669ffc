"""The methods section of a paper, filled from a study: `manage.py datasheet SLUG`, the
study page's Methods tab, and the dataset card of a release.

Why: reviewers ask for the details most human-evaluation papers leave out (van der Lee et
al. 2019/2021; Karpinska et al. 2021): the design, who rated and for what pay, what was
excluded and why, agreement with intervals, the main results with intervals. humeval knows
all of them. Every number here is copied from the study's report (`study_report`), never
computed a second time, so the paper and the report cannot disagree; the one derived figure,
the median of the annotators' median seconds per item, is labelled as such.

`datasheet(study)` returns a JSON-ready dict; `render_datasheet(sheet, fmt)` writes it as
Markdown, LaTeX (booktabs tables in a standalone article) or JSON.
"""
import json
import statistics
from collections import Counter

from django.db.models import Count

from annotate.kinds import get_kind, study_config
from annotate.models import Participant
from annotate.participants.recruitment import places_limit, recruits
from annotate.reports.data import study_report
from annotate.studies.allocation import allocation_text, is_adaptive
from evaluation.vocabulary import RANKED

FORMATS = ("md", "tex", "json")
# Participant endings that exclude someone from the data, with the words a paper uses.
ENDINGS = {"returned": "returned the study", "screened_out": "screened out", "timed_out": "timed out"}


def _ci(entry):
    return entry.get("ci95") if isinstance(entry, dict) else None


def _design(study, report):
    config = study.config or {}
    systems = sorted(report.get("systems") or {})
    return {
        "kind": study.kind, "title": study.title, "systems": systems, "n_systems": len(systems),
        "n_items": report["n_items"], "n_gold_items": report["n_gold_items"],
        "annotations_per_item": study.annotations_per_item, "n_judgments": report["n_judgments"],
        "n_annotators": report["n_annotators"], "complete_items": report["complete_items"],
        "allocation": (allocation_text(config, len(systems)) if is_adaptive(config)
                       else get_kind(study.kind).allocation(study_config(study), len(systems))),
        "randomization": ("order of the options randomized per assignment, balanced, and recorded"
                          if study.randomize_order else "options shown in the batch's order"),
        "repeats": config.get("retest"),
        "unit_note": (report.get("units") or {}).get("note"),
    }


def _rater_pool(study, report, pay):
    annotators = report.get("annotators") or {}
    medians = [a["median_seconds"] for a in annotators.values() if a.get("median_seconds") is not None]
    pool = {
        "platform": study.recruitment["platform"] if recruits(study) else "invited accounts",
        "places": places_limit(study) if recruits(study) else None,
        "n_annotators": report["n_annotators"], "pay": pay,
        "median_seconds_per_item": statistics.median(medians) if medians else None,
        "median_seconds_note": f"median over {len(medians)} annotators of each annotator's median seconds per item",
        "exclusions": [{"reason": f"quality flag: {why}", "n": n} for why, n in sorted(Counter(
            (report.get("excluded_annotators") or {}).values()).items())],
    }
    if recruits(study):
        ended = dict(Participant.objects.filter(study=study, finished_at__isnull=True, ended__in=ENDINGS)
                     .values_list("ended").annotate(n=Count("id")).order_by())  # one query for every ending
        pool["exclusions"] += [{"reason": words, "n": ended[ending]} for ending, words in ENDINGS.items()
                               if ended.get(ending)]
    skipped = report.get("skipped") or {}
    for reason, n in sorted((skipped.get("by_reason") or {}).items()):
        pool["exclusions"].append({"reason": f"item skipped: {reason}", "n": n})
    return pool


def _quality(study, report):
    return {"gold_items": report["n_gold_items"], "gold_rate": study.gold_rate if report["n_gold_items"] else None,
            "thresholds": study.quality or {}, "min_seconds_warning": study.min_seconds,
            "flagged_and_excluded": len(report.get("excluded_annotators") or {}),
            "warnings": report.get("warnings") or []}


def _agreement(report):
    rows = []
    for question, entry in sorted((report.get("agreement") or {}).items()):
        rows.append({"question": question, "level": entry.get("level"),
                     "krippendorff_alpha": entry.get("krippendorff_alpha"),
                     "ci95": entry.get("krippendorff_alpha_ci95"), "ci_method": entry.get("ci_method"),
                     "fleiss_kappa": entry.get("fleiss_kappa"), "percent_agreement": entry.get("percent_agreement"),
                     "n_units": entry.get("n_units")})
    return rows


def _tables(report):
    """The main results: the strengths (systems), metric alignment, and scalar evaluators."""
    tables = []
    strengths = report.get(RANKED)
    if isinstance(strengths, dict) and strengths and all(isinstance(v, dict) for v in strengths.values()):
        systems = report.get("systems") or {}
        rows = []
        for system, entry in sorted(strengths.items(), key=lambda kv: (kv[1]["rank"], kv[0])):
            human = (systems.get(system) or {}).get("human") or {}
            rows.append([system, entry["rank"], entry["rank_ci95"], entry["strength"], entry["ci95"],
                         human.get("win_rate"), human.get("ci95"), human.get("n")])
        detail = report.get("ranking_detail") or {}
        model = detail.get("model_name") or "Bradley-Terry"  # a listwise study's is Plackett-Luce
        tables.append({"key": RANKED, "title": f"System strengths ({model}, log strengths, mean 0)",
                       "columns": ["system", "rank", "rank 95% CI", "strength", "95% CI", "win rate", "95% CI", "n"],
                       "rows": rows, "note": f"Intervals: {detail.get('ci_method', '')}; "
                                             f"n = comparisons (judgments) of the system."})
    alignment = report.get("alignment") or {}
    if alignment:
        tables.append({"key": "alignment", "title": "Metric agreement with the human majority",
                       "columns": ["metric", "alignment", "95% CI", "n"],
                       "rows": [[m, e.get("alignment"), e.get("ci95"), e.get("n")]
                                for m, e in sorted(alignment.items())],
                       "note": "n = units with a human majority; " + next(
                           (e.get("ci_method", "") for e in alignment.values()), "")})
    evaluators = report.get("evaluators") or {}
    if evaluators and all(isinstance(e, dict) and "pearson" in e for e in evaluators.values()):
        tables.append({"key": "evaluators", "title": "Evaluators vs human scores (Pearson)",
                       "columns": ["evaluator", "r", "95% CI", "n pairs"],
                       "rows": [[name, e["pearson"].get("r"), e["pearson"].get("ci95"), e.get("n_pairs")]
                                for name, e in sorted(evaluators.items())], "note": ""})
    retest = report.get("retest") or {}
    if retest.get("n_pairs"):  # test-retest (evaluation/report/retest.py: its rows, as the CSV report)
        from evaluation.report.retest import retest_rows

        tables.append({"key": "retest", "title": "Test-retest (first answer vs its repeat, order reversed)",
                       "columns": ["part", "annotator", "n", "flip rate", "flip 95% CI", "agreement", "95% CI"],
                       "rows": [[r[1] or ("choices" if retest.get("ratings") else "all"), r[2], r[3], r[4],
                                 [r[5], r[6]] if r[5] != "" else None, r[9], [r[10], r[11]] if r[10] != "" else None]
                                for r in retest_rows(report)],
                       "note": f"agreement: {retest['agreement']['statistic']} ({retest['agreement']['level']}); "
                               f"n = repeated answers; intervals: {retest.get('ci_method', '')}; annotator * = all."})
    return tables


def datasheet(study, pay=None):
    """The methods-section facts of `study`, every number from its report."""
    report, _ = study_report(study, "json")
    get_kind(study.kind)  # an unknown kind fails here, not half-way through rendering
    return {"study": study.slug, "design": _design(study, report), "rater_pool": _rater_pool(study, report, pay),
            "quality_control": _quality(study, report), "agreement": _agreement(report),
            "results": _tables(report), "retest": report.get("retest"), "power": (study.config or {}).get("power")}


# --- rendering -------------------------------------------------------------------------

def number(value):
    """The one way a datasheet prints a value: 3 decimals for reals, [lo, hi] for intervals,
    an en dash for a value that does not exist."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return f"[{number(value[0])}, {number(value[1])}]"
    return str(value)


def _facts(sheet):
    d, pool, qc = sheet["design"], sheet["rater_pool"], sheet["quality_control"]
    design = [("Kind", d["kind"]), ("Systems", ", ".join(d["systems"]) or "–"), ("Items", d["n_items"]),
              ("Gold (attention-check) items", d["n_gold_items"]), ("Annotations per item", d["annotations_per_item"]),
              ("Judgments", d["n_judgments"]), ("Annotators", d["n_annotators"]),
              ("Complete items", d["complete_items"]), ("Allocation", d["allocation"]),
              ("Randomization", d["randomization"]), ("Test-retest repeats", d["repeats"] or "none")]
    raters = [("Platform", pool["platform"]), ("Places", pool["places"]), ("Pay", pool["pay"] or "not given"),
              ("Median seconds per item", pool["median_seconds_per_item"]),
              ("Exclusions", "; ".join(f"{e['reason']}: {e['n']}" for e in pool["exclusions"]) or "none")]
    quality = [("Gold items", qc["gold_items"]), ("Gold rate", qc["gold_rate"]),
               ("Thresholds", json.dumps(qc["thresholds"], sort_keys=True) if qc["thresholds"] else "none"),
               ("Annotators flagged and excluded", qc["flagged_and_excluded"])]
    return [("Design", design), ("Rater pool", raters), ("Quality control", quality)]


AGREEMENT_COLUMNS = ["question", "level", "alpha", "95% CI", "Fleiss kappa", "% agreement", "n units"]


def _agreement_rows(sheet):
    return [[a["question"], a["level"], a["krippendorff_alpha"], a["ci95"], a["fleiss_kappa"],
             a["percent_agreement"], a["n_units"]] for a in sheet["agreement"]]


POWER_COLUMNS = ["target", "power", "MC se", "median interval width", "simulated studies"]


def _target_name(t):
    what = (f"{t.get('system')} vs {t.get('against') or 'the other'}" if t.get("system") else
            f"{t.get('a')} vs {t.get('b')}" if t.get("a") else f"width at most {t.get('width')}")
    return f"{t.get('test')}: {what}"


def _power_tables(sheet):
    """The saved design's power (Study.config["power"] as the Plan page saves it: {"design",
    "result"}, result = the JSON of manage.py design), as one table; none if not saved."""
    power = sheet.get("power")
    result = power.get("result") if isinstance(power, dict) else None
    if not isinstance(result, dict) or not isinstance(result.get("targets"), list):
        return []
    design = power.get("design") if isinstance(power.get("design"), dict) else {}
    rows = [[_target_name(t), t.get("power"), t.get("se"), t.get("median_width"), t.get("n_simulations")]
            for t in result["targets"] if isinstance(t, dict)]
    note = (f"Power by simulation (manage.py design; statistics.md, \"Planning a study\"): {design.get('items')} "
            f"items, {design.get('annotations_per_item')} annotations per item, {design.get('annotators')} "
            f"annotators, seed {design.get('seed', 0)}; power = share of simulated studies meeting the target.")
    stop = result.get("stopping")
    if isinstance(stop, dict):
        note += (f" Stopping as soon as target {stop.get('target')} is met, looking every {stop.get('every')} "
                 f"judgments: type-I error {number(stop.get('type1_error_stopping'))} against "
                 f"{number(stop.get('type1_error_fixed'))} at fixed n.")
    return [("Power analysis (saved design)", POWER_COLUMNS, rows, note)]


def to_markdown(sheet):
    lines = [f"# Methods: {sheet['design']['title']} (`{sheet['study']}`)", ""]
    for title, facts in _facts(sheet):
        lines += [f"## {title}", ""] + [f"- **{k}**: {number(v)}" for k, v in facts] + [""]
    if sheet["rater_pool"]["median_seconds_per_item"] is not None:
        lines += [f"Median seconds per item: {sheet['rater_pool']['median_seconds_note']}.", ""]
    tables = [("Agreement", AGREEMENT_COLUMNS, _agreement_rows(sheet),
               (sheet["agreement"][0]["ci_method"] or "") if sheet["agreement"] else "")]
    tables += [(t["title"], t["columns"], t["rows"], t["note"]) for t in sheet["results"]]
    tables += _power_tables(sheet)
    for title, columns, rows, note in tables:
        lines += [f"## {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(number(v) for v in row) + " |" for row in rows]
        lines += ["", f"*{note}*" if note else "", ""]
    return "\n".join(lines).rstrip() + "\n"


TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
               "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--"}


def tex_escape(text):
    return "".join(TEX_ESCAPES.get(ch, ch) for ch in str(text))


def _tex_table(title, columns, rows, note):
    spec = "l" + "r" * (len(columns) - 1)
    out = [r"\begin{table}[ht]", r"\centering", rf"\caption{{{tex_escape(title)}}}", rf"\begin{{tabular}}{{{spec}}}",
           r"\toprule", " & ".join(tex_escape(c) for c in columns) + r" \\", r"\midrule"]
    out += [" & ".join(tex_escape(number(v)) for v in row) + r" \\" for row in rows]
    out += [r"\bottomrule", r"\end{tabular}"]
    if note:
        out.append(rf"\par\smallskip\footnotesize {tex_escape(note)}")
    return out + [r"\end{table}", ""]


def to_latex(sheet):
    """A standalone article (so it can be compiled as is); copy the section into a paper."""
    out = [r"\documentclass{article}", r"\usepackage[utf8]{inputenc}",
           r"\usepackage{booktabs}", r"\begin{document}",
           rf"\section*{{Methods: {tex_escape(sheet['design']['title'])}}}", ""]
    for title, facts in _facts(sheet):
        out += [rf"\subsection*{{{tex_escape(title)}}}", r"\begin{itemize}"]
        out += [rf"\item \textbf{{{tex_escape(k)}}}: {tex_escape(number(v))}" for k, v in facts]
        out += [r"\end{itemize}", ""]
    out += _tex_table("Agreement", AGREEMENT_COLUMNS, _agreement_rows(sheet),
                      (sheet["agreement"][0]["ci_method"] or "") if sheet["agreement"] else "")
    for t in sheet["results"]:
        out += _tex_table(t["title"], t["columns"], t["rows"], t["note"])
    for table in _power_tables(sheet):
        out += _tex_table(*table)
    return "\n".join(out + [r"\end{document}"]) + "\n"


def render_datasheet(sheet, fmt):
    if fmt == "json":
        return json.dumps(sheet, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if fmt == "tex":
        return to_latex(sheet)
    if fmt == "md":
        return to_markdown(sheet)
    raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
