"""Batch import speed: items/s of `import_batch` for a 100k-item file, next to a raw
psycopg COPY of the same rows into the same table, measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/humeval .venv/bin/python bench/import_bench.py [--items N]

Uses a scratch database `<name>_import_bench` (created, migrated, dropped). Prints the
two rates, their ratio and the process's peak RSS growth during the import.
"""
import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def item_line(n):
    words = " ".join(f"w{(n * 7 + k) % 997}" for k in range(40))
    return {"item_id": f"item-{n:07d}", "input": f"Request {n}: {words}", "reference": f"Reference {n}: {words}",
            "candidates": [{"id": "model-a", "text": f"A {n} {words}"}, {"id": "model-b", "text": f"B {n} {words}"}],
            "meta": {"n": n}}


def write_batch(path, n_items, slug):
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps({"study": {"slug": slug, "kind": "pairwise_alignment", "title": "bench"}}) + "\n")
        for n in range(n_items):
            out.write(json.dumps(item_line(n)) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    from annot_scratch import scratch_database  # the bench/ scratch PostgreSQL database

    with scratch_database("import_bench") as dsn:
        run(args.items, dsn)


def run(n_items, dsn):
    import django
    django.setup()
    import psycopg
    from django.core.management import call_command

    from annotate.models import Batch, Item, Study
    from annotate.studies.importing import import_batch_path
    from annotate.studies.json_lines import canonical_hash

    call_command("migrate", verbosity=0, skip_checks=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "batch.jsonl"
        write_batch(path, n_items, "bench-import")
        size_mb = path.stat().st_size / 1e6
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        result = import_batch_path(path)
        import_s = time.perf_counter() - start
        rss_growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
        assert result.created == n_items and Item.objects.count() == n_items

    # Reference: the same rows (already serialized) through COPY into the same table.
    study = Study.objects.create(slug="bench-copy", kind="pairwise_alignment", title="copy")
    batch = Batch.objects.create(study=study, source="copy")
    rows = []
    for n in range(n_items):
        line = item_line(n)
        data = {k: v for k, v in line.items() if k not in ("item_id", "meta", "gold")}
        rows.append((study.pk, batch.pk, line["item_id"], n + 1, json.dumps(data), json.dumps(line["meta"]),
                     None, False, canonical_hash(line), 0, 0))
    columns = "study_id, batch_id, item_id, position, data, meta, gold, is_gold, content_hash, n_assigned, n_completed"
    with psycopg.connect(dsn) as conn:
        start = time.perf_counter()
        with conn.cursor() as cur, cur.copy(f"COPY annotate_item ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        conn.commit()
        copy_s = time.perf_counter() - start
    assert Item.objects.filter(study=study).count() == n_items

    print(f"file: {n_items} items, {size_mb:.1f} MB")
    print(f"import_batch: {import_s:.2f} s = {n_items / import_s:,.0f} items/s "
          f"(peak RSS growth {rss_growth_mb:.0f} MB)")
    print(f"raw COPY:     {copy_s:.2f} s = {n_items / copy_s:,.0f} items/s (rows pre-serialized in memory)")
    print(f"ratio import/COPY time: {import_s / copy_s:.1f}x")


if __name__ == "__main__":
    main()
