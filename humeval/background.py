"""The one capped executor for background work in a process: report refreshes run without a
broker, runtime jobs started in the background, and the job heartbeat. Nothing else in the
product starts a thread (compute pools inside one report build or one batch of model calls
are joined before the call returns, so they are not background work).

At most `settings.HUMEVAL_BACKGROUND_THREADS` units of work run at once, counted by one
semaphore: `submit` runs a unit on the pool's threads, `slot` runs one in the caller's
thread (a refresh without a broker answers the request that asked for it, in that
request's database transaction) and still counts against the cap. A running job's
heartbeat is a companion, not work: it is submitted with `counted=False`, so it never waits
behind the jobs it must keep alive (a heartbeat queued behind a full cap would let its job
look stale). The pool has twice the cap in threads: the cap's units plus one heartbeat each.
`peak()` is the most units that ran at once, for tests and benchmarks.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

from django.conf import settings

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_slots: threading.BoundedSemaphore | None = None
_cap = 0
_running = 0
_peak = 0


def cap() -> int:
    return int(settings.HUMEVAL_BACKGROUND_THREADS)


def _state() -> tuple[ThreadPoolExecutor, threading.BoundedSemaphore]:
    """The pool and the semaphore, made on first use (and again if the setting changed)."""
    global _pool, _slots, _cap
    with _lock:
        if _pool is None or _slots is None or _cap != cap():
            _cap = cap()
            _pool = ThreadPoolExecutor(max_workers=2 * _cap, thread_name_prefix="humeval-bg")
            _slots = threading.BoundedSemaphore(_cap)
        return _pool, _slots


@contextmanager
def slot() -> Iterator[None]:
    """Holds one of the cap's places while the block runs (waits for one if all are taken)."""
    global _running, _peak
    _, slots = _state()
    with slots:
        with _lock:
            _running += 1
            _peak = max(_peak, _running)
        try:
            yield
        finally:
            with _lock:
                _running -= 1


class Handle:
    """A submitted unit, joinable like a thread (`join`, `is_alive`)."""

    def __init__(self, future: Future):
        self.future = future

    def join(self, timeout: float | None = None) -> None:
        wait([self.future], timeout)

    def is_alive(self) -> bool:
        return not self.future.done()


def submit(fn: Callable[..., Any], *args: Any, counted: bool = True) -> Handle:
    """Runs `fn(*args)` on the pool, within the cap (`counted=False`: a job's heartbeat)."""
    pool, _ = _state()

    def unit() -> Any:
        if not counted:
            return fn(*args)
        with slot():
            return fn(*args)

    return Handle(pool.submit(unit))


def peak() -> int:
    return _peak


def reset_peak() -> None:
    global _peak
    with _lock:
        _peak = _running
