"""Load test: N concurrent annotators against gunicorn + PostgreSQL on loopback.

    .venv/bin/python bench/load_test.py [--annotators 200] [--duration 120] [--items 4000]

What it does, all on 127.0.0.1:
1. creates a fresh PostgreSQL database for this run (dropped afterwards unless --keep-db),
   migrates it, and creates N annotators with API tokens and one pairwise study;
2. starts gunicorn (gthread workers) on a free port with production settings
   (DEBUG off; HUMEVAL_INSECURE_HTTP=1 because loopback speaks plain HTTP);
3. reference: one extra annotator alone does --baseline-cycles next+submit cycles;
4. load: N asyncio clients (httpx) each loop "next item -> submit answers" until the
   deadline (or until the study has nothing left for them: 204), logging every
   acknowledged submit (201/200);
5. checks the database: no duplicate (item, annotator, question), no item over its
   overlap, every completed item has exactly its overlap, every acknowledged submit is
   stored with the acknowledged value, counters consistent;
6. prints one JSON summary (requests, req/s, latency p50/p95, errors, lost, ratios
   against the single-client reference measured in the same run).

Exit status 0 only if errors == 0, lost == 0 and every database check passed.
Retryable answers (connection refused/reset, 502/503/504) are retried with backoff and
counted apart from errors; tests/test_faults.py reuses this module for the PostgreSQL
restart test through `run()` and its `during` hook.
"""
import argparse
import asyncio
import json
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
GUNICORN = str(Path(PYTHON).with_name("gunicorn"))
DEFAULT_DB_URL = "postgres://postgres@127.0.0.1:5432/humeval"
SLUG = "load-study"
RETRYABLE_STATUS = {502, 503, 504}


# --- database and Django-side steps (run in a child process with its own settings) ----

def server_env(db_url):
    env = {k: v for k, v in os.environ.items()
           if k not in {"DEBUG", "TEST_DATABASE_NAME", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update({
        "DATABASE_URL": db_url, "DEBUG": "0", "HUMEVAL_INSECURE_HTTP": "1",
        "SECRET_KEY": env.get("LOAD_SECRET_KEY") or secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "DJANGO_SETTINGS_MODULE": "humeval.settings", "PYTHONPATH": str(ROOT),
        "HUMEVAL_LOG_LEVEL": "ERROR",
        # Scripted annotators click without pause: one alone passes a person's 240 writes a
        # minute (humeval/api_limits.py), so the per-user write throttle is off here; the
        # test measures capacity and integrity, tests/test_request_limits.py the throttle.
        "HUMEVAL_THROTTLE_WRITE": "",
    })
    env.pop("CELERY_BROKER_URL", None)  # annotation never needs a broker
    return env


def admin_connect(base_url):
    from urllib.parse import urlsplit, urlunsplit

    import psycopg
    parts = urlsplit(base_url)
    return psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True)


def create_database(base_url):
    """A fresh, uniquely named database on the server of `base_url`; returns its URL."""
    from urllib.parse import urlsplit, urlunsplit
    name = f"humeval_load_{os.getpid()}_{secrets.token_hex(3)}"
    with admin_connect(base_url) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(base_url)._replace(path="/" + name)), name


def drop_database(base_url, name):
    with admin_connect(base_url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def django_task(db_url, task, params):
    """Runs `_django_main` in a child process against `db_url`; returns its JSON."""
    result = subprocess.run([PYTHON, __file__, "--django-task", task], input=json.dumps(params),
                            env=server_env(db_url), cwd=ROOT, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(f"{task} failed: {result.stderr[-3000:]}")
    return json.loads(result.stdout)


def _populate(params):
    """Annotators with tokens, one pairwise study with `items` items (no gold: every slot
    counts towards the overlap)."""
    import hashlib

    from django.contrib.auth.models import Group, User
    from django.db import transaction
    from rest_framework.authtoken.models import Token

    from annotate.models import Item, Study

    group = Group.objects.get(name="annotators")
    with transaction.atomic():
        study = Study.objects.create(slug=SLUG, kind="pairwise_alignment", title="Load test",
                                     annotations_per_item=params["overlap"], gold_rate=0.0)
        items = []
        for n in range(params["items"]):
            data = {"input": f"Request {n} <b>&amp;</b>", "reference": f"My own text number {n}.",
                    "candidates": [{"id": "model-a", "text": f"A says {n}"}, {"id": "model-b", "text": f"B says {n}"}]}
            items.append(Item(study=study, item_id=f"it-{n:06d}", position=n, data=data,
                              content_hash=hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()))
        Item.objects.bulk_create(items, batch_size=2000)
        tokens = {}
        for n in range(params["annotators"]):
            user = User.objects.create_user(f"load-ann-{n:04d}", password=None)
            user.groups.add(group)
            tokens[user.username] = Token.objects.create(user=user).key
    return {"tokens": tokens, "slug": SLUG}


def _check(params):
    """Database invariants after the run, against the client's log of acknowledged submits."""
    from django.db.models import Count

    from annotate.desk.blinding import Blinding
    from annotate.kinds import questions_for
    from annotate.models import Assignment, Item, Judgment, Study

    study = Study.objects.get(slug=params["slug"])
    overlap = study.annotations_per_item
    excluded = set(params.get("exclude_users", []))
    n_questions = len(questions_for(study.kind, dict(study.config, allow_tie=study.allow_tie),
                                    Item.objects.filter(study=study).first().data))
    judgments = Judgment.objects.filter(study=study).exclude(annotator__username__in=excluded)
    duplicates = (judgments.values("item_id", "annotator_id", "question").annotate(n=Count("id"))
                  .filter(n__gt=1).count())
    per_item = {row["item_id"]: row for row in judgments.values("item_id").annotate(
        annotators=Count("annotator_id", distinct=True), n=Count("id"))}
    all_judgments = Judgment.objects.filter(study=study)
    per_item_all = {row["item_id"]: row["annotators"] for row in all_judgments.values("item_id").annotate(
        annotators=Count("annotator_id", distinct=True))}
    over_overlap = sum(1 for a in per_item_all.values() if a > overlap)
    partial_sets = sum(1 for row in per_item.values() if row["n"] != row["annotators"] * n_questions)
    items = list(Item.objects.filter(study=study).values("id", "item_id", "n_assigned", "n_completed"))
    completed_assignments = dict(Assignment.objects.filter(study=study, completed_at__isnull=False)
                                 .values("item_id").annotate(n=Count("id")).values_list("item_id", "n"))
    counter_mismatch = sum(1 for it in items if it["n_completed"] != completed_assignments.get(it["id"], 0)
                           or per_item_all.get(it["id"], 0) != it["n_completed"])
    complete = [it for it in items if it["n_completed"] >= overlap]
    complete_wrong = sum(1 for it in complete if per_item_all.get(it["id"], 0) != overlap)
    open_assignments = Assignment.objects.filter(study=study, completed_at__isnull=True).count()

    # The clients saw each assignment blinded (annotate.desk.blinding): compare in their tokens.
    stored = {}
    for u, blind, q, v in all_judgments.values_list("annotator__username", "assignment__blind", "question", "value"):
        tokens = Blinding(blind or {})
        stored[(u, tokens.item, tokens.question(q))] = tokens.option(v)
    lost, wrong_value = [], 0
    acked_keys = set()
    for user, item_id, question, value in params["acks"]:
        key = (user, item_id, question)
        acked_keys.add(key)
        if key not in stored:
            lost.append(list(key))
        elif stored[key] != value:
            wrong_value += 1
    unacknowledged = sum(1 for key in stored if key[0] not in excluded and key not in acked_keys)
    return {
        "items": len(items), "complete_items": len(complete), "judgments": len(stored),
        "duplicates": duplicates, "over_overlap": over_overlap, "partial_answer_sets": partial_sets,
        "complete_items_not_exactly_overlap": complete_wrong, "counter_mismatch": counter_mismatch,
        "open_assignments": open_assignments, "acknowledged": len(params["acks"]), "lost": len(lost),
        "lost_examples": lost[:5], "acknowledged_value_differs": wrong_value,
        "stored_not_acknowledged": unacknowledged,
        "all_items_exactly_overlap": all(per_item_all.get(it["id"], 0) == overlap for it in items),
    }


def _django_main(task):
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    params = json.loads(sys.stdin.read())
    if task == "populate":
        out = _populate(params)
    elif task == "check":
        out = _check(params)
    else:
        raise SystemExit(f"unknown task {task}")
    sys.stdout.write(json.dumps(out))


# --- gunicorn ------------------------------------------------------------------------

def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    proc: subprocess.Popen
    url: str
    log_path: str

    def log_tail(self, n=4000):
        try:
            return Path(self.log_path).read_text()[-n:]
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_server(db_url, workers=3, threads=8, extra_env=None):
    """gunicorn on a free loopback port; returns once /login/ answers."""
    port = free_port()
    # Stays open as the server's stdout for its whole life; the path is kept in Server.
    log = tempfile.NamedTemporaryFile(prefix="humeval-gunicorn-", suffix=".log", delete=False)  # noqa: SIM115
    env = server_env(db_url)
    env.update(extra_env or {})
    proc = subprocess.Popen(
        [GUNICORN, "humeval.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
         "--worker-class", "gthread", "--threads", str(threads), "--backlog", "2048", "--timeout", "120",
         "--graceful-timeout", "20", "--keep-alive", "30"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(proc, f"http://127.0.0.1:{port}", log.name)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("gunicorn exited: " + server.log_tail())
        try:
            if httpx.get(server.url + "/login/", timeout=5).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    server.stop()
    raise RuntimeError("gunicorn did not answer within 90 s: " + server.log_tail())


# --- the clients -----------------------------------------------------------------------

@dataclass
class Stats:
    requests: int = 0
    latencies: list = field(default_factory=list)  # seconds, every request that got an answer
    errors: list = field(default_factory=list)  # (status or exception name, path)
    retryable: int = 0  # 502/503/504 or connection failures, retried
    retry_reasons: dict = field(default_factory=dict)  # status or exception name -> count
    ack_times: list = field(default_factory=list)  # monotonic time of every acknowledged submit
    retry_windows: list = field(default_factory=list)  # (first retryable t, recovered t)
    acks: list = field(default_factory=list)  # [username, item handle, question, value], as the client saw them
    cycles: int = 0
    drained_clients: int = 0


def answers_for(payload, rng):
    answers = {}
    for question in payload["questions"]:
        if "options" in question:
            answers[question["id"]] = rng.choice(question["options"])
        else:
            lo, hi = question["scale"]
            answers[question["id"]] = rng.randint(lo, hi)
    answers["seconds"] = round(rng.uniform(2, 30), 2)
    return answers


async def call(client, stats, method, path, token, json_body=None, retry_until=None):
    """One API call with retries on retryable failures; returns the response or None."""
    outage_started = None
    while True:
        t0 = time.monotonic()
        try:
            response = await client.request(method, path, json=json_body, headers={"Authorization": f"Token {token}"})
        except httpx.TransportError as exc:
            response, failure = None, type(exc).__name__
        else:
            failure = response.status_code if response.status_code in RETRYABLE_STATUS else None
        stats.requests += 1
        if response is not None:
            stats.latencies.append(time.monotonic() - t0)
        if failure is None:
            if outage_started is not None:
                stats.retry_windows.append((outage_started, time.monotonic()))
            return response
        stats.retryable += 1
        stats.retry_reasons[str(failure)] = stats.retry_reasons.get(str(failure), 0) + 1
        outage_started = outage_started or time.monotonic()
        if retry_until is None or time.monotonic() > retry_until:
            stats.errors.append((str(failure), path))
            return None
        delay = float(response.headers.get("Retry-After", "0.5")) if response is not None else 0.5
        await asyncio.sleep(min(delay, 2.0) * random.uniform(0.5, 1.0))


async def annotator_loop(client, stats, username, token, slug, deadline, retry_grace, seed):
    rng = random.Random(seed)
    while time.monotonic() < deadline:
        nxt = await call(client, stats, "POST", f"/api/studies/{slug}/assignments/next/", token,
                         retry_until=deadline + retry_grace)
        if nxt is None:
            continue
        if nxt.status_code == 204:
            stats.drained_clients += 1
            return
        if nxt.status_code != 200:
            stats.errors.append((str(nxt.status_code), "next"))
            await asyncio.sleep(0.5)
            continue
        payload = nxt.json()
        answers = answers_for(payload, rng)
        # Submit even past the deadline: an item once handed out is always answered.
        sub = await call(client, stats, "POST", f"/api/assignments/{payload['assignment']}/judgments/", token,
                         json_body=answers, retry_until=time.monotonic() + retry_grace + 60)
        if sub is None:
            continue
        if sub.status_code not in (200, 201):
            stats.errors.append((str(sub.status_code), "judgments"))
            continue
        stored = {j["question"]: j["value"] for j in sub.json()["judgments"]}
        for question in payload["questions"]:
            stats.acks.append([username, payload["item_id"], question["id"], stored[question["id"]]])
        stats.ack_times.append(time.monotonic())
        stats.cycles += 1


async def run_clients(base_url, tokens, slug, duration, retry_grace=0.0, during=None, timeout=120.0):
    stats = Stats()
    limits = httpx.Limits(max_connections=len(tokens) + 10, max_keepalive_connections=len(tokens) + 10)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=timeout) as client:
        start = time.monotonic()
        deadline = start + duration
        tasks = [annotator_loop(client, stats, user, tok, slug, deadline, retry_grace, n)
                 for n, (user, tok) in enumerate(sorted(tokens.items()))]
        extra = [during(start)] if during else []
        results = await asyncio.gather(*tasks, *extra)
        stats.wall = time.monotonic() - start
        stats.during_result = results[-1] if during else None
        stats.start = start
    return stats


def percentile(values, q):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def summarize(stats):
    lat = stats.latencies
    return {
        "requests": stats.requests, "wall_s": round(stats.wall, 2),
        "req_per_s": round(stats.requests / stats.wall, 1) if stats.wall else None,
        "submits_acknowledged": stats.cycles,
        "latency_ms": {"p50": _ms(percentile(lat, 50)), "p95": _ms(percentile(lat, 95)),
                       "max": _ms(max(lat) if lat else None), "mean": _ms(statistics.fmean(lat) if lat else None)},
        "errors": len(stats.errors), "error_examples": stats.errors[:5],
        "error_rate": round(len(stats.errors) / stats.requests, 6) if stats.requests else None,
        "retryable_answers": stats.retryable, "retry_reasons": stats.retry_reasons,
        "drained_clients": stats.drained_clients,
    }


def _ms(seconds):
    return None if seconds is None else round(seconds * 1000, 1)


# --- the whole run -------------------------------------------------------------------

def run(annotators=200, duration=120.0, items=None, overlap=3, workers=3, threads=8, base_url=None,
        baseline_cycles=20, keep_db=False, during=None, retry_grace=0.0, log=print, server_extra_env=None):
    """Sets up, loads, checks, tears down. Returns the summary dict (see module docstring)."""
    base_url = base_url or os.environ.get("DATABASE_URL") or DEFAULT_DB_URL
    items = items or max(50, annotators * 20)
    db_url, db_name = create_database(base_url)
    server = None
    try:
        log(f"database {db_name}: migrating")
        migrate = subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT,
                                 env=server_env(db_url), capture_output=True, text=True, timeout=600)
        if migrate.returncode:
            raise RuntimeError("migrate failed: " + migrate.stderr[-3000:])
        log(f"populating {annotators}+1 annotators, {items} items, overlap {overlap}")
        setup = django_task(db_url, "populate", {"annotators": annotators + 1, "items": items, "overlap": overlap})
        tokens = dict(sorted(setup["tokens"].items()))
        ref_user = next(iter(tokens))
        ref_token = tokens.pop(ref_user)
        server = start_server(db_url, workers, threads, server_extra_env)
        log(f"gunicorn {server.url}: {workers} workers x {threads} threads; reference run")
        reference = asyncio.run(_reference(server.url, ref_user, ref_token, setup["slug"], baseline_cycles))
        log(f"load: {len(tokens)} annotators for {duration:.0f} s")
        stats = asyncio.run(run_clients(server.url, tokens, setup["slug"], duration, retry_grace, during))
        summary = summarize(stats)
        acks = stats.acks + reference.pop("acks")
        summary["db"] = django_task(db_url, "check", {"slug": setup["slug"], "acks": acks})
        summary["reference_single_client"] = reference
        if reference["latency_ms"]["p50"] and summary["latency_ms"]["p50"]:
            summary["ratio_p50_latency_vs_single_client"] = round(
                summary["latency_ms"]["p50"] / reference["latency_ms"]["p50"], 2)
            summary["ratio_throughput_vs_single_client"] = round(
                summary["req_per_s"] / reference["req_per_s"], 2)
        summary.update({"annotators": len(tokens), "duration_s": duration, "items": items, "overlap": overlap,
                        "gunicorn": {"workers": workers, "threads": threads, "env": server_extra_env or {}},
                        "recovery_windows_s": [round(b - a, 2) for a, b in stats.retry_windows]})
        if during:
            summary["during"] = stats.during_result
            fault_end = (stats.during_result or {}).get("ended_at")
            if fault_end:
                summary["submits_after_fault"] = sum(1 for t in stats.ack_times if t > fault_end)
        summary["ok"] = verdict(summary)
        return summary
    finally:
        if server:
            server.stop()
        if not keep_db:
            drop_database(base_url, db_name)


async def _reference(url, username, token, slug, cycles):
    """The same next+submit cycle by one client alone: the unloaded latency."""
    stats = Stats()
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        start = time.monotonic()
        rng = random.Random(-1)
        for _ in range(cycles):
            nxt = await call(client, stats, "POST", f"/api/studies/{slug}/assignments/next/", token)
            if nxt is None or nxt.status_code != 200:
                break
            payload = nxt.json()
            sub = await call(client, stats, "POST", f"/api/assignments/{payload['assignment']}/judgments/", token,
                             json_body=answers_for(payload, rng))
            if sub is not None and sub.status_code in (200, 201):
                stored = {j["question"]: j["value"] for j in sub.json()["judgments"]}
                stats.acks.extend([username, payload["item_id"], q, v] for q, v in stored.items())
        stats.wall = time.monotonic() - start
    out = summarize(stats)
    return {"requests": out["requests"], "req_per_s": out["req_per_s"], "latency_ms": out["latency_ms"],
            "errors": out["errors"], "acks": stats.acks}


def verdict(summary):
    db = summary["db"]
    return (summary["errors"] == 0 and db["lost"] == 0 and db["duplicates"] == 0 and db["over_overlap"] == 0
            and db["partial_answer_sets"] == 0 and db["complete_items_not_exactly_overlap"] == 0
            and db["acknowledged_value_differs"] == 0 and db["counter_mismatch"] == 0
            and summary["reference_single_client"]["errors"] == 0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=200)
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load (default 120)")
    parser.add_argument("--items", type=int, default=None, help="items in the study (default 20 per annotator)")
    parser.add_argument("--overlap", type=int, default=3)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per gunicorn worker")
    parser.add_argument("--baseline-cycles", type=int, default=20)
    parser.add_argument("--database-url", default=None, help="server to create the run's database on")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--conn-max-age", type=int, default=None, help="DB_CONN_MAX_AGE of the server (0 = a "
                        "connection per request; default: the settings' default, persistent)")
    parser.add_argument("--django-task", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.django_task:
        return _django_main(args.django_task)
    summary = run(args.annotators, args.duration, args.items, args.overlap, args.workers, args.threads,
                  args.database_url, args.baseline_cycles, args.keep_db,
                  log=lambda msg: print(msg, file=sys.stderr, flush=True),
                  server_extra_env={} if args.conn_max_age is None else {"DB_CONN_MAX_AGE": str(args.conn_max_age)})
    print(json.dumps(summary, indent=2))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
