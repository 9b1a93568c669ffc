"""The floor of the annotator's cycle, for bench/cycle_bench.py only: the two endpoints of
interfaces.md (POST /api/studies/{slug}/assignments/next/, POST /api/assignments/{id}/
judgments/) as a bare WSGI app on psycopg over humeval's own tables, doing the same work
with nothing else: token check, access (listed, or open to the annotators group), one open
assignment per user (user row lock), a free item under its overlap with SKIP LOCKED,
fullest first, A/B order balanced per item, blinded option and item tokens (HMAC of the
assignment id), an idempotent submit (assignment row lock). pairwise_alignment only; no
gold, participants, reclaim or edits. A persistent connection per thread
(FLOOR_CONNECTION=request: one per request).

    gunicorn --chdir bench cycle_floor:application   (DATABASE_URL, SECRET_KEY in the environment)
"""
import hashlib
import hmac
import json
import os
import re
import threading
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg.types.json import Jsonb

DSN = os.environ["DATABASE_URL"].replace("postgres://", "postgresql://", 1)
KEY = hmac.new(os.environ["SECRET_KEY"].encode(), b"floor:blind", hashlib.sha256).digest()
PER_REQUEST = os.environ.get("FLOOR_CONNECTION") == "request"
QUESTION = "Which response is closer to the expected output in content and writing style?"
NEXT = re.compile(r"^/api/studies/([-\w]+)/assignments/next/$")
SUBMIT = re.compile(r"^/api/assignments/(\d+)/judgments/$")
_local = threading.local()


def token(assignment_id, role, real):
    return role + hmac.new(KEY, f"{assignment_id}\x1f{role}\x1f{real}".encode(), hashlib.sha256).hexdigest()[:12]


def connect():
    if PER_REQUEST:
        return psycopg.connect(DSN, autocommit=True)
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(DSN, autocommit=True)
    return conn


def answer(start_response, status, body=None):
    data = b"" if body is None else json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


def user_of(conn, environ):
    auth = environ.get("HTTP_AUTHORIZATION", "")
    if not auth.startswith("Token "):
        return None
    row = conn.execute("SELECT u.id FROM authtoken_token t JOIN auth_user u ON u.id = t.user_id "
                       "WHERE t.key = %s AND u.is_active", (auth[6:],)).fetchone()
    return row[0] if row else None


ACCESS = """(EXISTS (SELECT 1 FROM annotate_study_annotators a WHERE a.study_id = s.id AND a.user_id = %(u)s)
  OR (NOT EXISTS (SELECT 1 FROM annotate_study_annotators a WHERE a.study_id = s.id)
      AND EXISTS (SELECT 1 FROM auth_user_groups ug JOIN auth_group g ON g.id = ug.group_id
                  WHERE ug.user_id = %(u)s AND g.name = 'annotators')))"""


def payload(assignment_id, blind, data, order):
    texts = {c["id"]: c["text"] for c in data["candidates"]}
    options = [blind["tokens"][cid] for cid in order]
    return {"assignment": assignment_id, "item_id": blind["item"],
            "item": {"input": data["input"], "reference": data["reference"],
                     "candidates": [{"id": blind["tokens"][cid], "text": texts[cid]} for cid in order]},
            "questions": [{"id": "choice", "text": QUESTION, "options": options}]}


def next_item(conn, user, slug):
    now = datetime.now(UTC)
    with conn.transaction():
        study = conn.execute(
            f"SELECT s.id, s.annotations_per_item, s.assignment_timeout_minutes, s.status = 'open', {ACCESS}, "
            "(SELECT id FROM auth_user WHERE id = %(u)s FOR UPDATE) FROM annotate_study s WHERE s.slug = %(slug)s",
            {"u": user, "slug": slug}).fetchone()
        if study is None or not study[4]:
            return "404 Not Found", {"detail": "No such study."}
        study_id, overlap, timeout, is_open = study[:4]
        current = conn.execute(
            "SELECT a.id, a.blind, i.data, a.shown_order FROM annotate_assignment a JOIN annotate_item i "
            "ON i.id = a.item_id WHERE a.study_id = %s AND a.annotator_id = %s AND a.completed_at IS NULL "
            "AND a.expires_at > %s", (study_id, user, now)).fetchone()
        if current:
            return "200 OK", payload(current[0], current[1], current[2], current[3]["candidates"])
        if not is_open:
            return "409 Conflict", {"detail": "closed"}
        item = conn.execute(
            "SELECT i.id, i.data FROM annotate_item i WHERE i.study_id = %s AND NOT i.is_gold AND i.n_assigned < %s "
            "AND NOT EXISTS (SELECT 1 FROM annotate_assignment a WHERE a.item_id = i.id AND a.annotator_id = %s) "
            "ORDER BY i.n_assigned DESC, i.position, i.id LIMIT 1 FOR UPDATE OF i SKIP LOCKED",
            (study_id, overlap, user)).fetchone()
        if item is None:
            return "204 No Content", None
        item_id, data = item
        new_id, a_first = conn.execute(
            "SELECT nextval(pg_get_serial_sequence('annotate_assignment', 'id')), count(*) FILTER "
            "(WHERE shown_order->'candidates'->>0 = %s) - count(*) FILTER (WHERE shown_order->'candidates'->>0 = %s) "
            "FROM annotate_assignment WHERE item_id = %s",
            (data["candidates"][0]["id"], data["candidates"][1]["id"], item_id)).fetchone()
        ids = [c["id"] for c in data["candidates"]]
        order = ids if a_first < 0 or (a_first == 0 and hashlib.sha256(f"{new_id}".encode()).digest()[0] < 128) \
            else ids[::-1]
        blind = {"item": token(new_id, "i", item_id), "tokens": {cid: token(new_id, "o", cid) for cid in ids}}
        conn.execute(
            "INSERT INTO annotate_assignment (id, study_id, item_id, annotator_id, shown_order, blind, created_at, "
            "expires_at, skipped, extensions) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, false, 0)",
            (new_id, study_id, item_id, user, Jsonb({"candidates": order, "choice": order}), Jsonb(blind), now,
             now + timedelta(minutes=timeout)))
        conn.execute("UPDATE annotate_item SET n_assigned = n_assigned + 1 WHERE id = %s", (item_id,))
    return "200 OK", payload(new_id, blind, data, order)


def submit(conn, user, assignment_id, body):
    now = datetime.now(UTC)
    with conn.transaction():
        row = conn.execute(
            f"SELECT a.study_id, a.item_id, a.blind, a.shown_order, a.completed_at, a.created_at, {ACCESS} "
            "FROM annotate_assignment a JOIN annotate_study s ON s.id = a.study_id "
            "WHERE a.id = %(a)s AND a.annotator_id = %(u)s FOR UPDATE OF a", {"a": assignment_id, "u": user}).fetchone()
        if row is None:
            return "404 Not Found", {"detail": "No such assignment for you."}
        study_id, item_id, blind, shown, completed_at, created_at, allowed = row
        if not allowed:
            return "403 Forbidden", {"detail": "You may no longer annotate this study."}
        real = {t: cid for cid, t in blind["tokens"].items()}
        order = "|".join(shown["candidates"])
        if completed_at is not None:
            stored = conn.execute("SELECT value, seconds FROM annotate_judgment WHERE assignment_id = %s",
                                  (assignment_id,)).fetchall()
            return "200 OK", {"assignment": assignment_id, "created": False, "judgments": [
                {"question": "choice", "value": blind["tokens"].get(v, v), "shown_order": order, "seconds": s}
                for v, s in stored]}
        value = real.get(body.get("choice"))
        if value is None:
            return "400 Bad Request", {"errors": {"choice": "not one of the options"}}
        seconds = body.get("seconds")
        seconds = float(seconds) if isinstance(seconds, (int, float)) else (now - created_at).total_seconds()
        conn.execute("INSERT INTO annotate_judgment (study_id, item_id, assignment_id, annotator_id, question, "
                     "value, shown_order, seconds, submitted_at, comment) "
                     "VALUES (%s, %s, %s, %s, 'choice', %s, %s, %s, %s, '')",
                     (study_id, item_id, assignment_id, user, value, order, seconds, now))
        conn.execute("UPDATE annotate_assignment SET completed_at = %s, seconds = %s WHERE id = %s",
                     (now, seconds, assignment_id))
        conn.execute("UPDATE annotate_item SET n_completed = n_completed + 1 WHERE id = %s", (item_id,))
    return "201 Created", {"assignment": assignment_id, "created": True, "judgments": [
        {"question": "choice", "value": body["choice"], "shown_order": order, "seconds": seconds}]}


def application(environ, start_response):
    if environ["REQUEST_METHOD"] != "POST":
        return answer(start_response, "405 Method Not Allowed")
    path = environ["PATH_INFO"]
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
    conn = connect()
    try:
        user = user_of(conn, environ)
        if user is None:
            return answer(start_response, "401 Unauthorized", {"detail": "Invalid token."})
        if match := NEXT.match(path):
            status, out = next_item(conn, user, match.group(1))
        elif match := SUBMIT.match(path):
            status, out = submit(conn, user, int(match.group(1)), body)
        else:
            status, out = "404 Not Found", {"detail": "Not found."}
        return answer(start_response, status, out)
    finally:
        if PER_REQUEST:
            conn.close()
