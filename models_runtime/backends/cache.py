"""A persistent cache of generations keyed by (model, prompt, sampling parameters).

One SQLite file (settings.HUMEVAL_GENERATION_CACHE) per machine, so re-running a job or
resuming a killed one never pays for the same generation twice. WAL mode and a busy
timeout let several worker processes share it. Each row keeps the prompt it answered (JSON:
a string or chat messages), so every prompt sent to a model, a judge's too, is on record
with its answer (`SELECT prompt, texts FROM generations`); files made before have the
column added, empty for their old rows.
"""
import hashlib
import json
import logging
import sqlite3
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

_SCHEMA = """CREATE TABLE IF NOT EXISTS generations (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, texts TEXT NOT NULL,
    tokens_in INTEGER NOT NULL, tokens_out TEXT NOT NULL, seconds TEXT NOT NULL, prompt TEXT NOT NULL DEFAULT '')"""


def cache_key(model_id, prompt, params_key):
    blob = json.dumps({"model": model_id, "prompt": prompt, "params": params_key},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class GenerationCache:
    def __init__(self, path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn = None

    def _connection(self):
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            if "prompt" not in [row[1] for row in conn.execute("PRAGMA table_info(generations)")]:
                conn.execute("ALTER TABLE generations ADD COLUMN prompt TEXT NOT NULL DEFAULT ''")
            conn.commit()
            self._conn = conn
        return self._conn

    def get_many(self, keys):
        """{key: (texts, tokens_in, tokens_out list, seconds list)} for the keys present."""
        found = {}
        if not keys:
            return found
        with self._lock:
            conn = self._connection()
            unique = list(dict.fromkeys(keys))
            for start in range(0, len(unique), 500):
                part = unique[start:start + 500]
                marks = ",".join("?" * len(part))
                rows = conn.execute(
                    f"SELECT key, texts, tokens_in, tokens_out, seconds FROM generations WHERE key IN ({marks})", part)
                for key, texts, tokens_in, tokens_out, seconds in rows:
                    found[key] = (json.loads(texts), tokens_in, json.loads(tokens_out), json.loads(seconds))
        return found

    def put_many(self, entries):
        """entries: iterable of (key, model_id, texts, tokens_in, tokens_out list, seconds list
        [, prompt])."""
        rows = [(k, m, json.dumps(t, ensure_ascii=False), ti, json.dumps(to), json.dumps(s),
                 json.dumps(rest[0], ensure_ascii=False) if rest else "")
                for k, m, t, ti, to, s, *rest in entries]
        if not rows:
            return
        with self._lock:
            try:
                conn = self._connection()
                conn.executemany("INSERT OR REPLACE INTO generations (key, model, texts, tokens_in, tokens_out, "
                                 "seconds, prompt) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
                conn.commit()
            except (sqlite3.OperationalError, OSError) as exc:  # a full disk: the answers are kept, not cached
                logger.warning("generation cache %s not written (%s): %d answers will be generated again on a "
                               "re-run; free disk space or set HUMEVAL_GENERATION_CACHE", self.path, exc, len(rows))

    def __len__(self):
        with self._lock:
            return self._connection().execute("SELECT COUNT(*) FROM generations").fetchone()[0]
