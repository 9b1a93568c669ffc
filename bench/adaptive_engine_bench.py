"""What adaptive allocation costs the engine (docs/adaptive-allocation.md): next-item
latency in a balanced and an adaptive study of 5 systems (items of 5 candidates), each
already holding `--judged` answered assignments (random pairs, bulk-loaded), then
`--requests` requests answered one by one by 50 annotators (the adaptive path reads the
study's `choice` answers, grouped, under the study lock and fits the allocation strengths).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/humeval \
        .venv/bin/python bench/adaptive_engine_bench.py [--items N] [--judged J] [--requests R]

Uses a scratch database `<name>_adaptive_engine_bench`. Prints p50/p95 per policy.
"""
import argparse
import random
import time

from annot_scratch import percentile, scratch_database

SYSTEMS = ["s0", "s1", "s2", "s3", "s4"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--judged", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    with scratch_database("adaptive_engine_bench"):
        for policy in ("balanced", "adaptive"):
            run(policy, args.items, args.judged, args.requests)


def run(policy, n_items, n_judged, n_requests):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.utils import timezone

    from annotate.desk.assignment import next_assignment
    from annotate.desk.submission import submit
    from annotate.models import Assignment, Item, Judgment, Study

    rng = random.Random(0)
    study = Study.objects.create(slug=f"bench-{policy}", kind="pairwise_alignment", title="bench",
                                 annotations_per_item=3, gold_rate=0.0, config={"allocation": policy})
    data = {"input": "q", "reference": "r", "candidates": [{"id": s, "text": s.upper()} for s in SYSTEMS]}
    items = Item.objects.bulk_create([Item(study=study, item_id=f"i{k}", position=k, content_hash=str(k), data=data)
                                      for k in range(n_items)], batch_size=5000)
    group, _ = Group.objects.get_or_create(name="annotators")
    users = [get_user_model().objects.get_or_create(username=f"{policy}-u{k}")[0] for k in range(50)]
    group.user_set.add(*users)
    loader = get_user_model().objects.create_user(f"{policy}-loader")
    now = timezone.now()
    assignments, judgments = [], []
    for k in range(n_judged):  # one answered assignment on each of the first items, a random pair
        a, b = rng.sample(SYSTEMS, 2)
        assignments.append(Assignment(study=study, item=items[k], annotator=loader, completed_at=now,
                                      shown_order={"candidates": [a, b], "choice": [a, b]}, probability=0.1))
    Assignment.objects.bulk_create(assignments, batch_size=5000)
    for assignment in assignments:
        a, b = assignment.shown_order["candidates"]
        judgments.append(Judgment(study=study, item=assignment.item, assignment=assignment, annotator=loader,
                                  question="choice", value=a if rng.random() < 0.6 else b, shown_order=f"{a}|{b}",
                                  submitted_at=now))
    Judgment.objects.bulk_create(judgments, batch_size=5000)
    Item.objects.filter(pk__in=[i.pk for i in items[:n_judged]]).update(n_assigned=1, n_completed=1)
    latencies = []
    for r in range(n_requests):
        user = users[r % len(users)]
        start = time.perf_counter()
        assignment = next_assignment(study, user)
        latencies.append(time.perf_counter() - start)
        submit(assignment.pk, user, {"choice": assignment.shown_order["candidates"][0]}, seconds=5)
    p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
    print(f"{policy:9s}: {n_items} items of 5 candidates, {n_judged} answers before, {n_requests} requests: "
          f"next_assignment p50 {1000 * p50:.2f} ms, p95 {1000 * p95:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
