"""Issue 32: one capped executor (humeval/background.py) for every background unit of work.
Concurrency is measured here, by a counting wrapper around the real refresh and by the
units themselves, not read back from the executor's own counters alone."""
import threading
import time

import pytest
from django.db import connection

from annotate.models import ReportCache
from annotate.reports import cache as report_cache
from humeval import background
from tests.test_report_pairwise import pairwise_study


class Concurrency:
    """Counts how many calls are inside at once; `most` is the highest count seen."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now = self.most = self.calls = 0

    def wrap(self, fn, hold=0.05):
        def counted(*args):
            with self.lock:
                self.now += 1
                self.calls += 1
                self.most = max(self.most, self.now)
            try:
                time.sleep(hold)  # widen the window in which calls could overlap
                return fn(*args)
            finally:
                with self.lock:
                    self.now -= 1
        return counted


@pytest.mark.postgres("20 threads refresh reports on their own connections; restoring the serialized rows "
                     "after the test fails on SQLite's in-memory test database (duplicate content types)")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # leaves the database as it found it
def test_twenty_simultaneous_refresh_requests_never_run_more_than_the_cap(settings, monkeypatch):
    settings.HUMEVAL_BACKGROUND_THREADS = 3
    study = pairwise_study()
    seen = Concurrency()
    monkeypatch.setattr(report_cache, "refresh", seen.wrap(report_cache.refresh))
    background.reset_peak()
    start, queued, errors = threading.Barrier(20), [], []

    def request(n):
        try:
            start.wait()
            queued.append(report_cache.request_refresh(study, {"min_votes": n}))
        except Exception as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=request, args=(n,)) for n in range(1, 21)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert queued == [True] * 20 and seen.calls == 20
    assert seen.most == 3  # the cap was reached (the requests did overlap) and never passed
    assert background.peak() == 3
    built = ReportCache.objects.filter(study=study).exclude(version="")
    assert sorted(built.values_list("params", flat=True)) == sorted(f'{{"min_votes":{n}}}' for n in range(1, 21))


def test_submitted_units_run_at_most_the_cap_and_all_finish(settings):
    settings.HUMEVAL_BACKGROUND_THREADS = 2
    seen = Concurrency()
    handles = [background.submit(seen.wrap(lambda n: n * n), n) for n in range(6)]
    for handle in handles:
        handle.join(30)
    assert [h.future.result() for h in handles] == [0, 1, 4, 9, 16, 25]
    assert not any(h.is_alive() for h in handles)
    assert seen.calls == 6 and seen.most == 2


def test_a_heartbeat_never_waits_behind_a_full_cap(settings):
    """Two jobs hold both places; a heartbeat (counted=False) still runs at once."""
    settings.HUMEVAL_BACKGROUND_THREADS = 2
    release, beat = threading.Event(), threading.Event()
    jobs = [background.submit(release.wait, 30) for _ in range(2)]
    queued = background.submit(lambda: "third job")  # waits for a place
    time.sleep(0.2)
    heartbeat = background.submit(beat.set, counted=False)
    assert beat.wait(5)
    assert queued.is_alive()
    release.set()
    for handle in (*jobs, queued, heartbeat):
        handle.join(30)
    assert queued.future.result() == "third job"

