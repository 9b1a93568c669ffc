"""The load test of bench/load_test.py, small: 20 annotators for 15 s on gunicorn and a
fresh PostgreSQL database. Zero errors, zero lost or duplicated judgments, no item over
its overlap, counters consistent."""
import pytest
from bench_loader import load_bench

pytestmark = [pytest.mark.slow, pytest.mark.postgres("gunicorn workers on a fresh PostgreSQL database")]


def test_twenty_annotators_for_fifteen_seconds_lose_nothing():
    bench = load_bench()
    summary = bench.run(annotators=20, duration=15, items=400, overlap=3, workers=2, threads=4,
                        baseline_cycles=5, log=lambda msg: None)
    db = summary["db"]
    assert summary["errors"] == 0, summary["error_examples"]
    assert summary["submits_acknowledged"] > 0
    assert db["acknowledged"] == 1 * (summary["submits_acknowledged"] + 5)  # one question per item
    assert db["lost"] == 0 and db["acknowledged_value_differs"] == 0, db["lost_examples"]
    assert db["duplicates"] == 0
    assert db["over_overlap"] == 0
    assert db["complete_items_not_exactly_overlap"] == 0
    assert db["counter_mismatch"] == 0
    assert db["open_assignments"] == 0  # every item handed out was answered
    assert db["judgments"] == db["acknowledged"]
    assert summary["ok"] is True


def test_drained_study_has_exactly_the_overlap_on_every_item():
    """Few items, many annotators: the study runs out (every client gets 204) and then
    every item has exactly `overlap` judgments: 30 items x 3 = 90."""
    bench = load_bench()
    summary = bench.run(annotators=20, duration=60, items=30, overlap=3, workers=2, threads=4,
                        baseline_cycles=0, log=lambda msg: None)
    db = summary["db"]
    assert summary["errors"] == 0, summary["error_examples"]
    assert summary["drained_clients"] == 20
    assert db["all_items_exactly_overlap"] is True
    assert db["judgments"] == 90 and db["acknowledged"] == 90 and db["lost"] == 0
    assert db["complete_items"] == 30
