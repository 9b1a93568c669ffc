"""Design runs started from the web (POST /api/designs/, the study's Plan page): each one a
JSON file under VAR_DIR/designs/, so every process of the site sees its status and progress
(no table: a run is a cache of a computation, not study data, and a new one is cheap).

A run is checked and its pilot fitted in the request that starts it (a bad design is that
request's 400, read from the database there); the simulation then runs on the site's capped
background pool (humeval.background), one run of a process at a time (the others queued),
in that process (no fork from a threaded server), and writes its progress (simulated
studies done of total) at most twice a second. Its id is
random (secrets.token_hex): knowing it is not enough, `visible` checks who asks.
"""
import json
import os
import re
import secrets
import tempfile
import threading
import time
from pathlib import Path

from django.conf import settings

from annotate import roles
from annotate.access import may_read_study
from humeval import background

from .design_spec import Design
from .run import run_design, total_studies

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
ID_PATTERN = re.compile(r"^[0-9a-f]{32}$")
WRITE_EVERY_SECONDS = 0.5
# A run from the web shares the site's background pool: at most this much work per run
# (`manage.py design` has no such limits).
_lock = threading.Lock()
_waiting: list[tuple[dict, Design]] = []  # runs of this process not yet on the pool, oldest first
_running = False
MAX_SIMULATIONS, MAX_ITEMS, MAX_ANNOTATORS, MAX_JUDGMENTS = 5000, 5000, 1000, 100_000


def _dir() -> Path:
    path = Path(settings.VAR_DIR) / "designs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _write(run: dict) -> None:
    """Atomically (a reader never sees half a file)."""
    fd, tmp = tempfile.mkstemp(dir=_dir(), suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(run, handle)
    os.replace(tmp, _dir() / f"{run['id']}.json")


def load(run_id: str) -> dict | None:
    if not isinstance(run_id, str) or not ID_PATTERN.match(run_id):
        return None
    try:
        return json.loads((_dir() / f"{run_id}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def visible(run: dict | None, user) -> bool:
    """Who may see a run: whoever started it, the researchers of its study, admins."""
    if run is None or not user.is_authenticated:
        return False
    return run["user"] == user.pk or roles.is_admin(user) or bool(run["study"] and may_read_study(user, run["study"]))


def _execute(run: dict, design: Design) -> None:
    run.update(status=RUNNING, started_at=time.time())
    _write(run)
    last = [0.0]

    def progress(done: int) -> None:
        run["done"] += done
        if time.time() - last[0] >= WRITE_EVERY_SECONDS:
            last[0] = time.time()
            _write(run)

    try:
        run["result"] = run_design(design, workers=1, progress=progress)
        run.update(status=DONE, done=run["total"])
    except Exception as exc:  # noqa: BLE001 (a failed run says why; the site goes on)
        run.update(status=FAILED, error=f"{type(exc).__name__}: {exc}")
    run["finished_at"] = time.time()
    _write(run)


def web_limits(design: Design) -> list[str]:
    """Why the design is too big to run from the web (manage.py design runs it), or []."""
    judgments = design.items * design.annotations_per_item * (len(design.systems) if design.scalar else 1)
    problems = [f"{name!r} may be at most {limit} here, got {value} (manage.py design has no limit)"
                for name, value, limit in (("simulations", design.simulations, MAX_SIMULATIONS),
                                           ("items", design.items, MAX_ITEMS),
                                           ("annotators", design.annotators, MAX_ANNOTATORS))
                if value > limit]
    if judgments > MAX_JUDGMENTS:
        problems.append(f"a simulated study of {judgments} judgments is too big here (at most {MAX_JUDGMENTS}; "
                        "manage.py design has no limit)")
    return problems


def _pump() -> None:
    """Hands the next waiting run to the background pool when none of this process's runs
    is on it: one at a time, as a run is CPU-bound Python (two threads would share one
    interpreter lock, and would hold two of the pool's places that report refreshes need)."""
    global _running
    with _lock:
        if _running or not _waiting:
            return
        _running = True
        run, design = _waiting.pop(0)
    background.submit(_work, run, design)


def _work(run: dict, design: Design) -> None:
    global _running
    try:
        _execute(run, design)
    finally:
        with _lock:
            _running = False
        _pump()


def start(raw: dict, design: Design, user, study_slug: str | None) -> dict:
    """A new run of the checked `design` (its file `raw` kept), queued for the background."""
    run = {"id": secrets.token_hex(16), "status": QUEUED, "design": raw, "study": study_slug, "user": user.pk,
           "done": 0, "total": total_studies(design), "result": None, "error": None, "created_at": time.time()}
    _write(run)
    with _lock:
        _waiting.append((dict(run), design))
    _pump()
    return run


def public(run: dict) -> dict:
    """What the API and the page show of a run."""
    return {key: run.get(key) for key in ("id", "status", "study", "design", "done", "total", "result", "error")}
