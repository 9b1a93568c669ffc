"""Next-item latency with many items and annotators: annotators take turns asking for
work and submitting, so each request runs on a realistically filled study (items
partly assigned, expired assignments reclaimed, gold mixed in). The reference, measured
in the same run, is a primary-key SELECT of one item (one database round trip).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/humeval \
        .venv/bin/python bench/assign_bench.py [--items N] [--annotators K] [--requests R]

Uses a scratch database `<name>_assign_bench`. Prints p50/p95 of both and the ratio.
"""
import argparse
import time

from annot_scratch import percentile, scratch_database


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--annotators", type=int, default=100)
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    with scratch_database("assign_bench"):
        run(args.items, args.annotators, args.requests)


def run(n_items, n_annotators, n_requests):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from annotate.desk.assignment import next_assignment
    from annotate.desk.submission import submit
    from annotate.models import Item, Study

    study = Study.objects.create(slug="bench", kind="pairwise_alignment", title="bench", annotations_per_item=3,
                                 gold_rate=0.05)
    data = {"input": "q", "reference": "r", "candidates": [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}]}
    Item.objects.bulk_create([Item(study=study, item_id=f"i{k}", position=k, content_hash=str(k), data=data,
                                   is_gold=k % 50 == 0, gold={"choice": "a"} if k % 50 == 0 else None)
                              for k in range(n_items)], batch_size=5000)
    group = Group.objects.get(name="annotators")
    users = [get_user_model().objects.create_user(f"u{k}") for k in range(n_annotators)]
    group.user_set.add(*users)

    latencies = []
    for r in range(n_requests):
        user = users[r % n_annotators]
        start = time.perf_counter()
        assignment = next_assignment(study, user)
        latencies.append(time.perf_counter() - start)
        if r % 3:  # two thirds are answered, one third left open (they will block slots)
            submit(assignment.pk, user, {"choice": "a"}, seconds=5)

    pks = list(Item.objects.filter(study=study).values_list("pk", flat=True)[:n_requests])
    reference = []
    for pk in pks:
        start = time.perf_counter()
        Item.objects.filter(pk=pk).first()
        reference.append(time.perf_counter() - start)

    p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
    r50, r95 = percentile(reference, 0.5), percentile(reference, 0.95)
    print(f"{n_items} items (2% gold), {n_annotators} annotators, {n_requests} next-item requests")
    print(f"next_assignment: p50 {1000 * p50:.2f} ms, p95 {1000 * p95:.2f} ms")
    print(f"pk SELECT:       p50 {1000 * r50:.2f} ms, p95 {1000 * r95:.2f} ms")
    print(f"ratio p50: {p50 / r50:.1f}x")


if __name__ == "__main__":
    main()
