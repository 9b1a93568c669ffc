"""Every URL of the URLconf, probed as anonymous, annotator, researcher and admin.

The table below is the access policy of interfaces.md written out per URL name. The
coverage test walks django.urls.get_resolver() and fails, naming the URL, when a pattern
has no entry here (so a new view cannot ship without deciding who may use it), or when an
entry names a URL that no longer exists. The Django admin namespace is covered by one
rule: staff only (none of the four roles is staff; a superuser gets in).

Writes are probed with bodies that pass the permission gate but fail validation (400) or
are harmless, so a 400/201 for a role means "allowed", 403/404/302 means "refused".
"""
from dataclasses import dataclass, field

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.factories import add_items, make_study, make_user, short_pairwise

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
ROLES = ("anonymous", "annotator", "researcher", "admin")
LOGIN = 302  # a page that sends anonymous users to /login/
URLENCODED = "application/x-www-form-urlencoded"


@dataclass
class Probe:
    method: str
    expected: dict  # role -> status or tuple of allowed statuses
    kwargs: object = None  # callable(world) -> URL kwargs
    body: object = None  # callable(world) -> JSON-able body, or bytes
    content_type: str = "application/json"  # "form" = an HTML form post (the test client sends multipart)
    query: str = ""
    note: str = ""
    after: object = None  # callable(world): extra assertions once every role was probed


def by_role(anonymous, annotator, researcher, admin):
    return {"anonymous": anonymous, "annotator": annotator, "researcher": researcher, "admin": admin}


def slug(world):
    return {"slug": world.study.slug}


def keyed(world):
    return {"slug": world.study.slug, "key": world.study.entry_key}


def own_assignment(world):
    return {"pk": world.own_assignment.pk}


def others_assignment(world):
    return {"pk": world.others_assignment.pk}


def hidden(world):
    return {"slug": world.hidden.slug}


def scoped(world):
    """A study listing another researcher and another annotator: only admins see it."""
    return {"slug": world.scoped.slug}


def nothing_written_for_other(world):
    from annotate.models import Judgment

    assert not Judgment.objects.filter(assignment=world.others_assignment).exists()


def job(world):
    return {"pk": world.job.pk}


def design_run(study_attr):
    """URL kwargs of a finished design run about the world's `study_attr` study, started by
    the other researcher (annotate/planning/runs.py: a file, no table)."""
    def kwargs(world):
        from annotate.planning import runs

        study = getattr(world, study_attr)
        run = {"id": f"{abs(hash(study.slug)) % 16 ** 8:08x}" + "0" * 24, "status": runs.DONE, "design": {},
               "study": study.slug, "user": world.users["other-researcher"].pk, "done": 1, "total": 1,
               "result": {"targets": []}, "error": None}
        runs._write(run)
        return {"run_id": run["id"]}
    return kwargs


def valid_answer(world):
    """m1, in the own assignment's tokens (annotate.desk.blinding): what its annotator would send."""
    from tests.factories import tokens

    return {**tokens(world.own_assignment.pk, {"choice": "m1"}), "seconds": 3}


# --- the policy ----------------------------------------------------------------------------
TABLE = {
    "login": [Probe("GET", by_role(200, 200, 200, 200))],
    "logout": [Probe("POST", by_role(302, 302, 302, 302))],
    "api-schema": [Probe("GET", by_role(200, 200, 200, 200), note="the schema is public documentation")],
    "api-docs": [Probe("GET", by_role(200, 200, 200, 200))],
    # Annotators: only their own assignments.
    "api-next-assignment": [Probe("POST", by_role(403, 200, 403, 403), slug)],
    "api-assignment-judgments": [
        Probe("POST", by_role(403, 404, 404, 404), others_assignment, valid_answer,
              note="someone else's assignment: not found for everybody but its owner"),
        Probe("POST", by_role(403, 201, 404, 404), own_assignment, valid_answer),
        Probe("PUT", by_role(403, 404, 404, 404), others_assignment, valid_answer),
    ],
    # "Can't judge" and "extend": the owner's open assignment only.
    "api-assignment-skip": [
        Probe("POST", by_role(403, 404, 404, 404), others_assignment, lambda w: {"reason": "other"},
              after=nothing_written_for_other),
        Probe("POST", by_role(403, 201, 404, 404), own_assignment, lambda w: {"reason": "other"}),
    ],
    "api-assignment-extend": [Probe("POST", by_role(403, 404, 404, 404), others_assignment),
                              Probe("POST", by_role(403, 200, 404, 404), own_assignment)],
    # Researchers read: the study's own (none listed = every researcher) and admins. A
    # study someone may not see answers 404, like a slug that does not exist.
    "api-study-report": [Probe("GET", by_role(403, 403, 200, 200), slug),
                         Probe("GET", by_role(403, 404, 404, 200), scoped)],
    "api-study-report-version": [Probe("GET", by_role(403, 403, 200, 200), slug),
                                 Probe("GET", by_role(403, 404, 404, 200), scoped)],
    "dashboard": [Probe("GET", by_role(LOGIN, 403, 200, 200), slug),
                  Probe("GET", by_role(LOGIN, 404, 404, 200), scoped)],
    "study-methods": [Probe("GET", by_role(LOGIN, 403, 200, 200), slug),
                      Probe("GET", by_role(LOGIN, 404, 404, 200), scoped)],
    # Design runs (annotate/planning): researchers and admins; a run is read by its starter,
    # the researchers of its study and admins; a study one may not see is 404.
    "api-designs": [Probe("POST", by_role(403, 403, 400, 400), body=lambda w: {"design": {}}),
                    Probe("POST", by_role(403, 403, 404, 201), body=lambda w: {"study": w.scoped.slug, "design": {
                        "kind": "pairwise_alignment", "systems": {"a": 0.1, "b": 0.0}, "items": 2, "annotators": 1,
                        "annotations_per_item": 1, "simulations": 1,
                        "targets": [{"test": "win_rate", "system": "a", "against": "b"}]}})],
    "api-design": [Probe("GET", by_role(403, 403, 200, 200), design_run("study")),
                   Probe("GET", by_role(403, 403, 404, 200), design_run("scoped")),
                   Probe("GET", by_role(403, 403, 404, 404), lambda w: {"run_id": "f" * 32})],
    "study-plan": [Probe("GET", by_role(LOGIN, 403, 200, 200), slug),
                   Probe("GET", by_role(LOGIN, 404, 404, 200), scoped),
                   Probe("POST", by_role(LOGIN, 403, 400, 400), slug, lambda w: {"action": "run", "items": "x"},
                         content_type="form")],
    "study-plan-run": [Probe("GET", by_role(LOGIN, 403, 200, 200), lambda w: {"slug": w.study.slug,
                                                                             **design_run("study")(w)}),
                       Probe("GET", by_role(LOGIN, 404, 404, 200), lambda w: {"slug": w.scoped.slug,
                                                                             **design_run("scoped")(w)})],
    "dashboard-progress": [Probe("GET", by_role(LOGIN, 403, 200, 200), slug),
                           Probe("GET", by_role(LOGIN, 404, 404, 200), scoped)],
    "dashboard-report": [Probe("GET", by_role(LOGIN, 403, 200, 200), slug),
                         Probe("GET", by_role(LOGIN, 404, 404, 200), scoped)],
    "dashboard-report-version": [Probe("GET", by_role(LOGIN, 403, 200, 200), slug),
                                 Probe("GET", by_role(LOGIN, 404, 404, 200), scoped)],
    # Admins start jobs; researchers of the job's study (and the job's creator) read them.
    "api-jobs": [Probe("GET", by_role(403, 403, 403, 200)),
                 Probe("POST", by_role(403, 403, 403, 400), body=lambda w: {})],
    "api-job": [Probe("GET", by_role(403, 404, 200, 200), job),
                Probe("GET", by_role(403, 404, 404, 200), lambda w: {"pk": w.scoped_job.pk}),
                Probe("GET", by_role(403, 404, 404, 200), lambda w: {"pk": w.planned_job.pk},
                      note="a plan's job before its study exists: admins (and its creator) only")],
    "api-job-file": [Probe("GET", by_role(403, 404, 404, 404), lambda w: {"pk": w.job.pk, "name": "out.jsonl"},
                           note="only names in the job's own file list are served; this job has none")],
    "api-pipelines": [Probe("POST", by_role(403, 403, 403, 400), body=lambda w: {},
                            note="admins start study plans; without a plan: 400")],
    "dashboard-jobs": [Probe("GET", by_role(LOGIN, 404, 200, 200), slug),
                       Probe("GET", by_role(LOGIN, 404, 404, 200), scoped),
                       Probe("GET", by_role(LOGIN, 404, 404, 404), lambda w: {"slug": "no-such-study"},
                             note="a missing slug: the same 404 as a study one may not read")],
    "plan-new": [Probe("GET", by_role(LOGIN, 403, 403, 200))],
    # Anyone signed in replaces their own API token.
    "api-token-rotate": [Probe("POST", by_role(403, 200, 200, 200))],
    "home": [Probe("GET", by_role(LOGIN, 200, 200, 200))],
    # Studies: everyone signed in lists what they may see; a study listing other
    # annotators is invisible to the rest; only admins create and load.
    "api-studies": [Probe("GET", by_role(403, 200, 200, 200)),
                    Probe("POST", by_role(403, 403, 403, 400), body=lambda w: {}),
                    Probe("POST", by_role(403, 403, 403, 415), body=lambda w: {"slug": "x", "file": "y"},
                          content_type="form", note="study fields come as JSON; a form was a 500")],
    "api-study": [Probe("GET", by_role(403, 200, 200, 200), slug),
                  Probe("GET", by_role(403, 404, 200, 200), hidden),
                  Probe("GET", by_role(403, 404, 404, 200), scoped)],
    # A form or multipart body: permission first (403), then the type (415 for admins), never
    # a 500 (the same bodies through the real WSGI handler with CSRF: test_form_uploads_*).
    "api-study-batches": [Probe("POST", by_role(403, 403, 403, 400), slug, body=lambda w: b"not json",
                                content_type="application/x-ndjson"),
                          Probe("POST", by_role(403, 403, 403, 415), slug, lambda w: {"file": "x"},
                                content_type="form"),
                          Probe("POST", by_role(403, 403, 403, 415), slug, lambda w: b"file=x",
                                content_type=URLENCODED)],
    "api-study-predictions": [Probe("POST", by_role(403, 403, 403, 400), slug, body=lambda w: b"bad",
                                    content_type="text/csv"),
                              Probe("POST", by_role(403, 403, 403, 415), slug, lambda w: {"file": "x"},
                                    content_type="form"),
                              Probe("POST", by_role(403, 403, 403, 415), slug, lambda w: b"file=x",
                                    content_type=URLENCODED)],
    "api-study-judgments": [Probe("GET", by_role(403, 403, 200, 200), slug),
                            Probe("GET", by_role(403, 404, 404, 200), scoped)],
    # Participants (docs/running-a-study.md): a link needs the study's entry key (else the
    # same 404 as no study) and a participant id (else 400); the flow needs a participant
    # session; the preview and participants.csv are for the study's researchers; so is the
    # Recruitment panel's form. Participant sessions themselves: tests/test_participants.py
    # and tests/test_recruitment.py.
    "participant-entry": [Probe("GET", by_role(400, 400, 400, 400), keyed),
                          Probe("GET", by_role(404, 404, 404, 404), lambda w: {"slug": w.study.slug, "key": "guess"})],
    "participant-flow": [Probe("GET", by_role(404, 404, 404, 404), slug)],
    "participant-preview": [Probe("GET", by_role(404, 404, 200, 200), keyed),
                            Probe("GET", by_role(404, 404, 404, 404), lambda w: {"slug": w.scoped.slug, "key": "x"},
                                  note="a study listing its annotators never recruits")],
    "dashboard-recruitment": [Probe("POST", by_role(LOGIN, 403, 400, 400), slug, lambda w: {"action": "bogus"},
                                    content_type="form"),
                              Probe("POST", by_role(LOGIN, 404, 404, 400), scoped, lambda w: {"action": "bogus"},
                                    content_type="form")],
    "api-study-participants": [Probe("GET", by_role(403, 403, 200, 200), slug),
                               Probe("GET", by_role(403, 404, 404, 200), scoped)],
    "study-upload": [Probe("GET", by_role(LOGIN, 403, 403, 200), slug),
                     Probe("GET", by_role(LOGIN, 404, 404, 200), scoped)],
    "batch-upload": [Probe("GET", by_role(LOGIN, 403, 403, 200))],
    # Task pages: annotators of the study only.
    "annotate-task": [Probe("GET", by_role(LOGIN, 200, 403, 403), slug),
                      Probe("GET", by_role(LOGIN, 404, 403, 403), hidden),
                      Probe("GET", by_role(LOGIN, 404, 404, 403), scoped)],
    "annotate-next": [Probe("POST", by_role(LOGIN, 302, 403, 403), slug, content_type="form",
                            note="without htmx (the Start form with scripts off) it reserves, then goes to the page")],
    "annotate-submit": [
        Probe("POST", by_role(LOGIN, 200, 403, 403), lambda w: {"slug": w.study.slug, "pk": w.others_assignment.pk},
              lambda w: {"choice": "m1", "seconds": "3"}, content_type="form", after=nothing_written_for_other,
              note="someone else's item: the page just moves on, nothing is stored"),
        Probe("POST", by_role(LOGIN, 200, 403, 403), lambda w: {"slug": w.study.slug, "pk": w.own_assignment.pk},
              lambda w: {"choice": "m1", "seconds": "3"}, content_type="form"),
    ],
    "annotate-edit": [
        Probe("GET", by_role(LOGIN, 404, 403, 403), lambda w: {"slug": w.study.slug, "pk": w.others_assignment.pk}),
        Probe("POST", by_role(LOGIN, 404, 403, 403), lambda w: {"slug": w.study.slug, "pk": w.others_assignment.pk},
              lambda w: {"choice": "m2"}, content_type="form", after=nothing_written_for_other),
        Probe("GET", by_role(LOGIN, 200, 403, 403), lambda w: {"slug": w.study.slug, "pk": w.own_assignment.pk}),
    ],
    "annotate-skip": [
        Probe("POST", by_role(LOGIN, 200, 403, 403), lambda w: {"slug": w.study.slug, "pk": w.others_assignment.pk},
              lambda w: {"reason": "other"}, content_type="form", after=nothing_written_for_other,
              note="someone else's item: the page just moves on, nothing is stored"),
        Probe("POST", by_role(LOGIN, 200, 403, 403), lambda w: {"slug": w.study.slug, "pk": w.own_assignment.pk},
              lambda w: {"reason": "other"}, content_type="form"),
    ],
    "annotate-extend": [
        Probe("POST", by_role(LOGIN, 404, 403, 403), lambda w: {"slug": w.study.slug, "pk": w.others_assignment.pk},
              content_type="form"),
        Probe("POST", by_role(LOGIN, 200, 403, 403), lambda w: {"slug": w.study.slug, "pk": w.own_assignment.pk},
              content_type="form"),
    ],
    "annotate-mine": [Probe("GET", by_role(LOGIN, 200, 403, 403), slug),
                      Probe("GET", by_role(LOGIN, 404, 403, 403), hidden)],
    "annotate-mine-edit": [
        Probe("GET", by_role(LOGIN, 404, 403, 403), lambda w: {"slug": w.study.slug, "pk": w.others_assignment.pk}),
        Probe("POST", by_role(LOGIN, 404, 403, 403), lambda w: {"slug": w.study.slug, "pk": w.others_assignment.pk},
              lambda w: {"q:choice": "m2"}, content_type="form", after=nothing_written_for_other),
    ],
    "annotate-quality": [Probe("GET", by_role(LOGIN, 403, 200, 200), slug),
                         Probe("GET", by_role(LOGIN, 404, 404, 200), scoped)],
}

ADMIN_NAMESPACE = "admin"
ADMIN_OPEN = {"admin:login": 200}  # the admin login form itself


# --- the world every probe runs in -----------------------------------------------------------
@dataclass
class World:
    users: dict = field(default_factory=dict)
    study: object = None
    own_assignment: object = None
    others_assignment: object = None
    hidden: object = None  # a study listing only the other annotator
    scoped: object = None  # a study listing only the other annotator and the other researcher
    job: object = None
    scoped_job: object = None  # a job working on `scoped`
    planned_job: object = None  # a plan's job whose study is not imported yet


@pytest.fixture
def world(django_user_model):
    from annotate.desk.assignment import next_assignment
    from models_runtime.models import Job

    w = World()
    w.users = {
        "annotator": make_user("ann-own", "annotators"),
        "other": make_user("ann-other", "annotators"),
        "researcher": make_user("res", "researchers"),
        "other-researcher": make_user("res-other", "researchers"),
        "admin": make_user("adm", "admins"),
    }
    w.study = make_study(slug="perm", title="Perm", randomize_order=False, recruitment={"platform": "prolific"})
    add_items(w.study, [(f"i{n}", short_pairwise(), None) for n in range(3)])
    w.own_assignment = next_assignment(w.study, w.users["annotator"])
    w.others_assignment = next_assignment(w.study, w.users["other"])
    w.hidden = make_study(slug="perm-hidden", title="Hidden")
    w.hidden.annotators.set([w.users["other"]])
    w.scoped = make_study(slug="perm-scoped", title="Scoped")
    w.scoped.annotators.set([w.users["other"]])
    w.scoped.researchers.set([w.users["other-researcher"]])
    w.job = Job.objects.create(kind="score", params={}, created_by=w.users["admin"])
    w.scoped_job = Job.objects.create(kind="score", params={"study": w.scoped.slug}, created_by=w.users["admin"])
    w.planned_job = Job.objects.create(kind="pipeline", params={"study": "perm-planned", "study_header": {
        "slug": "perm-planned", "researchers": ["res-other"]}}, created_by=w.users["admin"])
    return w


def client_for(world, role):
    client = Client(raise_request_exception=False)
    if role != "anonymous":
        client.force_login(world.users[role])
    return client


def request(client, method, url, probe, world):
    body = probe.body(world) if probe.body else None
    if probe.content_type == "form":
        return getattr(client, method.lower())(url + probe.query, data=body or {})
    if isinstance(body, (dict, list)):
        import json

        body = json.dumps(body)
    kwargs = {"content_type": probe.content_type} if method in ("POST", "PUT", "PATCH") else {}
    if body is not None:
        kwargs["data"] = body
    return getattr(client, method.lower())(url + probe.query, **kwargs)


# --- walking the URLconf -----------------------------------------------------------------------
def all_url_names(patterns=None, namespace=""):
    """'namespace:name' of every pattern (unnamed ones as '<unnamed route>')."""
    patterns = get_resolver().url_patterns if patterns is None else patterns
    names = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            ns = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            names += all_url_names(pattern.url_patterns, ns)
        elif isinstance(pattern, URLPattern):
            names.append(f"{namespace}{pattern.name}" if pattern.name else f"{namespace}<unnamed {pattern.pattern}>")
    return names


def admin_names():
    return sorted({n for n in all_url_names() if n.startswith(ADMIN_NAMESPACE + ":") and "<unnamed" not in n})


def test_every_url_has_an_access_rule():
    names = set(all_url_names())
    missing = sorted(n for n in names if n not in TABLE and not n.startswith(ADMIN_NAMESPACE + ":"))
    assert not missing, ("URLs without an entry in tests/test_permissions.py TABLE (decide who may use them): "
                         + ", ".join(missing))
    stale = sorted(set(TABLE) - names)
    assert not stale, "TABLE entries for URLs that no longer exist: " + ", ".join(stale)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_roles_get_the_expected_status(name, world):
    if name not in set(all_url_names()):
        pytest.skip(f"{name} is not in the URLconf (the coverage test reports it)")
    mismatches = []
    for index, probe in enumerate(TABLE[name]):
        # Roles in this order so the owner's successful write comes last.
        for role in ("anonymous", "researcher", "admin", "annotator"):
            url = reverse(name, kwargs=probe.kwargs(world) if probe.kwargs else None)
            response = request(client_for(world, role), probe.method, url, probe, world)
            expected = probe.expected[role]
            allowed = expected if isinstance(expected, tuple) else (expected,)
            if response.status_code not in allowed:
                mismatches.append(f"probe {index} {probe.method} {url} as {role}: "
                                  f"got {response.status_code}, expected {expected}")
            if response.status_code == 302 and role == "anonymous" and expected == LOGIN:
                assert response["Location"].startswith(reverse("login")), response["Location"]
        if probe.after:
            probe.after(world)
    assert not mismatches, "\n".join(mismatches)


def test_django_admin_is_staff_only(world, django_user_model):
    """Every named admin URL refuses the four roles (none is staff): a redirect to the
    admin login; a superuser gets in."""
    from django.urls import NoReverseMatch

    mismatches = []
    checked = 0
    for name in admin_names():
        try:
            url = reverse(name, kwargs=None)
        except NoReverseMatch:
            try:
                url = reverse(name, kwargs=_admin_kwargs_for(name))
            except NoReverseMatch as exc:
                mismatches.append(f"{name}: cannot build a URL ({exc})")
                continue
        checked += 1
        for role in ROLES:
            response = client_for(world, role).get(url)
            if name in ADMIN_OPEN:
                ok = response.status_code == ADMIN_OPEN[name]
            elif name == "admin:logout":
                ok = response.status_code in (302, 405)
            else:
                ok = response.status_code == 302 and "/admin/login/" in response["Location"]
            if not ok:
                mismatches.append(f"{name} {url} as {role}: {response.status_code}")
    assert checked > 10
    assert not mismatches, "\n".join(mismatches)
    root = make_user("root", None, is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(root)
    assert client.get(reverse("admin:index")).status_code == 200


def _admin_kwargs_for(name):
    ns, _, short = name.partition(":")
    resolver = get_resolver()
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver) and pattern.namespace == ns:
            for candidate in pattern.reverse_dict.getlist(short):
                params = candidate[0][0][1]
                values = {"app_label": "auth", "object_id": "1", "content_type_id": "1", "url": "x"}
                return {p: values.get(p, "1") for p in params}
    return {}


# --- form bodies to the raw-body uploads, through the real WSGI handler -----------------------
# The test client disables CSRF checks and re-raises what Django's own 500 handler raises; a
# server (gunicorn) calls WSGIHandler, where the session CSRF check reads request.POST. Before
# the fix, every signed-in role's form post here crashed the view and then the 500 handler.
MULTIPART = ("multipart/form-data; boundary=XyZ",
             b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="b.jsonl"\r\n'
             b"Content-Type: application/x-ndjson\r\n\r\n{}\r\n--XyZ--\r\n")
FORM_BODIES = {"urlencoded": (URLENCODED, b"csrfmiddlewaretoken=x&file=y"), "multipart": MULTIPART}
CSRF_SECRET = "k" * 32


def wsgi_post(path, content_type, body, headers, method="POST"):
    """POST through django.core.handlers.wsgi.WSGIHandler as a WSGI server would: an
    exception escaping the handler (a 500 handler that crashes too) fails the test."""
    import io

    from django.core.handlers.wsgi import WSGIHandler
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "testserver",
               "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.url_scheme": "http",
               "wsgi.input": io.BytesIO(body), "wsgi.errors": io.StringIO(), "CONTENT_TYPE": content_type,
               "CONTENT_LENGTH": str(len(body)), **headers}
    started = {}
    # The handler closes the connection at the end of a request; the test's transaction needs it.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        chunks = WSGIHandler()(environ, lambda status, _headers, exc_info=None: started.update(status=status))
        content = b"".join(chunks)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    return int(started["status"].split()[0]), content


def credentials(world, role, auth):
    """WSGI headers for `role` signed in by session (with or without the CSRF token) or token."""
    from rest_framework.authtoken.models import Token

    if role == "anonymous":
        return {}
    if auth == "token":
        return {"HTTP_AUTHORIZATION": f"Token {Token.objects.get_or_create(user=world.users[role])[0].key}"}
    client = Client()
    client.force_login(world.users[role])
    cookies = "; ".join(f"{name}={morsel.value}" for name, morsel in client.cookies.items())
    headers = {"HTTP_COOKIE": f"{cookies}; csrftoken={CSRF_SECRET}"}
    if auth == "session+csrf":
        headers["HTTP_X_CSRFTOKEN"] = CSRF_SECRET
    return headers


@pytest.mark.parametrize("name", ["api-study-batches", "api-study-predictions"])
@pytest.mark.parametrize("form", sorted(FORM_BODIES))
def test_form_uploads_answer_403_or_415_through_wsgi(name, form, world):
    """Every role x session (with/without CSRF token) or token: 403 unless an admin who
    passed CSRF, who gets 415 (the file must be the body); nothing is imported."""
    from annotate.models import Item

    items_before = Item.objects.count()
    url = reverse(name, kwargs={"slug": world.study.slug})
    content_type, body = FORM_BODIES[form]
    got, expected = {}, {}
    for role in ROLES:
        for auth in ("session+csrf", "session", "token"):
            status, content = wsgi_post(url, content_type, body, credentials(world, role, auth))
            got[role, auth] = status
            expected[role, auth] = 415 if role == "admin" and auth != "session" else 403
            assert content.startswith(b'{"detail":'), (role, auth, content[:200])
    assert got == expected
    assert Item.objects.count() == items_before


def test_no_write_answers_5xx_to_a_form_or_multipart_body_through_wsgi(world):
    """Every POST/PUT of the TABLE, with each form body, as every role signed in by
    session with the CSRF token: never a 5xx and never an exception out of the handler
    (the real 500 path; the role matrix above uses the test client)."""
    crashed = []
    for name, probes in sorted(TABLE.items()):
        for probe in probes:
            if probe.method not in ("POST", "PUT"):
                continue
            url = reverse(name, kwargs=probe.kwargs(world) if probe.kwargs else None)
            for form, (content_type, body) in sorted(FORM_BODIES.items()):
                for role in ROLES:
                    status, _ = wsgi_post(url, content_type, body, credentials(world, role, "session+csrf"),
                                          probe.method)
                    if status >= 500:
                        crashed.append(f"{probe.method} {url} {form} as {role}: {status}")
    assert not crashed, "\n".join(crashed)
