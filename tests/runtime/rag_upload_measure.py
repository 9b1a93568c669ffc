"""A measurement, not part of the suite (its name is no test_*.py; run it by path, one kind
per process, so that each starts from the same RSS):

    python -m pytest -q -s tests/runtime/rag_upload_measure.py -k "measure[short]"

POST /api/jobs/ of a 40 MiB upload through the middleware stack and the real view (the job
is not run): the request's seconds, the process's peak RSS (VmHWM, reset before the
request) and the RSS it keeps afterwards. `rag` and `expert`: test_job_uploads.py's
records (~700 bytes, 57k records); `short`: rag records of ~70 bytes (555k records), the
shape that cost the most when the request indexed the records (issue 31, item 10)."""
import gc
import json
import secrets
import time

import pytest
from django.test import RequestFactory
from django.test.client import MULTIPART_CONTENT, ClientHandler
from rest_framework.authtoken.models import Token

from tests.factories import ensure_roles, make_user

from .test_job_uploads import KINDS, MIB, multipart, quiet_jobs, write_lines  # noqa: F401


def status(key):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    return 0.0


SHORT = ("input", KINDS["rag"][1], lambda i: {"id": f"q{i}", "input": f"headline {i}", "output": "t", "profile": []})


@pytest.mark.parametrize("kind", ["rag", "expert", "short"])
@pytest.mark.django_db
def test_measure(tmp_path, quiet_jobs, kind):  # noqa: F811
    field, params, line = (KINDS[kind][:3] if kind != "short" else SHORT)
    path = write_lines(tmp_path / "in.jsonl", line, 40 * MIB)
    ensure_roles()
    token = Token.objects.create(user=make_user(f"adm-{secrets.token_hex(3)}", "admins")).key
    body = multipart({"kind": "rag" if kind == "short" else kind, "params": json.dumps(params)}, field, path)
    request = RequestFactory().generic("POST", "/api/jobs/", body, content_type=MULTIPART_CONTENT,
                                       HTTP_AUTHORIZATION=f"Token {token}")
    handler = ClientHandler(enforce_csrf_checks=False)
    handler.load_middleware()
    del body
    gc.collect()
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # resets VmHWM
    before, rss0 = status("VmHWM"), status("VmRSS")
    t = time.perf_counter()
    response = handler.get_response(request)
    seconds = time.perf_counter() - t
    del request
    gc.collect()
    print(f"\n{kind}: {response.status_code} in {seconds:.2f} s; peak RSS {before:.0f} -> {status('VmHWM'):.0f} MB;"
          f" RSS kept after the request {rss0:.0f} -> {status('VmRSS'):.0f} MB")
