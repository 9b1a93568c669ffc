"""Speed of `manage.py design` (issue 34): 1,000 simulated studies of 100 items x 3
annotators x 4 systems with a rank-separation target (each study = the engine's rules
replayed in memory + the report's ranking with its 2,000-resample item bootstrap), next to a
reference measured in the same run: the same study's assignments handed out by the real
database engine (`next_assignment`, PostgreSQL or SQLite as configured), per study.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/humeval DJANGO_SETTINGS_MODULE=humeval.test_settings \
        .venv/bin/python bench/design_bench.py [--simulations 1000] [--workers 2]

Target: the 1,000 studies in under 60 s on 2 cores. The database reference uses a scratch
test database (created and dropped by Django's test runner utilities).
"""
import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "humeval.test_settings")

import django  # noqa: E402

django.setup()

from django.test.utils import setup_test_environment  # noqa: E402

from annotate.planning.design_spec import parse_design  # noqa: E402
from annotate.planning.power import power, simulate_study  # noqa: E402

DESIGN = {"kind": "pairwise_alignment", "systems": {"a": 0.4, "b": 0.15, "c": -0.15, "d": -0.4}, "items": 100,
          "annotations_per_item": 3, "annotators": 3, "item_sd": 0.3,
          "targets": [{"test": "rank_separation", "a": "a", "b": "d"}]}


def database_engine_seconds(studies: int) -> float:
    """Seconds per study for the database engine to hand out the same study's 300 assignments."""
    from django.db import connection

    from annotate.desk.assignment import next_assignment
    from annotate.models import Assignment
    from tests.factories import get_annotator, make_study

    setup_test_environment()
    old = connection.creation.create_test_db(verbosity=0)
    try:
        began = time.perf_counter()
        for n in range(studies):
            study = make_study(slug=f"bench-{n}", overlap=3, gold_rate=0.0)
            data = {"input": "q", "reference": "r", "candidates": [{"id": s, "text": s} for s in DESIGN["systems"]]}
            study.items.bulk_create([study.items.model(study=study, item_id=f"i{i}", position=i, data=data,
                                                       content_hash=f"h{i}") for i in range(DESIGN["items"])])
            users = [get_annotator(f"bench-{n}-{k}") for k in range(3)]
            active = list(users)
            while active:
                user = active[0]
                got = next_assignment(study, user)
                if got is None:
                    active.pop(0)
                    continue
                Assignment.objects.filter(pk=got.pk).update(completed_at=got.created_at)
                active.append(active.pop(0))
        return (time.perf_counter() - began) / studies
    finally:
        connection.creation.destroy_test_db(old, verbosity=0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--db-studies", type=int, default=3)
    args = parser.parse_args()
    design = parse_design({**DESIGN, "simulations": args.simulations})
    simulate_study(design, 0)  # warm-up (kinds, numba kernels)
    began = time.perf_counter()
    result = power(design, args.workers)[0]
    seconds = time.perf_counter() - began
    replay_began = time.perf_counter()
    for sim in range(20):
        simulate_study(design, sim)
    replay = (time.perf_counter() - replay_began) / 20
    db = database_engine_seconds(args.db_studies)
    print(f"design: {args.simulations} studies of 100 items x 3 annotators x 4 systems, {args.workers} workers: "
          f"{seconds:.1f} s (target < 60 s); power {result['power']:.3f} (se {result['se']:.3f})")
    print(f"one study's assignments: replay {replay * 1000:.1f} ms, database engine {db * 1000:.0f} ms "
          f"(ratio {db / replay:.0f}x); 1,000 studies through the database would take {db * 1000 / 60:.0f} min "
          "before any statistics")


if __name__ == "__main__":
    main()
