"""Report speed on PostgreSQL for a pairwise_alignment study with 10k, 100k and 1M
judgments, each next to a reference measured in the same run: a bare psycopg `fetchall` of
the same judgment columns (the least any report must pay to read its rows).

- cold report: SQL (fetching the rows into arrays) + statistics (building the report), and
  the figures/HTML fragment; the cache refresh (all of it, stored: what the Celery task does);
- warm (the report cache is current): the dashboard page, the report section alone, the
  JSON version endpoint, the dashboard's polled version badge and the CSV and HTML
  downloads (cached with the JSON since issue 25; the first CSV of a version is rendered
  and stored, timed on its own), best and median of `--repeat` calls through Django's
  test client (no network).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/humeval \
        .venv/bin/python bench/report_bench.py [--sizes 10000,100000,1000000]

Uses a scratch database `<name>_report_bench` (created, migrated, dropped). Data: items of
two candidates with two metric scores each, 3 of 60 annotators per item, 2% gold items,
plus one predicted-choice evaluator, written with COPY, then VACUUM ANALYZE. Targets
(issue 13): cold report at 100k < 1 s, at 1M < 5 s; warm dashboard page at 100k < 150 ms.

`--systems` (issue 22) needs no database: in-memory ReportInputs of a pairwise_alignment
study at each size with 2 and with 5 systems (items holding every system, each judgment
showing one pair, 3 judgments per item, 2 metric scores per candidate, 2% gold), built in
the same run: the statistics time of each report, the same report with the ranking keys
stubbed out, and the ranking's added seconds (target at 100k: < 0.5 s).

`--kinds` (issue 21) builds one study per demo kind instead (the demo batch's items
repeated to the size, judgments drawn per question, metric scores in the items and as
Prediction rows as the importer writes them, predictions of each kind's evaluators, 2%
gold items) and prints the md5 of its JSON, CSV and HTML report (`--save DIR` keeps the
texts, to diff two runs), and the fetch with and without quality thresholds.

`--kind ranking` (issue 33) needs no database: an in-memory `ranking` ReportInput (4
systems, 5 full rankings per item, 2 metric scores per candidate, 2% gold) and the 4-system
pairwise_alignment input of `--systems` with as many judgments, timed in turns: the ranking
report's statistics time and its ratio to the pairwise report's (target <= 1.5).
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
COLD_100K, COLD_1M, WARM_PAGE_100K = 1.0, 5.0, 0.150  # seconds (issue 13)


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
            "n_assigned, n_completed, offered) FROM STDIN") as copy:
        for i in range(n_items):
            a, b, c, d = (round(float(x), 3) for x in rng.random(4))
            data = {"input": f"request {i}", "reference": f"reference {i}",
                    "candidates": [{"id": "model-a", "text": f"a {i}"}, {"id": "model-b", "text": f"b {i}"}],
                    "metric_scores": {"rougeL": {"model-a": a, "model-b": b}, "bleu": {"model-a": c, "model-b": d}}}
            copy.write_row((study.pk, f"item-{i:07d}", i, json.dumps(data), '"model-a"' if gold[i] else None,
                            bool(gold[i]), f"h{i}", 3, 3, True))
    pks = np.array(Item.objects.filter(study=study).order_by("position").values_list("id", flat=True))
    with connection.cursor() as cursor:
        with cursor.cursor.copy("COPY annotate_judgment (study_id, item_id, annotator_id, question, value, "
                                "shown_order, seconds, submitted_at, comment) FROM STDIN") as copy:
            for pk in pks.tolist():
                who = rng.choice(60, 3, replace=False)
                for k in who.tolist():
                    value = "model-a" if rng.random() < 0.6 else "model-b"
                    shown = "model-a|model-b" if rng.random() < 0.5 else "model-b|model-a"
                    seconds = float(rng.integers(5, 120))
                    copy.write_row((study.pk, pk, users[k], "choice", value, shown, seconds, now, ""))
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


def timed(call, repeat):
    """(best, median) seconds of `repeat` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def web_client():
    """A logged-in test client of an admin (reads every study)."""
    from django.test import Client

    from tests.factories import make_user

    client = Client()
    client.force_login(make_user("bench-admin", role="admins"))
    return client


def get_ok(client, url):
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response


def measure(n_judgments, client, repeat):
    from django.db import connection

    from annotate.models import Study
    from annotate.reports import cache as report_cache
    from annotate.reports.data import fetch_report_input
    from evaluation.report import build_report
    from evaluation.report.html import report_fragment

    study = Study.objects.create(slug=f"bench-{n_judgments}", kind="pairwise_alignment", title="bench")
    populate(study, n_judgments)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")  # what autovacuum does after a load: index-only scans see all rows
    reference = min(reference_fetch(study) for _ in range(3))
    start = time.perf_counter()
    inp = fetch_report_input(study)
    sql = time.perf_counter() - start
    start = time.perf_counter()
    report = build_report(inp)
    stats = time.perf_counter() - start
    total = sql + stats
    start = time.perf_counter()
    report_fragment(report, inp)
    html = time.perf_counter() - start
    print(f"{report['n_judgments']:>9} judgments  reference fetchall {reference:6.3f} s", flush=True)
    print(f"{'':>9} cold report  {total:7.3f} s ({total / reference:6.1f}x)  SQL {sql:6.3f} s  "
          f"statistics {stats:6.3f} s  (+ figures/HTML fragment {html:5.3f} s)", flush=True)
    start = time.perf_counter()
    report_cache.build(study, report_cache.report_params(study))  # fills the cache (what the task does)
    cache_build = time.perf_counter() - start
    print(f"{'':>9} cache refresh (cold report + fragment + store) {cache_build:7.3f} s "
          f"({cache_build / reference:6.1f}x)", flush=True)
    rows = {"cold": total}
    api = f"/api/studies/{study.slug}/report/"
    start = time.perf_counter()
    get_ok(client, api + "?format=csv")  # the first CSV of this version: rendered and stored beside the JSON
    first_csv = time.perf_counter() - start
    print(f"{'':>9} first CSV download of the version (rendered, stored) {first_csv:7.3f} s "
          f"({first_csv / reference:6.1f}x)", flush=True)
    for label, url in (("warm dashboard page", f"/studies/{study.slug}/"),
                       ("warm report section", f"/studies/{study.slug}/report-panel/"),
                       ("version endpoint", f"/api/studies/{study.slug}/report/version/"),
                       ("polled version badge", f"/studies/{study.slug}/report-version/"),
                       ("warm CSV download", api + "?format=csv"), ("warm HTML download", api + "?format=html")):
        get_ok(client, url)
        best, median = timed(lambda url=url: get_ok(client, url), repeat)
        rows[label] = best
        print(f"{'':>9} {label:<22} best {1000 * best:7.1f} ms  median {1000 * median:7.1f} ms  "
              f"({best / reference:5.2f}x the reference)", flush=True)
    return rows


BASE_TIME = 1_767_225_600  # 2026-01-01T00:00:00Z: judgments get fixed submit times


def demo_template(kind):
    """(header config, [ItemRow]) of the demo batch of `kind`, parsed by the importer's reader."""
    import io

    from annotate.studies.batch_format import iter_items, read_header
    from annotate.studies.demo_data import demo_batches
    from annotate.studies.json_lines import iter_lines

    lines = iter_lines(io.BytesIO(demo_batches()[kind]))
    _, header, errors = read_header(lines)
    assert not errors, errors
    rows = [row for row in iter_items(lines, header)]
    assert all(not isinstance(r, list) for r in rows), rows
    return header, rows


def bench_item(kind, row, copy_index, rng):
    """The data, metric scores and gold of one repeated demo item."""
    import copy

    data = copy.deepcopy(row.data)
    scores = copy.deepcopy(row.metric_scores)
    if "document" in data:  # similarity: each copy group is its own document
        data["document"]["id"] = f"{data['document']['id']}-r{copy_index % 100}"
    if "candidates" in data and kind != "aspect_pairwise":
        for metric in ("rougeL", "bleu"):
            scores[metric] = {c["id"]: round(float(rng.random()), 3) for c in data["candidates"]}
    if scores:
        data["metric_scores"] = scores
    return data, scores


def populate_kind(study, kind, n_judgments, seed=0):
    """Repeated demo items of `kind` with judgments of 3 of 60 annotators per item, via COPY."""
    import random
    from datetime import UTC, datetime

    from django.contrib.auth import get_user_model

    from annotate.kinds import get_kind, study_config
    from annotate.models import Item, Judgment, Prediction
    from annotate.studies.bulk_copy import copy_rows

    rng = np.random.default_rng(seed)
    header, templates = demo_template(kind)
    study.config = dict(header.config)
    study.save(update_fields=["config"])
    kind_obj, config = get_kind(kind), study_config(study)
    users = [get_user_model().objects.get_or_create(username=f"bench-ann{k:02d}")[0] for k in range(60)]
    items, item_scores, per_item = [], [], []
    total = 0
    while total < n_judgments:
        i = len(items)
        row = templates[i % len(templates)]
        data, scores = bench_item(kind, row, i // len(templates), rng)
        questions = kind_obj.questions(config, data)
        is_gold = bool(rng.random() < 0.02)
        first = questions[0]
        gold = {first["id"]: first["options"][0] if "options" in first else first["scale"][0]} if is_gold else None
        items.append({"study_id": study.pk, "item_id": f"item-{i:07d}", "position": i, "data": data, "gold": gold,
                      "is_gold": is_gold, "content_hash": f"h{i}", "n_assigned": 3, "n_completed": 3})
        item_scores.append(scores)
        per_item.append(questions)
        total += 3 * len(questions)
    copy_rows(Item, items)
    pks = list(Item.objects.filter(study=study).order_by("position").values_list("id", flat=True))
    judgments, predictions, t = [], [], 0
    for pk, item, questions, scores in zip(pks, items, per_item, item_scores):
        rows = (kind_obj.metric_score_rows(scores, item["data"]) if hasattr(kind_obj, "metric_score_rows")
                else [(m, cid, str(v)) for m, by in scores.items() for cid, v in by.items()])  # (before issue 21)
        predictions += [{"study_id": study.pk, "item_id": pk, "evaluator": metric, "annotator": "",
                         "question": cid, "value": value} for metric, cid, value in rows]  # what the importer writes
        who = rng.choice(60, 3, replace=False)
        previous = []
        for k in who.tolist():
            # seeded by the item's position (not its pk, which moves with the studies made before)
            order = kind_obj.shown_order(item["data"], config, True, random.Random(f"{seed}:{item['position']}:{k}"),
                                         previous)
            previous.append(order)
            seconds = float(rng.integers(5, 120))
            for q in questions:
                if "options" in q:
                    options = [o for o in q["options"] if o != "tie"]
                    value = options[0] if rng.random() < 0.6 else options[1]
                else:
                    value = str(int(rng.integers(q["scale"][0], q["scale"][1] + 1)))
                judgments.append({"study_id": study.pk, "item_id": pk, "annotator_id": users[k].pk,
                                  "question": q["id"], "value": value, "shown_order": "|".join(order.get(q["id"], [])),
                                  "seconds": seconds, "submitted_at": datetime.fromtimestamp(BASE_TIME + t, UTC),
                                  "comment": ""})
                t += 1
                if kind == "aspect_pairwise":  # a personalized evaluator's prediction of this judgment
                    draw = rng.random()
                    guess = "" if draw < 0.05 else "N/A" if draw < 0.07 else options[int(rng.integers(0, 2))]
                    predictions.append({"study_id": study.pk, "item_id": pk, "evaluator": "perse-bench",
                                        "annotator": users[k].username, "question": q["id"], "value": guess})
        if kind in ("pairwise_alignment", "explanation_choice", "aspect_pairwise"):
            for q in questions:
                if "options" in q:
                    predictions.append({"study_id": study.pk, "item_id": pk, "evaluator": "gemba", "annotator": "",
                                        "question": q["id"], "value": q["options"][int(rng.integers(0, 2))]})
        if kind == "similarity_survey":
            predictions += [{"study_id": study.pk, "item_id": pk, "evaluator": "jsd", "annotator": "",
                             "question": q["id"], "value": str(round(float(rng.random()), 3))} for q in questions]
    copy_rows(Judgment, judgments)
    copy_rows(Prediction, predictions)


def kind_reports(sizes, save_dir):
    """Per demo kind and size: the md5 of the JSON, CSV and HTML report (quality thresholds
    off and on), and the fetch's seconds with and without thresholds (best of 3)."""
    import hashlib
    import re

    from django.db import connection

    from annotate.models import Study
    from annotate.reports.data import fetch_report_input
    from annotate.studies.demo_data import demo_batches
    from evaluation.report import build_report, render

    def fetch_times(study, quality, repeat=5):
        """Best seconds of the fetch with the study's thresholds off and on, measured in
        turns (a busy machine slows both alike)."""
        times = {False: [], True: []}
        for _ in range(repeat):
            for on in (False, True):
                study.quality = quality if on else {}
                study.save(update_fields=["quality"])
                start = time.perf_counter()
                fetch_report_input(study)
                times[on].append(time.perf_counter() - start)
        return min(times[False]), min(times[True])

    for n in sizes:
        for kind in demo_batches():
            study = Study.objects.create(slug=f"bench-{kind.replace('_', '-')}-{n}", kind=kind, title="bench")
            populate_kind(study, kind, n)
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
            thresholds = {"min_gold_accuracy": 0.6, "min_median_seconds": 20}
            plain, flagged = fetch_times(study, thresholds)
            print(f"{kind:<20} fetch best of 5: thresholds off {plain:6.3f} s, on {flagged:6.3f} s "
                  f"({flagged / plain:5.2f}x)", flush=True)
            for quality in ({}, thresholds):
                study.quality = quality
                study.save(update_fields=["quality"])
                inp = fetch_report_input(study)
                report = build_report(inp)
                digests = []
                for fmt in ("json", "csv", "html"):
                    text = render(report, inp, fmt)
                    if fmt == "html":  # matplotlib stamps each SVG with the time it was drawn
                        text = re.sub(r"<dc:date>[^<]*</dc:date>", "<dc:date/>", text)
                    digests.append(hashlib.md5(text.encode()).hexdigest())
                    if save_dir:
                        tag = "quality" if quality else "plain"
                        Path(save_dir, f"{kind}-{n}-{tag}.{fmt}").write_text(text)
                print(f"{kind:<20} {report['n_judgments']:>7} judgments  quality {'on ' if quality else 'off'}"
                      f"  excluded {len(report['excluded_annotators']):>2}  "
                      f"md5 json {digests[0]} csv {digests[1]} html {digests[2]}", flush=True)


RANKING_ADDS_100K = 0.5  # seconds (issue 22)


def systems_input(n_judgments, n_systems, seed=0):
    """A pairwise_alignment ReportInput (vectorized): items with `n_systems` candidates, 3
    judgments each showing one random pair (Bradley-Terry with a 10% tie rate), two metric
    scores per candidate, a predicted choice per item, 2% gold items."""
    from evaluation.report.inputs import ReportInput

    rng = np.random.default_rng(seed)
    n_items = n_judgments // 3
    systems = np.array([f"system-{k}" for k in range(n_systems)], dtype=object)
    strength = np.linspace(0.6, -0.6, n_systems)
    gold = rng.random(n_items) < 0.02
    c_item = np.repeat(np.arange(n_items), n_systems)
    c_id = np.tile(systems, n_items)
    metrics = np.array(["rougeL", "bleu"], dtype=object)
    s_item, s_candidate = np.repeat(c_item, 2), np.repeat(c_id, 2)
    s_metric = np.tile(metrics, len(c_item))
    j_item = np.repeat(np.arange(n_items), 3)
    a = rng.integers(0, n_systems, len(j_item))
    b = (a + rng.integers(1, n_systems, len(j_item))) % n_systems
    p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
    u = rng.random(len(j_item))
    value = np.where(u < 0.9 * p, systems[a], np.where(u < 0.9 * p + 0.1, "tie", systems[b])).astype(object)
    shown = (systems[a] + "|" + systems[b] + "|tie").astype(object)
    three_of_60 = np.argsort(rng.random((n_items, 60)), axis=1)[:, :3].ravel()  # 3 different annotators an item
    annotator = np.array([f"ann{k:02d}" for k in range(60)], dtype=object)[three_of_60]
    return ReportInput(slug=f"systems-{n_systems}", kind="pairwise_alignment", config={},
                       item_ids=np.array([f"item-{i:07d}" for i in range(n_items)], dtype=object), is_gold=gold,
                       gold=[systems[0] if g else None for g in gold], c_item=c_item, c_id=c_id,
                       j_item=j_item, j_annotator=annotator, j_question=np.full(len(j_item), "choice", dtype=object),
                       j_value=value, j_shown=shown, j_seconds=rng.integers(5, 120, len(j_item)).astype(float),
                       s_item=s_item, s_metric=s_metric, s_candidate=s_candidate,
                       s_value=np.round(rng.random(len(s_item)), 3),
                       p_item=np.arange(n_items), p_evaluator=np.full(n_items, "gemba", dtype=object),
                       p_annotator=np.full(n_items, "", dtype=object),
                       p_question=np.full(n_items, "choice", dtype=object),
                       p_value=systems[rng.integers(0, n_systems, n_items)])


def without_ranking():
    """A context in which the pairwise report skips the ranking keys (its comparisons, human
    rows, Bradley-Terry and bootstrap, intransitivity, metrics vs ranking)."""
    import contextlib

    from evaluation.bradley_terry import Comparisons
    from evaluation.report import choice as module

    empty = np.zeros(0, dtype=np.int64)
    patches = {"comparisons_of": lambda inp, rows, systems: (Comparisons(systems, empty, empty, empty,
                                                                         np.zeros(0)), 0),
               "ranking_part": lambda c, n: {"ranking": None},
               "correlations_ranking": lambda strengths, means: {}}

    @contextlib.contextmanager
    def patched():
        saved = {name: getattr(module, name) for name in patches}
        for name, stub in patches.items():
            setattr(module, name, stub)
        try:
            yield
        finally:
            for name, value in saved.items():
                setattr(module, name, value)
    return patched()


def systems_run(sizes, repeat):
    """The 2- and 5-system reports in one run (module docstring, `--systems`)."""
    from evaluation.bradley_terry import bt_ranking
    from evaluation.rank_bootstrap import warm_up
    from evaluation.report import build_report
    from evaluation.report.inputs import Judgments
    from evaluation.report.strengths import comparisons_of
    from evaluation.report.systems import system_codes

    print(f"statistics kernels compiled or loaded from numba's cache in {warm_up():.2f} s", flush=True)
    for n in sizes:
        for n_systems in (2, 5):
            inp = systems_input(n, n_systems)
            build_report(inp)  # warm (imports, caches)
            fulls, bares = [], []
            for _ in range(repeat):  # interleaved, so that a busy moment of the machine hits both alike
                fulls.append(timed(lambda inp=inp: build_report(inp), 1)[0])
                with without_ranking():
                    bares.append(timed(lambda inp=inp: build_report(inp), 1)[0])
            full = (min(fulls), statistics.median(fulls))
            bare = (min(bares), statistics.median(bares))
            js = Judgments.of(inp, inp.counted())
            rows = js.of_question("choice")
            names = [str(s) for s in system_codes(inp)[0].tolist()]
            compared, _ = comparisons_of(inp, rows, names)
            alone = timed(lambda compared=compared: bt_ranking(compared), repeat)
            report = build_report(inp)
            dropped = report["ranking_detail"].get("dropped_resamples")
            added = full[0] - bare[0]
            target = (f", {'within' if added < RANKING_ADDS_100K else 'OVER'} the {RANKING_ADDS_100K:g} s target"
                      if n == 100_000 and n_systems == 5 else "")
            print(f"{report['n_judgments']:>9} judgments, {n_systems} systems: report statistics best {full[0]:.3f} s "
                  f"(median {full[1]:.3f} s); without the ranking keys best {bare[0]:.3f} s (median {bare[1]:.3f} s); "
                  f"the ranking adds {added:.3f} s (best - best){target}; Bradley-Terry + "
                  f"{report['ranking_detail']['resamples']}-resample item bootstrap alone: best {alone[0]:.3f} s "
                  f"(median {alone[1]:.3f} s); {dropped} resamples dropped", flush=True)


RANKING_RATIO_TARGET = 1.5  # the ranking report's time over the pairwise report's (issue 33)


def listwise_input(n_judgments, n_systems=4, per_item=5, seed=0):
    """A `ranking` ReportInput (vectorized): items holding every system, `per_item` full
    rankings each (Plackett-Luce by Gumbel noise, no ties), two metric scores per candidate,
    2% gold items, annotators 5 of 60 per item."""
    from evaluation.report.inputs import ReportInput
    from evaluation.report.kinds import RANKING
    from evaluation.report.kinds.ranking import RANK_QUESTION
    from evaluation.screens.answer_checks import RANK_SEP

    rng = np.random.default_rng(seed)
    n_items = n_judgments // per_item
    systems = np.array([f"system-{k}" for k in range(n_systems)], dtype=object)
    strength = np.linspace(0.6, -0.6, n_systems)
    gold = rng.random(n_items) < 0.02
    c_item = np.repeat(np.arange(n_items), n_systems)
    c_id = np.tile(systems, n_items)
    s_item, s_candidate = np.repeat(c_item, 2), np.repeat(c_id, 2)
    s_metric = np.tile(np.array(["rougeL", "bleu"], dtype=object), len(c_item))
    j_item = np.repeat(np.arange(n_items), per_item)
    orders = np.argsort(-(strength + rng.gumbel(size=(len(j_item), n_systems))), axis=1)
    value = systems[orders[:, 0]]
    for k in range(1, n_systems):
        value = value + RANK_SEP + systems[orders[:, k]]
    chosen = np.argsort(rng.random((n_items, 60)), axis=1)[:, :per_item].ravel()
    annotator = np.array([f"ann{k:02d}" for k in range(60)], dtype=object)[chosen]
    best = RANK_SEP.join(systems.tolist())
    return ReportInput(slug="listwise", kind=RANKING, config={},
                       item_ids=np.array([f"item-{i:07d}" for i in range(n_items)], dtype=object), is_gold=gold,
                       gold=[best if g else None for g in gold], c_item=c_item, c_id=c_id, j_item=j_item,
                       j_annotator=annotator, j_question=np.full(len(j_item), RANK_QUESTION, dtype=object),
                       j_value=value.astype(object), j_shown=np.full(len(j_item), "|".join(systems), dtype=object),
                       j_seconds=rng.integers(5, 120, len(j_item)).astype(float), s_item=s_item, s_metric=s_metric,
                       s_candidate=s_candidate, s_value=np.round(rng.random(len(s_item)), 3))


def ranking_run(sizes, repeat):
    """The `ranking` report against the pairwise report of as many judgments (4 systems;
    `systems_input`), measured in turns in one run: statistics only, no database."""
    from evaluation.rank_bootstrap import warm_up
    from evaluation.report import build_report

    print(f"statistics kernels compiled or loaded from numba's cache in {warm_up():.2f} s", flush=True)
    for n in sizes:
        listwise, pairwise = listwise_input(n), systems_input(n, 4)
        build_report(listwise), build_report(pairwise)  # warm (imports, caches)
        ranked, paired = [], []
        for _ in range(repeat):  # interleaved: a busy moment of the machine hits both alike
            ranked.append(timed(lambda inp=listwise: build_report(inp), 1)[0])
            paired.append(timed(lambda inp=pairwise: build_report(inp), 1)[0])
        report = build_report(listwise)
        ratio = min(ranked) / min(paired)
        verdict = "within" if ratio <= RANKING_RATIO_TARGET else "OVER"
        print(f"{report['n_judgments']:>9} judgments (4 systems): ranking report best {min(ranked):.3f} s "
              f"(median {statistics.median(ranked):.3f} s); pairwise report best {min(paired):.3f} s "
              f"(median {statistics.median(paired):.3f} s); ratio {ratio:.2f} ({verdict} the "
              f"{RANKING_RATIO_TARGET:g}x target); {report['ranking_detail']['dropped_resamples']} resamples "
              f"dropped; Kendall's W {report['kendall_w']['value']:.4f} over {report['kendall_w']['n']} items",
              flush=True)


def run(sizes, repeat, kinds=False, save_dir=None):
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from evaluation.rank_bootstrap import warm_up

    print(f"statistics kernels compiled or loaded from numba's cache in {warm_up():.2f} s "
          "(once per process; setup compiles them)", flush=True)
    if kinds:
        kind_reports(sizes, save_dir)
        return
    client = web_client()
    results = {n: measure(n, client, repeat) for n in sizes}
    for n, label, target in ((100_000, "cold", COLD_100K), (1_000_000, "cold", COLD_1M),
                             (100_000, "warm dashboard page", WARM_PAGE_100K)):
        if n in results:
            value = results[n][label]
            print(f"{n:>9} judgments: {label} {value:.3f} s, {'within' if value < target else 'OVER'} "
                  f"the {target:g} s target", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=7, help="calls per warm measurement (best and median)")
    parser.add_argument("--kinds", action="store_true", help="one study per demo kind: report md5s (issue 21)")
    parser.add_argument("--save", help="with --kinds: a directory to keep the report texts in")
    parser.add_argument("--systems", action="store_true",
                        help="2 vs 5 systems in memory, no database: the ranking's added time (issue 22)")
    parser.add_argument("--kind", choices=["ranking"],
                        help="ranking: the listwise report vs the pairwise report, in memory (issue 33)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.kind:
        ranking_run(sizes, args.repeat)
        return
    if args.systems:
        systems_run(sizes, args.repeat)
        return
    os.environ.setdefault("SECURE_SSL_REDIRECT", "0")  # the test client speaks http
    from annot_scratch import scratch_database  # the bench/ scratch PostgreSQL database

    with scratch_database("report_bench"):
        run(sizes, args.repeat, args.kinds, args.save)


if __name__ == "__main__":
    main()
