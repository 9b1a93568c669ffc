"""One log line per event: batch imports and refusals, assignment reclaims, the 503 of the
database middleware; HUMEVAL_LOG_LEVEL and the line format (time level logger message)."""
import logging
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import OperationalError
from django.test import RequestFactory
from django.utils import timezone

from annotate.desk.assignment import next_assignment, reclaim_expired
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from humeval.middleware import DatabaseUnavailableMiddleware
from tests.factories import header, jsonl, make_items, make_study, make_user, pairwise

ROOT = Path(__file__).resolve().parent.parent


def lines_of(caplog, logger):
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == logger]


@pytest.mark.django_db
def test_import_refusal_and_import_are_logged(caplog):
    """A file whose item misses `reference` and `candidates` is refused with 2 errors; the
    same study then imports 2 items, and a re-import skips both."""
    loader = make_user("loader", "admins")
    bad = jsonl(header("logged", "pairwise_alignment"), {"item_id": "a", "input": "x"})
    good = jsonl(header("logged", "pairwise_alignment"), pairwise("a"), pairwise("b"))
    with caplog.at_level(logging.INFO, logger="annotate.studies.importing"):
        with pytest.raises(BatchInvalid):
            import_batch_bytes(bad, user=loader, source="bad.jsonl")
        first = import_batch_bytes(good, user=loader, source="good.jsonl")
        again = import_batch_bytes(good, source="good.jsonl")
    assert lines_of(caplog, "annotate.studies.importing") == [
        ("INFO", "batch refused: user=loader source='bad.jsonl' study=logged errors=2 "
                    "first=\"line 2: missing key 'reference'\""),
        ("INFO", f"batch imported: user=loader source='good.jsonl' study=logged batch={first.batch.pk} "
                 "created=2 skipped=0"),
        ("INFO", f"batch imported: user=- source='good.jsonl' study=logged batch={again.batch.pk} "
                 "created=0 skipped=2"),
    ]


@pytest.mark.django_db
def test_refusal_without_a_readable_header_is_logged_without_a_study(caplog):
    with caplog.at_level(logging.INFO, logger="annotate.studies.importing"), pytest.raises(BatchInvalid):
        import_batch_bytes(b"not json\n", source="junk.jsonl")
    [(level, message)] = lines_of(caplog, "annotate.studies.importing")
    assert level == "INFO"
    assert message.startswith("batch refused: user=- source='junk.jsonl' study=- errors=1 first='line 1: ")


@pytest.mark.django_db
def test_reclaim_is_logged_once_with_its_count(caplog, annotators):
    """Timeout 5 min, three annotators on one item: nothing at +4 min (no line), all three
    reclaimed at +6 min (one line)."""
    study = make_study(overlap=3, assignment_timeout_minutes=5)
    make_items(study, 2)
    t0 = timezone.now()
    for user in annotators:
        next_assignment(study, user, now=t0)
    with caplog.at_level(logging.INFO, logger="annotate.desk.assignment"):
        assert reclaim_expired(study, now=t0 + timedelta(minutes=4)) == 0
        assert reclaim_expired(study, now=t0 + timedelta(minutes=6)) == 3
    assert lines_of(caplog, "annotate.desk.assignment") == [
        ("INFO", "assignments reclaimed: study=pairwise-alignment expired=3")]


def test_database_loss_503_is_logged(caplog):
    request = RequestFactory().post("/api/assignments/7/judgments/")
    middleware = DatabaseUnavailableMiddleware(lambda r: None)
    with caplog.at_level(logging.INFO, logger="humeval.middleware"):
        response = middleware.process_exception(request, OperationalError("server closed the connection\n"))
    assert response.status_code == 503
    assert lines_of(caplog, "humeval.middleware") == [
        ("ERROR", "database unavailable, answering 503: POST /api/assignments/7/judgments/ "
                  "(OperationalError: server closed the connection)")]


LOG_THREE = ("import logging; log = logging.getLogger('annotate.studies.importing'); "
             "log.debug('a debug line'); log.info('an info line'); log.warning('a warning line')")


def log_from_a_process(level, command=None):
    """stderr of a process that sets Django up and logs a DEBUG, an INFO and a WARNING line:
    `python -c` by default, else through `manage.py <command>`."""
    env = {k: v for k, v in os.environ.items() if k != "HUMEVAL_LOG_LEVEL"}
    env["DJANGO_SETTINGS_MODULE"] = "humeval.settings"
    if level is not None:
        env["HUMEVAL_LOG_LEVEL"] = level
    run = ([sys.executable, "manage.py", command, "-c", LOG_THREE] if command
           else [sys.executable, "-c", "import django; django.setup(); " + LOG_THREE])
    return subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
INFO_LINE = f"{STAMP} INFO annotate.studies.importing an info line\n"
WARNING_LINE = f"{STAMP} WARNING annotate.studies.importing a warning line\n"


def test_level_from_the_environment_and_one_line_per_event():
    default = log_from_a_process(None)
    assert re.fullmatch(INFO_LINE + WARNING_LINE, default.stderr), default.stderr
    quiet = log_from_a_process("warning")
    assert re.fullmatch(WARNING_LINE, quiet.stderr), quiet.stderr
    wrong = log_from_a_process("LOUD")
    assert wrong.returncode == 1
    assert "HUMEVAL_LOG_LEVEL='LOUD': use DEBUG, INFO, WARNING, ERROR or CRITICAL" in wrong.stderr


def test_management_commands_log_warnings_only_unless_asked():
    """Their stderr is the one-line reason of a failure (interfaces.md)."""
    command = log_from_a_process(None, command="shell")
    assert re.fullmatch(WARNING_LINE, command.stderr), command.stderr
    verbose = log_from_a_process("INFO", command="shell")
    assert re.fullmatch(INFO_LINE + WARNING_LINE, verbose.stderr), verbose.stderr


@pytest.mark.django_db
def test_a_refused_request_logs_one_line_without_a_traceback(settings):
    """Before: every 403 printed Django's PermissionDenied traceback. Now the handler's
    filter drops the traceback of client errors (4xx); a 500 keeps its own."""
    import io

    from django.test import Client

    from humeval.log_filters import NoClientErrorTracebacks

    settings.SECURE_SSL_REDIRECT = False
    handler = next(h for h in logging.getLogger().handlers
                   if any(isinstance(f, NoClientErrorTracebacks) for f in h.filters))
    stream = io.StringIO()
    previous = handler.setStream(stream)
    try:
        web = Client()
        web.force_login(make_user("log-annotator"))
        assert web.get("/plans/new/").status_code == 403
    finally:
        handler.setStream(previous)
    assert re.fullmatch(r"\S+ \S+ WARNING django.request Forbidden \(Permission denied\): /plans/new/\n",
                        stream.getvalue())
    server_error = logging.LogRecord("django.request", logging.ERROR, "", 0, "boom", None, (ValueError, ValueError(),
                                                                                             None))
    server_error.status_code = 500
    assert NoClientErrorTracebacks().filter(server_error) and server_error.exc_info is not None
