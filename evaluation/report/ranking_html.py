"""The strengths and the per-system table in the HTML report (and the dashboard, which shows
the same fragment): a paper's system table (human win rate with its interval, the
Bradley-Terry strength and rank with theirs, each metric's mean on the same items), the
strengths as a forest plot, the win matrix as a heat map with the counts as a table
beside it, and the intransitivity line. Every figure says its unit, n and interval and
has a text alternative; the tables are the fallback."""
from html import escape
from typing import Any

from evaluation.vocabulary import RANKED

from . import figures
from .markup import Report, figure, interval, num, pval, table


def model_name(part: Report) -> str:
    """The strength model's name (a kind whose strengths is not Bradley-Terry's names its own
    in `ranking_detail.model_name`: Plackett-Luce for listwise rank orders)."""
    return (part.get("ranking_detail") or {}).get("model_name") or "Bradley-Terry"


def _systems(part: Report) -> list[str]:
    """Systems in rank order when there is an order, else in name order."""
    strengths = part.get(RANKED)
    names = list(part.get("pairwise_wins") or {})
    if strengths:
        names = sorted(strengths, key=lambda s: (-strengths[s]["strength"], s))
    return names


def system_table(part: Report, systems: dict[str, Any], name: str) -> str:
    """The per-system table: one row per system, in rank order."""
    strengths = part.get(RANKED) or {}
    order = _systems(part) or sorted(systems)
    metrics = sorted({m for s in systems.values() for m in (s.get("metrics") or {})})
    rows, metric_rows = [], []
    for system in order:
        human = (systems.get(system) or {}).get("human") or {}
        ranked = strengths.get(system) or {}
        rank_ci = ranked.get("rank_ci95")
        row: list[Any] = [system, human.get("n"), human.get("wins"), human.get("ties"), human.get("win_rate"),
                          interval(human.get("ci95")), ranked.get("strength"), interval(ranked.get("ci95")),
                          ranked.get("rank"), f"{rank_ci[0]}–{rank_ci[1]}" if rank_ci else "–"]
        rows.append(row)
        metric_rows.append([system] + [_metric_cell(((systems.get(system) or {}).get("metrics") or {}).get(m) or {})
                                       for m in metrics])
    notes = sorted({f"{m}: {e['ci_note']}" for s in systems.values() for m, e in (s.get("metrics") or {}).items()
                    if e.get("ci_note")})
    detail = part.get("ranking_detail") or {}
    listwise = model_name(part) != "Bradley-Terry"
    # A kind whose comparisons are not its judgments says what they are (best-worst: implied pairs).
    compares = (f"the pairs {detail['comparisons']}" if detail.get("comparisons") else
                "the pairs implied by the strengthss that held the system (every two outputs of an order are one "
                "comparison, the higher wins, the same rank is a tie" if listwise else
                "the judgments that showed the system (each judgment compares the two systems it showed")
    weighted = any(((s or {}).get("human") or {}).get("weighting") for s in systems.values())
    rate = (WEIGHTED_RATE if weighted else "win rate = (wins + ties/2) / comparisons, 95% CI: Wilson score interval "
            "over those comparisons (none from fewer than 5 items)")
    closing = "" if detail.get("comparisons") else ")"
    caption = (f"{name}. comparisons: {compares}; a tie is half a win each{closing}; {rate}. strength: "
               f"{model_name(part)} log strength "
               "(mean 0 over the systems); its 95% CI and the rank interval: bootstrap over items "
               f"({detail.get('resamples', 2000)} resamples, seed {detail.get('seed', 0)}; "
               f"{detail.get('dropped_resamples', 0)} resamples without finite strengths dropped), rank 1 = "
               "strongest.")
    headers = ["system", "comparisons", "wins", "ties", "win rate", "win rate 95% CI", "strength",
               "strength 95% CI", "rank", "rank 95% CI"]
    out = table(headers, rows, caption)
    if metrics:
        out += table(["system"] + [f"{m}: mean [95% CI] (n)" for m in metrics], metric_rows,
                     "Metric means per system, in the same order: each over the items of the system's human row "
                     "(the items where a judgment compared it), with a t interval over those items (n = items; none "
                     "below 5 items or for a constant sample)" + ("; * " + "; ".join(notes) if notes else "") + ".")
    return out


def _metric_cell(entry: dict[str, Any]) -> str:
    return (f"{num(entry.get('mean'))} {interval(entry.get('ci95'))} (n = {entry.get('n', 0)})"
            + (" *" if entry.get("ci_note") else ""))


def _count(x: Any) -> Any:
    """A count that may hold half wins: an int when whole, else "5.5"."""
    if isinstance(x, float):
        return int(x) if x.is_integer() else f"{x:.1f}"
    return x


def win_matrix_table(part: Report) -> str:
    wins = part.get("pairwise_wins") or {}
    names = _systems(part)
    rows = [[a] + [None if a == b else _count(wins[a].get(b)) for b in names] for a in names]
    return table(["row beat column"] + names, rows,
                 "Times the row's system beat the column's system over the judgments that showed both (a tie "
                 "counts 0.5 for each); the diagonal is empty.")


def ranking_block(part: Report, prefix: str, title: str) -> str:
    """The strengths of one choice question (`part`: the report, or one aspect of it)."""
    names = _systems(part)
    strengths = part.get(RANKED)
    detail = part.get("ranking_detail") or {}
    n_comp, n_items = detail.get("n_comparisons", detail.get("n_rankings", 0)), detail.get("n_clusters", 0)
    units = "rankings" if "n_rankings" in detail else "comparisons"
    if not n_comp:
        return f'<p id="{prefix}-{RANKED}" class="no-figure">No strengths: no judgment compares two systems yet.</p>'
    out = []
    if strengths:
        cis = [strengths[s].get("ci95") or [None, None] for s in names]
        svg = figures.forest(f"{prefix}-{RANKED}", names, [strengths[s]["strength"] for s in names],
                             [c[0] for c in cis], [c[1] for c in cis], f"{model_name(part)} log strength (mean 0)")
        alt = "Strengths: " + "; ".join(f"{s} strength {num(strengths[s]['strength'])} 95% CI "
                                      f"{interval(strengths[s].get('ci95'))}" for s in names)
        out.append(figure(f"{prefix}-{RANKED}", svg,
                          f"{title}: {model_name(part)} strength of each system (log scale, mean 0; unit = judgment, "
                          f"n = {n_comp} {units} on {n_items} items), strongest on top. Lines: 95% interval, "
                          f"bootstrap over items ({detail.get('resamples', 2000)} resamples, seed 0; "
                          f"{detail.get('dropped_resamples', 0)} dropped). Dashed line: the average system.", alt))
    else:
        reason = part.get("reason") or detail.get("reason") or "no comparisons"
        out.append(f'<p id="{prefix}-{RANKED}" class="no-figure">No strengths: {escape(str(reason))}.</p>')
    wins = part.get("pairwise_wins") or {}
    if len(names) >= 2:
        shares, counts = [], []
        for a in names:
            row = []
            for b in names:
                n = (wins[a].get(b, 0.0) + wins[b].get(a, 0.0)) if a != b else 0.0
                row.append(wins[a][b] / n if a != b and n else None)
                if a != b and n:
                    counts.append(n)
            shares.append(row)
        svg = figures.heatmap(f"{prefix}-wins", names, shares, "share of comparisons won by the row")
        low, high = (int(min(counts)), int(max(counts))) if counts else (0, 0)
        n_text = str(low) if low == high else f"{low} to {high}"
        out.append(figure(f"{prefix}-wins", svg,
                          f"{title}: share of the comparisons between two systems won by the row's system (a tie "
                          f"= half; unit = comparison, n = {n_text} per pair, {round(sum(counts) / 2)} in all; no "
                          "interval: see the strengths'). Empty: never compared. Counts in the table below.",
                          "Win matrix: " + "; ".join(f"{a} vs {b}: {num(s)}" for a, row in zip(names, shares)
                                                     for b, s in zip(names, row) if s is not None)))
        out.append(win_matrix_table(part))
    intr = part.get("intransitivity") or {}
    n_pairs = len(names) * (len(names) - 1) // 2
    if intr.get("circular_triads") is not None and intr.get("undecided_pairs", 0) < n_pairs:
        cycles = "; ".join(" > ".join(c) + " > " + c[0] for c in intr.get("cycles", [])) or "none"
        undecided = intr.get("undecided_pairs", 0)
        pairs = "pair" if undecided == 1 else "pairs"
        out.append(f"<p>Intransitivity ({intr['n_systems']} systems, majority tournament: an edge where one system "
                   f"won more of their comparisons; {undecided} {pairs} undecided): circular "
                   f"triads d = {intr['circular_triads']}, Kendall-Babington Smith zeta = {num(intr['zeta'])} "
                   f"(1 = transitive). Cycles: {escape(cycles)}.</p>")
    return "".join(out)


def correlations_ranking_table(r: Report) -> str:
    entries = r.get("correlations_ranking") or {}
    if not entries or all(e["n"] < 3 for e in entries.values()):  # no coefficient below 3 systems
        return ""
    rows = [(m, e["n"], e["kendall"]["r"], pval(e["kendall"]["p_value"]), e["kendall"].get("p_method") or "–")
            for m, e in entries.items()]
    return ("<h3>Metrics against the human strengths</h3>"
            + table(["metric", "systems", "Kendall tau-b", "p", "p method"], rows,
                    "Kendall tau-b between each metric's system means (on the items of each system's human row; "
                    f"lower-is-better metrics negated) and the {model_name(r)} strengths; unit = system, n = systems; "
                    "exact permutation p for n <= 9."))


WEIGHTED_RATE = ("win rate: inverse-probability weighted (Hajek; adaptive allocation: each judgment weighs 1 / the "
                 "probability with which its pair was drawn, estimating the win rate under a uniform choice of "
                 "pairs), 95% CI: bootstrap over items with the weights fixed; the strengths are not weighted")


def systems_section(r: Report) -> str:
    """The Systems section of a pairwise report (kinds whose report has strengths)."""
    if RANKED not in r:
        return ""
    return ('<section id="systems"><h2>Systems and strengths</h2>' + identical_outputs_note(r)
            + system_table(r, r.get("systems") or {}, "Per-system table")
            + ranking_block(r, "fig-systems", "Ranking") + correlations_ranking_table(r) + "</section>")


def identical_outputs_note(r: Report) -> str:
    """How many items showed one output for several systems (identical outputs merged), per
    system pair; empty when none did."""
    same = r.get("identical_outputs") or {}
    if not same.get("n_items"):
        return ""
    rows = [[pair.replace("|", " = "), n] for pair, n in same["per_pair"].items()]
    return (f'<p id="identical-outputs">{num(same["n_items"])} items showed one output for several systems '
            f'(identical outputs merged into one shown candidate; its judgments, majority and metric scores count '
            f'for each system it stands for).</p>'
            + table(["system pair", "items with identical outputs"], rows,
                    f"Identical outputs per system pair (n = items; {num(same['pairs'])} pairs in all)."))


def aspects_ranking_section(r: Report) -> str:
    """The strengths per aspect (a kind with aspects: Per-DOC)."""
    aspects = r.get("aspects") or {}
    parts = []
    for k, (key, part) in enumerate(aspects.items()):
        if RANKED not in part:
            continue
        compared = (part.get("ranking_detail") or {}).get("n_comparisons", 0)
        parts.append(f"<h3>{escape(str(key))}</h3>"
                     + (system_table(part, part.get("systems") or {}, f"Systems: {key}") if compared else "")
                     + ranking_block(part, f"fig-aspect{k}", f"Ranking on {key}"))
    return ('<section id="systems"><h2>Systems and strengths per aspect</h2>' + "".join(parts) + "</section>"
            if parts else "")
