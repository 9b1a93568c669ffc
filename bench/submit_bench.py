"""Submit speed: our submit path (lock the assignment, validate every answer, insert the
judgments, complete the assignment, bump the item counter, one transaction each) next
to raw SQL INSERTs of the same judgments (one autocommit statement per item), in the
same run on the same server.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/humeval .venv/bin/python bench/submit_bench.py [--items N]

Uses a scratch database `<name>_submit_bench`. Prints both rates and their ratio.
"""
import argparse
import time

from annot_scratch import scratch_database


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000, help="items per study (aspect_pairwise: 5 answers each)")
    args = parser.parse_args()
    with scratch_database("submit_bench") as dsn:
        run(args.items, dsn)


def make_study(slug, n):
    from annotate.models import Item, Study
    study = Study.objects.create(slug=slug, kind="aspect_pairwise", title=slug, annotations_per_item=1, gold_rate=0)
    Item.objects.bulk_create([
        Item(study=study, item_id=f"i{k}", position=k, content_hash=str(k),
             data={"premise": f"premise {k}", "candidates": [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}]})
        for k in range(n)])
    return study


def run(n, dsn):
    from datetime import timedelta

    import psycopg
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotate.desk.blinding import blinding_for
    from annotate.desk.submission import submit
    from annotate.models import Assignment, Item, Judgment

    user = get_user_model().objects.create_user("bench", is_superuser=True)
    answers = {a: "a" for a in ("interestingness", "adaptability", "surprise", "character", "ending")}
    ours = make_study("ours", n)
    expires = timezone.now() + timedelta(days=1)
    assignments = Assignment.objects.bulk_create([  # handed out beforehand: only the submit is timed
        Assignment(study=ours, item=item, annotator=user, expires_at=expires,
                   shown_order={"candidates": ["a", "b"], **{q: ["a", "b"] for q in answers}})
        for item in Item.objects.filter(study=ours).order_by("position")])
    # The annotator's doors send the assignment's blinding tokens (annotate.desk.blinding); the
    # mapping is made when an item is handed out, so it is made here, before the clock runs.
    sent = [blinding_for(Assignment.objects.select_related("study", "item").get(pk=a.pk)).values(answers)
            for a in assignments]
    start = time.perf_counter()
    for a, tokens in zip(assignments, sent, strict=True):
        submit(a.pk, user, tokens, seconds=12.5, blinded=True)
    ours_s = time.perf_counter() - start
    assert Judgment.objects.filter(study=ours).count() == 5 * n

    raw = make_study("raw", n)
    raw_items = list(Item.objects.filter(study=raw).order_by("position").values_list("pk", flat=True))
    sql = ("INSERT INTO annotate_judgment (study_id, item_id, annotator_id, question, value, shown_order, seconds, "
           "submitted_at, comment) VALUES " + ", ".join(["(%s, %s, %s, %s, %s, %s, %s, now(), '')"] * 5))
    with psycopg.connect(dsn, autocommit=True) as conn:
        start = time.perf_counter()
        for item_pk in raw_items:
            params = []
            for question in answers:
                params += [raw.pk, item_pk, user.pk, question, "a", "a|b", 12.5]
            conn.execute(sql, params)
        raw_s = time.perf_counter() - start
    assert Judgment.objects.filter(study=raw).count() == 5 * n

    print(f"{n} submits x 5 answers (aspect_pairwise)")
    print(f"submit():   {ours_s:.2f} s = {n / ours_s:,.0f} submits/s ({1000 * ours_s / n:.1f} ms each)")
    print(f"raw INSERT: {raw_s:.2f} s = {n / raw_s:,.0f} submits/s ({1000 * raw_s / n:.1f} ms each)")
    print(f"ratio submit/raw time: {ours_s / raw_s:.1f}x")


if __name__ == "__main__":
    main()
