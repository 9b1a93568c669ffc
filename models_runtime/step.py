"""Progress inside a job's chunk (issue 16, D7): a chunk of 16 records is one batched
backend call, so the job's item count moves 16 at a time; this counts the generations (or
predictions) done inside it. The kind opens `counting(total, unit)` around its backend
calls, the backends `advance()` after each batch or answer, and the job's heartbeat thread
writes the count to `Job.step` ({"done", "total", "unit"}), which the dashboard shows under
the job's bar. Thread-local: the counting, the backend call and `listen` run in the job's
own thread (an OpenAI backend's pool reports from the caller as the answers come back).
No Django import: the backends use it."""
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_local = threading.local()


class Step:
    def __init__(self, total: int, unit: str):
        self.done, self.total, self.unit = 0, int(total), unit
        self.on_advance: Callable[[Step], None] | None = None  # a command's progress bar

    def as_json(self) -> dict:
        return {"done": self.done, "total": self.total, "unit": self.unit}


def listen(callback: Callable[["Step | None"], None] | None) -> None:
    """The running job's heartbeat: told when a count starts (a Step) and ends (None)."""
    _local.listener = callback


def listener() -> Callable[["Step | None"], None] | None:
    """The current listener (a nested job's heartbeat restores it when it ends)."""
    return getattr(_local, "listener", None)


def _notify(step: "Step | None") -> None:
    listener = getattr(_local, "listener", None)
    if listener is not None:
        listener(step)


@contextmanager
def counting(total: int, unit: str = "generations") -> Iterator[Step]:
    step = Step(total, unit)
    previous = getattr(_local, "step", None)
    _local.step = step
    _notify(step)
    try:
        yield step
    finally:
        _local.step = previous
        _notify(previous)


def advance(n: int = 1) -> None:
    """n more units done (no-op outside a count)."""
    step = getattr(_local, "step", None)
    if step is not None and n > 0:
        step.done = min(step.total, step.done + n)
        if step.on_advance is not None:
            step.on_advance(step)
