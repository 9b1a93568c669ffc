"""Study plans on LaMP-shaped files: how long the whole-plan check takes, and how much
memory a large upload costs the web server.

1. validate: `plans.validate_plan` of a plan over N LaMP-4-shaped questions (8 profile
   items of ~40 words each, LaMP's real shape), next to `json.load` of the same two files
   (what a script reading them does) in the same run. Target: 10,000 questions < 2 s.
2. upload: POST /api/pipelines/ with the plan and a LaMP-4-shaped questions file of about
   `--upload-mb` MB (long profiles), to a gunicorn worker (1 sync worker) of a scratch
   instance whose jobs go to a Redis queue nobody reads (so the worker only receives,
   stores and checks the plan). Reported: the answer's status and seconds, and the
   worker's peak RSS (VmHWM) before the upload (idle: after one GET /api/jobs/) and after
   it; reference in the same run:
   the peak RSS of a fresh Python process that `json.load`s the same file (the old path
   read it whole). Target: the worker's peak within 300 MB of RSS (issue 25).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/humeval .venv/bin/python bench/plan_bench.py \\
        [--questions 10000] [--upload-mb 200] [--skip-upload]

Uses a scratch database `<name>_plan_bench` (created, migrated, dropped) and Redis DB 3
(CELERY_TEST_BROKER_URL) for the never-read queue. Prints one JSON document.
"""
import argparse
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
ASK = "Generate a headline for the following article: "
WORDS = ["city", "council", "market", "river", "bridge", "school", "library", "garden", "storm", "train", "museum",
         "concert", "match", "season", "plan", "budget", "vote", "mayor", "report", "study", "team", "player",
         "coach", "fans", "crowd", "night", "morning", "week", "year", "record", "price", "rent", "home", "street",
         "park", "water", "power", "heat", "rain", "snow", "wind", "road", "bike", "bus", "car"]


def text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def write_lamp(folder: Path, n_questions: int, profile_items: int, words: int, seed: int = 0) -> tuple[Path, Path]:
    """LaMP-4's two files: questions (a JSON array, written a question at a time) and outputs."""
    rng = random.Random(seed)
    questions, outputs = folder / "dev_questions.json", folder / "dev_outputs.json"
    with open(questions, "w", encoding="utf-8") as out:
        out.write("[")
        for n in range(n_questions):
            profile = [{"id": f"{n}{k:03d}", "title": text(rng, 6), "text": text(rng, words)}
                       for k in range(profile_items)]
            out.write(("," if n else "") + json.dumps({"id": str(n), "input": ASK + text(rng, 60),
                                                      "profile": profile}))
        out.write("]")
    golds = [{"id": str(n), "output": text(rng, 8)} for n in range(n_questions)]
    outputs.write_text(json.dumps({"task": "LaMP_4", "golds": golds}))
    return questions, outputs


def plan():
    return {"study": {"slug": "bench-plan", "kind": "pairwise_alignment", "title": "Bench"},
            "input": {"format": "lamp", "questions": "dev_questions.json", "outputs": "dev_outputs.json"},
            "systems": [{"id": "bm25-k2", "model": "smollm2", "retriever": "bm25", "k": 2},
                        {"id": "no-profile", "model": "smollm2", "retriever": "none"}],
            "generation": {"max_tokens": 32, "stop": ["\n"], "postprocess": "title"}, "metrics": ["rouge1", "rougeL"]}


def bench_validate(n_questions: int) -> dict:
    from models_runtime import records
    from models_runtime.plans import validate_plan

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        questions, outputs = write_lamp(folder, n_questions, 8, 40)
        size = questions.stat().st_size
        started = time.perf_counter()
        with open(questions) as q, open(outputs) as o:
            loaded = (json.load(q), json.load(o))
        reference = time.perf_counter() - started
        assert len(loaded[0]) == n_questions
        del loaded
        runs = []
        for _ in range(3):
            records._cache.clear()
            started = time.perf_counter()
            params = validate_plan(plan(), folder, folder / "work")
            runs.append(time.perf_counter() - started)
        assert params["input"]["n_questions"] == n_questions
    best = min(runs)
    return {"questions": n_questions, "file_mb": round(size / 1e6, 1), "validate_seconds": round(best, 3),
            "validate_seconds_all": [round(r, 3) for r in runs], "json_load_seconds": round(reference, 3),
            "ratio_to_json_load": round(best / reference, 2), "target_met": best < 2.0}


def vm(pid: int, key: str) -> int:
    """A /proc/<pid>/status figure in MB (VmHWM: peak RSS; VmRSS; RssAnon)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) // 1024
    raise KeyError(key)


def json_load_peak(path: Path) -> int:
    """Peak RSS (MB) of a fresh Python that json.loads `path`: the old code path."""
    code = ("import json,sys; json.load(open(sys.argv[1])); "  # VmHWM: ru_maxrss keeps the parent's across exec
            "print([int(l.split()[1]) // 1024 for l in open('/proc/self/status') if l.startswith('VmHWM')][0])")
    return int(subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                              check=True).stdout)


def bench_upload(db_url: str, upload_mb: int) -> dict:
    import httpx
    import psutil
    import redis
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from load_test import server_env, start_server
    from rest_framework.authtoken.models import Token

    broker = os.environ.get("CELERY_TEST_BROKER_URL", "redis://127.0.0.1:6379/3")
    queue = f"plan-bench-{secrets.token_hex(4)}"
    admin = get_user_model().objects.create_user("bench-admin")
    admin.groups.add(Group.objects.get_or_create(name="admins")[0])
    token = Token.objects.create(user=admin).key
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # 100 profile items (a title and ~12 words each) per question: LaMP-4's long profiles
        per_question = 15_400  # bytes: measured on this generator
        n_questions = max(1, upload_mb * 1_000_000 // per_question)
        questions, outputs = write_lamp(folder, n_questions, 100, 12, seed=1)
        (folder / "plan.json").write_text(json.dumps(plan()))
        size = questions.stat().st_size
        reference_peak = json_load_peak(questions)
        env = {"HUMEVAL_PIPELINE_DIR": str(folder / "pipelines"), "CELERY_BROKER_URL": broker,
               "CELERY_TASK_DEFAULT_QUEUE": queue, "HUMEVAL_GENERATION_CACHE": ""}
        os.environ.setdefault("LOAD_SECRET_KEY", secrets.token_urlsafe(50))
        assert server_env(db_url)
        server = start_server(db_url, workers=1, threads=1, extra_env=env)
        try:
            worker = psutil.Process(server.proc.pid).children()[0].pid
            headers = {"Authorization": f"Token {token}"}
            assert httpx.get(server.url + "/api/jobs/", headers=headers, timeout=30).status_code == 200
            before = {k: vm(worker, k) for k in ("VmHWM", "VmRSS", "RssAnon")}
            started = time.perf_counter()
            with open(folder / "plan.json", "rb") as p, open(questions, "rb") as q, open(outputs, "rb") as o:
                response = httpx.post(server.url + "/api/pipelines/", headers=headers, timeout=600,
                                      files=[("plan", ("plan.json", p)), ("files", ("dev_questions.json", q)),
                                             ("files", ("dev_outputs.json", o))])
            seconds = time.perf_counter() - started
            after = {k: vm(worker, k) for k in ("VmHWM", "VmRSS", "RssAnon")}
        finally:
            server.stop()
            redis.Redis.from_url(broker).delete(queue)
        body = response.json()
    return {"file_mb": round(size / 1e6, 1), "questions": n_questions, "status": response.status_code,
            "state": body.get("state"), "error": body.get("error"), "seconds": round(seconds, 2),
            "worker_peak_rss_mb_before": before["VmHWM"], "worker_peak_rss_mb_after": after["VmHWM"],
            "worker_rss_mb_after": after["VmRSS"], "worker_anon_rss_mb_before": before["RssAnon"],
            "worker_anon_rss_mb_after": after["RssAnon"],
            "added_by_upload_mb": after["VmHWM"] - before["VmHWM"],
            "reference_json_load_peak_rss_mb": reference_peak,
            "target_300mb_met": after["VmHWM"] <= 300, "added_within_300mb": after["VmHWM"] - before["VmHWM"] <= 300}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--upload-mb", type=int, default=200)
    parser.add_argument("--skip-upload", action="store_true")
    args = parser.parse_args()
    from annot_scratch import scratch_database

    with scratch_database("plan_bench") as db_url:
        load = os.getloadavg()
        out = {"load_1min": round(load[0], 2), "validate": bench_validate(args.questions)}
        if not args.skip_upload:
            out["upload"] = bench_upload(db_url, args.upload_mb)
        out["load_1min_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
