"""The annotator's cycle (next item + submit over the REST API) under gunicorn, per cycle:
web CPU, PostgreSQL CPU, transactions and statements, latency p50/p95 at K clients back
to back and with human pacing; for humeval and, in the same run, for the floor
(bench/cycle_floor.py: the same work on the same tables, nothing else) and optionally for
another checkout of humeval (--before, e.g. the commit before a change).

    .venv/bin/python bench/cycle_bench.py [--before /path/to/checkout] [--clients 1,10,50] \\
        [--duration 15] [--paced 50 --paced-duration 60] [--workers 3 --threads 8]

What it does, all on loopback:
1. starts a private PostgreSQL cluster (initdb in a temporary folder, as the `postgres`
   user when run as root) with pg_stat_statements loaded, so that the figures are this
   run's alone: PostgreSQL CPU = CPU time of the cluster's processes (the postmaster's
   reaped children included: backends of one-connection-per-request servers), statements =
   pg_stat_statements calls of the statements clients sent (BEGIN, COMMIT and Django's
   health-check SELECT 1 included; the foreign-key checks PostgreSQL runs inside an INSERT
   not), transactions = pg_stat_database commits + rollbacks;
2. per target, a database (migrated by that checkout; the floor uses humeval's) with one
   pairwise study (overlap 3, --items items, no gold) and annotators with API tokens,
   and a gunicorn (gthread) with production settings and the write throttle off;
3. phases: K clients loop "next -> submit" without pause for --duration seconds, for each
   K, the targets one after another (so the machine's load drifts over all of them); then
   --paced clients that think 2.5-7.5 s per item for --paced-duration seconds, each arriving
   at a random moment of its first 7.5 s (50 clients sent at once would put 50 queued first
   requests, 8% of a minute's cycles, into the p95);
4. web CPU = CPU time of the gunicorn master and workers during the phase / cycles; a
   cycle's latency = next + submit latency;
5. checks every target's tables: no duplicate judgment, no item over its overlap.

Prints one table (and --json FILE the figures). CPU per cycle is robust to a busy
machine; latencies are not: the run prints `uptime` before and after.
"""
import argparse
import asyncio
import json
import os
import random
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
GUNICORN = str(ROOT / ".venv" / "bin" / "gunicorn")
SLUG = "cycle-study"
THINK = (2.5, 7.5)  # seconds a paced client spends on an item
# pg_stat_statements also lists the foreign-key checks PostgreSQL runs inside an INSERT:
# not statements a client sent, so not counted.
RI_CHECK = "'SELECT $2 FROM ONLY %FOR KEY SHARE OF x'"


# --- the private PostgreSQL cluster -----------------------------------------------------------

def pg_bindir():
    out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
    if out.returncode == 0 and Path(out.stdout.strip(), "initdb").exists():
        return Path(out.stdout.strip())
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:
        sys.exit("PostgreSQL server binaries (initdb) not found")
    return found[-1].parent


def as_postgres(cmd):
    """Runs a server binary as the `postgres` user when we are root (PostgreSQL refuses root)."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    def __init__(self):
        self.bindir = pg_bindir()
        self.dir = Path(tempfile.mkdtemp(prefix="cycle-bench-pg-"))
        self.port = free_port()
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        data = self.dir / "data"
        subprocess.run(as_postgres([str(self.bindir / "initdb"), "-D", str(data), "-U", "postgres",
                                    "--auth=trust", "-E", "UTF8", "--no-sync"]), check=True, capture_output=True)
        self.proc = subprocess.Popen(as_postgres([
            str(self.bindir / "postgres"), "-D", str(data), "-p", str(self.port), "-k", str(self.dir),
            "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300",
            "-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track=top",
            "-c", "pg_stat_statements.track_utility=on"]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"postgres://postgres@127.0.0.1:{self.port}"
        for _ in range(100):
            if subprocess.run([str(self.bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        self.admin("CREATE EXTENSION pg_stat_statements")

    def admin(self, sql, db="postgres", fetch=False):
        import psycopg
        with psycopg.connect(f"{self.url}/{db}", autocommit=True) as conn:
            cur = conn.execute(sql)
            return cur.fetchall() if fetch else None

    def cpu(self):
        """CPU seconds of the whole cluster so far: live processes plus the reaped ones."""
        import psutil
        master = psutil.Process(self.postmaster_pid())
        times = master.cpu_times()
        total = times.user + times.system + times.children_user + times.children_system
        for child in master.children():
            try:
                t = child.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += t.user + t.system
        return total

    def postmaster_pid(self):
        return int((self.dir / "data" / "postmaster.pid").read_text().split()[0])

    def counters(self, db):
        """(transactions, statements) of database `db` so far."""
        xacts = self.admin(f"SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '{db}'",
                           fetch=True)[0][0]
        statements = self.admin("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s JOIN pg_database d "
                                f"ON d.oid = s.dbid WHERE d.datname = '{db}' AND query NOT LIKE {RI_CHECK}",
                                fetch=True)[0][0]
        return int(xacts), int(statements)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)  # fast shutdown
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- targets: a database and a gunicorn each ----------------------------------------------------

def server_env(root, db_url, extra=None):
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "TEST_DATABASE_NAME", "DJANGO_SETTINGS_MODULE",
                                                            "DB_CONN_MAX_AGE", "CELERY_BROKER_URL"}}
    env.update({"DATABASE_URL": db_url, "DEBUG": "0", "HUMEVAL_INSECURE_HTTP": "1", "SECRET_KEY": SECRET,
                "ALLOWED_HOSTS": "127.0.0.1,localhost", "DJANGO_SETTINGS_MODULE": "humeval.settings",
                "PYTHONPATH": str(root), "HUMEVAL_LOG_LEVEL": "ERROR", "HUMEVAL_THROTTLE_WRITE": "",
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    env.update(extra or {})
    return env


SECRET = secrets.token_urlsafe(50)


class Target:
    def __init__(self, name, root, cluster, app="humeval.wsgi:application", schema_root=None, extra_env=None):
        self.name, self.root, self.cluster = name, Path(root), cluster
        self.db = f"cycle_{name.replace('-', '_')}"
        self.url = f"{cluster.url}/{self.db}"
        cluster.admin(f'CREATE DATABASE "{self.db}"')
        schema = Path(schema_root or root)
        subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=schema,
                       env=server_env(schema, self.url), check=True, capture_output=True, timeout=900)
        self.app, self.extra_env, self.proc = app, extra_env or {}, None

    def populate(self, annotators, items):
        schema = ROOT if self.app.startswith("cycle_floor") else self.root
        out = subprocess.run([PYTHON, __file__, "--django-task", json.dumps([annotators, items])], cwd=schema,
                             env=server_env(schema, self.url), capture_output=True, text=True, timeout=900)
        if out.returncode:
            raise RuntimeError(out.stderr[-3000:])
        self.tokens = json.loads(out.stdout)
        # Statistics and visibility map now, not by autovacuum during the first phase (whose
        # PostgreSQL CPU it inflated: 15-16 ms per cycle for whichever target ran first).
        self.cluster.admin("VACUUM ANALYZE", self.db)

    def start(self, workers, threads):
        self.port = free_port()
        chdir = ["--chdir", str(ROOT / "bench")] if self.app.startswith("cycle_floor") else []
        self.proc = subprocess.Popen(
            [GUNICORN, self.app, *chdir, "--bind", f"127.0.0.1:{self.port}", "--workers", str(workers),
             "--worker-class", "gthread", "--threads", str(threads), "--backlog", "2048", "--keep-alive", "30"],
            cwd=self.root, env=server_env(self.root, self.url, self.extra_env), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        import httpx
        for _ in range(300):
            try:
                httpx.post(f"http://127.0.0.1:{self.port}/api/studies/{SLUG}/assignments/next/", timeout=5)
                return
            except httpx.TransportError:
                time.sleep(0.2)
        raise RuntimeError(f"{self.name}: gunicorn did not start")

    def cpu(self):
        import psutil
        master = psutil.Process(self.proc.pid)
        total = 0.0
        for p in [master, *master.children(recursive=True)]:
            t = p.cpu_times()
            total += t.user + t.system
        return total

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)

    def check(self):
        dup = self.cluster.admin("SELECT count(*) FROM (SELECT 1 FROM annotate_judgment GROUP BY item_id, "
                                 "annotator_id, question HAVING count(*) > 1) d", self.db, fetch=True)[0][0]
        over = self.cluster.admin("SELECT count(*) FROM (SELECT item_id FROM annotate_judgment GROUP BY item_id "
                                  "HAVING count(DISTINCT annotator_id) > 3) o", self.db, fetch=True)[0][0]
        return {"duplicates": dup, "over_overlap": over}


def populate(annotators, items):
    """Runs in the target's checkout: the study, its items and the annotators' tokens."""
    import django
    django.setup()
    from django.contrib.auth.models import Group, User
    from rest_framework.authtoken.models import Token

    from annotate.models import Item, Study

    study = Study.objects.create(slug=SLUG, kind="pairwise_alignment", title="Cycle bench", annotations_per_item=3,
                                 gold_rate=0.0)
    Item.objects.bulk_create([Item(study=study, item_id=f"it-{n:06d}", position=n, content_hash=str(n), data={
        "input": f"Request {n}", "reference": f"My own text number {n}.",
        "candidates": [{"id": "model-a", "text": f"A says {n}"}, {"id": "model-b", "text": f"B says {n}"}]})
        for n in range(items)], batch_size=2000)
    group = Group.objects.get(name="annotators")
    tokens = []
    for n in range(annotators):
        user = User.objects.create_user(f"cycle-{n:04d}")
        user.groups.add(group)
        tokens.append(Token.objects.create(user=user).key)
    print(json.dumps(tokens))


def explain():
    """Runs in humeval's checkout: one next + submit through the API for a fresh annotator,
    captured, rolled back, then each of its statements again under EXPLAIN (ANALYZE,
    BUFFERS), rolled back too (docs/benchmarks.md)."""
    import django
    django.setup()
    from django.contrib.auth.models import Group, User
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    user = User.objects.create_user("cycle-explain")
    user.groups.add(Group.objects.get(name="annotators"))
    client = APIClient(SERVER_NAME="127.0.0.1")  # an allowed host of server_env
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    with CaptureQueriesContext(connection) as captured, transaction.atomic():
        body = client.post(f"/api/studies/{SLUG}/assignments/next/").json()
        answers = {q["id"]: q["options"][0] for q in body["questions"]}
        client.post(f"/api/assignments/{body['assignment']}/judgments/", {**answers, "seconds": 3.0}, format="json")
        transaction.set_rollback(True)
    with transaction.atomic(), connection.cursor() as cursor:
        for query in captured.captured_queries:
            sql = query["sql"]
            if sql.split()[0] not in ("SELECT", "INSERT", "UPDATE", "WITH"):
                continue
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql.replace("%", "%%"))
            print(f"\n-- {' '.join(sql.split())[:300]}")
            print("\n".join(row[0] for row in cursor.fetchall()))
        transaction.set_rollback(True)


# --- clients ---------------------------------------------------------------------------------

async def annotator(client, token, deadline, think, out, rng):
    headers = {"Authorization": f"Token {token}"}
    if think:  # people arrive at their own moment, not all in the same millisecond
        await asyncio.sleep(rng.uniform(0, think[1]))
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        nxt = await client.post(f"/api/studies/{SLUG}/assignments/next/", headers=headers)
        t1 = time.monotonic()
        if nxt.status_code != 200:
            out["errors"].append(f"next {nxt.status_code}")
            return
        body = nxt.json()
        answers = {q["id"]: rng.choice(q["options"]) for q in body["questions"]}
        answers["seconds"] = 3.0
        if think:
            await asyncio.sleep(rng.uniform(*think))
        t2 = time.monotonic()
        sub = await client.post(f"/api/assignments/{body['assignment']}/judgments/", json=answers, headers=headers)
        t3 = time.monotonic()
        if sub.status_code != 201:
            out["errors"].append(f"submit {sub.status_code}")
            continue
        out["next"].append(t1 - t0)
        out["submit"].append(t3 - t2)
        out["cycle"].append(t1 - t0 + t3 - t2)


async def load(port, tokens, duration, think, seed):
    import httpx
    out = {"next": [], "submit": [], "cycle": [], "errors": []}
    limits = httpx.Limits(max_connections=len(tokens) + 5, max_keepalive_connections=len(tokens) + 5)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=120) as client:
        deadline = time.monotonic() + duration
        await asyncio.gather(*(annotator(client, tok, deadline, think, out, random.Random(seed + n))
                               for n, tok in enumerate(tokens)))
    return out


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def phase(target, clients, duration, think, seed):
    cluster = target.cluster
    xacts0, stmts0 = cluster.counters(target.db)
    web0, pg0 = target.cpu(), cluster.cpu()
    t0 = time.monotonic()
    out = asyncio.run(load(target.port, target.tokens[:clients], duration, think, seed))
    wall = time.monotonic() - t0
    web1, pg1 = target.cpu(), cluster.cpu()
    time.sleep(11)  # PostgreSQL flushes an idle backend's transaction counts within 10 s
    xacts1, stmts1 = cluster.counters(target.db)
    n = max(1, len(out["cycle"]))
    ms = lambda s: round(1000 * s, 2)  # noqa: E731
    return {"cycles": len(out["cycle"]), "cycles_per_s": round(len(out["cycle"]) / wall, 1),
            "errors": len(out["errors"]), "error_examples": out["errors"][:3],
            "web_cpu_ms": ms((web1 - web0) / n), "pg_cpu_ms": ms((pg1 - pg0) / n),
            "transactions": round((xacts1 - xacts0) / n, 2), "statements": round((stmts1 - stmts0) / n, 2),
            "cycle_p50_ms": ms(pct(out["cycle"], 50)), "cycle_p95_ms": ms(pct(out["cycle"], 95)),
            "next_p50_ms": ms(pct(out["next"], 50)), "submit_p50_ms": ms(pct(out["submit"], 50)),
            "mean_cycle_ms": ms(statistics.fmean(out["cycle"])) if out["cycle"] else None}


def after_run(args, targets, results):
    """--show-statements and --explain, on the tables as the load left them."""
    for target in targets:
        if args.show_statements:
            show_statements(target, sum(r["cycles"] for r in results[target.name].values()))
        if args.explain and target.name == "humeval":
            out = subprocess.run([PYTHON, __file__, "--django-task", "explain"], cwd=ROOT, capture_output=True,
                                 env=server_env(ROOT, target.url), text=True, timeout=300)
            print(out.stdout + out.stderr[-2000:])


def show_statements(target, cycles):
    """The statements of a cycle, as pg_stat_statements counted them (the frequent ones)."""
    print(f"-- {target.name}: statements per cycle over {cycles} cycles")
    for calls, query in target.cluster.admin(
            "SELECT calls, left(regexp_replace(query, '\\s+', ' ', 'g'), 150) FROM pg_stat_statements s JOIN "
            f"pg_database d ON d.oid = s.dbid WHERE d.datname = '{target.db}' AND calls >= {max(1, cycles // 4)} "
            f"AND query NOT LIKE {RI_CHECK} "
            "ORDER BY calls DESC", fetch=True):
        print(f"{calls / max(1, cycles):6.2f}  {query}")


def print_report(args, plan, targets, results, checks, end):
    print(f"gunicorn {args.workers}x{args.threads} gthread, PostgreSQL private cluster, {args.items} items, overlap 3; "
          "per cycle = next + submit")
    header = ("phase", "target", "cycles", "cyc/s", "web CPU ms", "PG CPU ms", "xacts", "stmts", "p50 ms", "p95 ms",
              "errors")
    print(" | ".join(header))
    for label, *_ in plan:
        for target in targets:
            r = results[target.name][label]
            print(" | ".join(str(v) for v in (label, target.name, r["cycles"], r["cycles_per_s"], r["web_cpu_ms"],
                                               r["pg_cpu_ms"], r["transactions"], r["statements"], r["cycle_p50_ms"],
                                               r["cycle_p95_ms"], r["errors"])))
    if "humeval" in results and "floor" in results:
        for label, *_ in plan:
            h, f = results["humeval"][label], results["floor"][label]
            print(f"{label}: humeval / floor web CPU {h['web_cpu_ms'] / f['web_cpu_ms']:.2f}x, "
                  f"PG CPU {h['pg_cpu_ms'] / f['pg_cpu_ms']:.2f}x")
    print("tables:", json.dumps(checks))
    print("load:", end)


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="another humeval checkout to measure in the same run")
    parser.add_argument("--before-conn-max-age", default=None, help="DB_CONN_MAX_AGE for --before (its default)")
    parser.add_argument("--clients", default="1,10,50")
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--paced", type=int, default=50)
    parser.add_argument("--paced-duration", type=float, default=60.0)
    parser.add_argument("--items", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--targets", default="before,humeval,floor")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--show-statements", action="store_true", help="list the statements of a cycle")
    parser.add_argument("--explain", action="store_true", help="EXPLAIN (ANALYZE, BUFFERS) humeval's cycle at the end")
    parser.add_argument("--django-task", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.django_task:
        sys.path.insert(0, os.getcwd())
        return explain() if args.django_task == "explain" else populate(*json.loads(args.django_task))
    ks = [int(k) for k in args.clients.split(",")]
    annotators = max([*ks, args.paced])
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    log(f"start: {uptime()}")
    cluster = Cluster()
    targets = []
    try:
        wanted = args.targets.split(",")
        if args.before and "before" in wanted:
            extra = {"DB_CONN_MAX_AGE": args.before_conn_max_age} if args.before_conn_max_age else {}
            targets.append(Target("before", args.before, cluster, extra_env=extra))
        if "humeval" in wanted:
            targets.append(Target("humeval", ROOT, cluster))
        if "floor" in wanted:
            targets.append(Target("floor", ROOT, cluster, app="cycle_floor:application"))
        for target in targets:
            log(f"{target.name}: populating {args.items} items, {annotators} annotators")
            target.populate(annotators, args.items)
            target.start(args.workers, args.threads)
        results = {t.name: {} for t in targets}
        plan = [(f"K={k}", k, args.duration, None) for k in ks]
        if args.paced:
            plan.append((f"paced {args.paced}", args.paced, args.paced_duration, THINK))
        for n, (label, k, duration, think) in enumerate(plan):
            for target in targets:
                log(f"{label}: {target.name}")
                results[target.name][label] = phase(target, k, duration, think, seed=1000 * n)
        checks = {t.name: t.check() for t in targets}
        after_run(args, targets, results)
    finally:
        for target in targets:
            target.stop()
        cluster.stop()
    end = uptime()
    log(f"end: {end}")
    print_report(args, plan, targets, results, checks, end)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "checks": checks, "args": vars(args),
                                               "uptime_end": end}, indent=2))
    bad = any(r["errors"] for t in results.values() for r in t.values()) or any(
        c["duplicates"] or c["over_overlap"] for c in checks.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
