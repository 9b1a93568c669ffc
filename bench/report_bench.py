"""Report speed on PostgreSQL: seconds to report a pairwise_alignment study with 10k,
100k and 1M judgments, split into SQL (fetching the rows into arrays) and statistics
(building the report), next to a reference measured in the same run: a bare psycopg
`fetchall` of the same judgment columns (the least any report must pay to read its rows).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/humeval \
        .venv/bin/python bench/report_bench.py [--sizes 10000,100000,1000000]

Uses a scratch database `<name>_report_bench` (created, migrated, dropped). Data: items of
two candidates with two metric scores each, 3 of 60 annotators per item, 2% gold items,
plus one predicted-choice evaluator, written with COPY. The budget (interfaces: a study with
100,000 judgments reports in under 3 s) is checked and printed.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BUDGET_100K = 3.0


def populate(study, n_judgments, seed=0):
    """Items, judgments and predictions of `study` via COPY (fast; no ORM per row)."""
    import json

    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from annotate.models import Item

    rng = np.random.default_rng(seed)
    n_items = n_judgments // 3
    users = [get_user_model().objects.get_or_create(username=f"bench-ann{k:02d}")[0].pk for k in range(60)]
    now = timezone.now().isoformat()
    gold = rng.random(n_items) < 0.02
    with connection.cursor() as cursor, cursor.cursor.copy(
            "COPY annotate_item (study_id, item_id, position, data, gold, is_gold, content_hash, "
            "n_assigned, n_completed) FROM STDIN") as copy:
        for i in range(n_items):
            a, b, c, d = (round(float(x), 3) for x in rng.random(4))
            data = {"input": f"request {i}", "reference": f"reference {i}",
                    "candidates": [{"id": "model-a", "text": f"a {i}"}, {"id": "model-b", "text": f"b {i}"}],
                    "metric_scores": {"rougeL": {"model-a": a, "model-b": b}, "bleu": {"model-a": c, "model-b": d}}}
            copy.write_row((study.pk, f"item-{i:07d}", i, json.dumps(data), '"model-a"' if gold[i] else None,
                            bool(gold[i]), f"h{i}", 3, 3))
    pks = np.array(Item.objects.filter(study=study).order_by("position").values_list("id", flat=True))
    with connection.cursor() as cursor:
        with cursor.cursor.copy("COPY annotate_judgment (study_id, item_id, annotator_id, question, value, "
                                "shown_order, seconds, submitted_at) FROM STDIN") as copy:
            for pk in pks.tolist():
                who = rng.choice(60, 3, replace=False)
                for k in who.tolist():
                    value = "model-a" if rng.random() < 0.6 else "model-b"
                    shown = "model-a|model-b" if rng.random() < 0.5 else "model-b|model-a"
                    copy.write_row((study.pk, pk, users[k], "choice", value, shown, float(rng.integers(5, 120)), now))
        with cursor.cursor.copy("COPY annotate_prediction (study_id, item_id, evaluator, annotator, question, value) "
                                "FROM STDIN") as copy:
            for pk in pks.tolist():
                copy.write_row((study.pk, pk, "gemba", "", "choice", "model-a" if rng.random() < 0.5 else "model-b"))


def reference_fetch(study):
    """Seconds for a bare cursor fetchall of the judgment columns the report reads."""
    from django.db import connection

    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT item_id, annotator_id, question, value, shown_order, seconds FROM annotate_judgment "
                       "WHERE study_id = %s ORDER BY id", [study.pk])
        cursor.fetchall()
    return time.perf_counter() - start


def measure(n_judgments):
    from annotate.models import Study
    from annotate.report_data import fetch_report_input
    from evaluation.report import build_report, render

    study = Study.objects.create(slug=f"bench-{n_judgments}", kind="pairwise_alignment", title="bench")
    populate(study, n_judgments)
    reference = reference_fetch(study)
    start = time.perf_counter()
    inp = fetch_report_input(study)
    sql = time.perf_counter() - start
    start = time.perf_counter()
    report = build_report(inp)
    stats = time.perf_counter() - start
    total = sql + stats
    start = time.perf_counter()
    render(report, inp, "html")
    html = time.perf_counter() - start
    print(f"{report['n_judgments']:>9} judgments  total {total:7.3f} s  SQL {sql:6.3f} s ({100 * sql / total:4.1f}%)  "
          f"statistics {stats:6.3f} s ({100 * stats / total:4.1f}%)  reference fetchall {reference:6.3f} s  "
          f"ratio total/reference {total / reference:5.2f}  (HTML page +{html:5.3f} s)", flush=True)
    return total


def run(sizes):
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    results = {n: measure(n) for n in sizes}
    if 100_000 in results:
        verdict = "within" if results[100_000] < BUDGET_100K else "OVER"
        print(f"100k judgments: {results[100_000]:.3f} s, {verdict} the {BUDGET_100K:.0f} s budget")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    from annot_scratch import scratch_database  # the bench/ scratch PostgreSQL database

    with scratch_database("report_bench"):
        run(sizes)


if __name__ == "__main__":
    main()
