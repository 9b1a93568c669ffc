"""Issue 34, part 1 (web): POST /api/designs/ starts a design run in the background, GET
/api/designs/{id}/ gives its progress and the same JSON as `manage.py design` for the same
design and seed; who may do so; bad input is a 400 naming every problem; the study's Plan
page runs a design, shows its power and saves it to the study (the datasheet prints it)."""
import io
import json
import subprocess
import time

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotate.planning import runs
from annotate.reports.datasheet import datasheet, to_latex, to_markdown
from tests.factories import api_client, make_items, make_study, make_user

pytestmark = pytest.mark.django_db
DESIGN = {"kind": "pairwise_alignment", "systems": {"a": 0.4, "b": -0.4}, "items": 10, "annotations_per_item": 3,
          "annotators": 3, "simulations": 6, "seed": 3,
          "targets": [{"test": "win_rate", "system": "a", "against": "b"}, {"test": "alpha_width", "width": 0.9}],
          "stopping": {"every": 10}}


@pytest.fixture(autouse=True)
def run_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    settings.SECURE_SSL_REDIRECT = False


def wait_done(client, url, seconds=120):
    deadline = time.monotonic() + seconds
    while True:
        body = client.get(url).json()
        assert body["status"] in ("queued", "running", "done")
        assert 0 <= body["done"] <= body["total"]
        if body["status"] == "done":
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.2)


def command_result(design, tmp_path):
    path = tmp_path / "design.json"
    path.write_text(json.dumps(design))
    out = io.StringIO()
    call_command("design", str(path), "--workers", "1", stdout=out)
    return json.loads(out.getvalue())


def test_a_run_polls_to_the_commands_result(tmp_path):
    study = make_study(slug="plan-api")
    researcher = make_user("plan-rita", "researchers")
    client = api_client(researcher)
    started = client.post("/api/designs/", {"study": study.slug, "design": DESIGN}, format="json")
    assert started.status_code == 201, started.content
    body = started.json()
    assert body["url"] == f"/api/designs/{body['id']}/" and body["study"] == "plan-api"
    assert body["total"] == 18  # 6 simulations; the stopping rule adds 6 under the null and 6 under the design
    done = wait_done(client, body["url"])
    assert done["done"] == 18 and done["error"] is None and done["design"] == DESIGN
    assert done["result"] == command_result(DESIGN, tmp_path)
    assert set(done["result"]) == {"targets", "stopping"}
    assert [t["test"] for t in done["result"]["targets"]] == ["win_rate", "alpha_width"]


def test_who_may_start_and_read_a_run(tmp_path):
    study = make_study(slug="plan-who")
    other = make_study(slug="plan-hidden")
    owner, listed = make_user("plan-owner", "researchers"), make_user("plan-listed", "researchers")
    other.researchers.add(listed)  # only `listed` reads plan-hidden
    annotator = make_user("plan-ann", "annotators")
    anonymous = api_client()
    reference = anonymous.get(f"/api/studies/{study.slug}/report/").status_code
    assert anonymous.post("/api/designs/", {"design": DESIGN}, format="json").status_code == reference
    assert reference == 403  # as the report of a study for anonymous callers
    assert api_client(annotator).post("/api/designs/", {"design": DESIGN}, format="json").status_code == 403
    assert api_client(owner).post("/api/designs/", {"study": other.slug, "design": DESIGN},
                                  format="json").status_code == 404
    assert api_client(owner).post("/api/designs/", {"study": "no-such", "design": DESIGN},
                                  format="json").status_code == 404
    run = api_client(listed).post("/api/designs/", {"study": other.slug, "design": DESIGN}, format="json").json()
    assert api_client(owner).get(run["url"]).status_code == 404  # not theirs, a study they may not read
    assert api_client(annotator).get(run["url"]).status_code == 403
    assert anonymous.get(run["url"]).status_code == reference
    assert api_client(owner).get("/api/designs/not-an-id/").status_code == 404
    mine = api_client(owner).post("/api/designs/", {"study": study.slug, "design": DESIGN}, format="json").json()
    assert api_client(listed).get(mine["url"]).status_code == 200  # every researcher reads plan-who
    for body in (run, mine):
        wait_done(api_client(make_user(f"root-{body['id'][:6]}", None, is_superuser=True)), body["url"])


def test_a_run_that_breaks_says_why(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("out of cheese")

    monkeypatch.setattr(runs, "run_design", broken)
    client = api_client(make_user("plan-broken", "researchers"))
    body = client.post("/api/designs/", {"design": DESIGN}, format="json").json()
    deadline = time.monotonic() + 30
    while (state := client.get(body["url"]).json())["status"] != runs.FAILED:
        assert time.monotonic() < deadline, state
        time.sleep(0.1)
    assert state["error"] == "RuntimeError: out of cheese" and state["result"] is None


def test_runs_of_one_process_take_turns(monkeypatch):
    """One run at a time on the pool: the second waits, queued, until the first is done."""
    import threading

    release = threading.Event()

    def slow(design, workers=None, solve=None, progress=None):
        release.wait(30)
        return {"targets": []}

    monkeypatch.setattr(runs, "run_design", slow)
    client = api_client(make_user("plan-turns", "researchers"))
    first, second = (client.post("/api/designs/", {"design": DESIGN}, format="json").json() for _ in range(2))
    deadline = time.monotonic() + 30
    while client.get(first["url"]).json()["status"] != runs.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert client.get(second["url"]).json()["status"] == runs.QUEUED
    release.set()
    for body in (first, second):
        while (state := client.get(body["url"]).json())["status"] != runs.DONE:
            assert time.monotonic() < deadline, state
            time.sleep(0.05)
        assert state["result"] == {"targets": []}


@pytest.mark.parametrize("body, message", [
    ({"desing": DESIGN}, "unknown key 'desing' (did you mean 'design'?)"),
    ({"design": {**DESIGN, "itmes": 5}}, "unknown key 'itmes' (did you mean 'items'?)"),
    ({"design": {**DESIGN, "annotations_per_item": 4}},
     "impossible design: 'annotations_per_item' (4) > 'annotators' (3): each annotator sees an item at most once"),
    ({"design": {**DESIGN, "stopping": {"evry": 3}}}, "stopping: unknown key 'evry' (did you mean 'every'?)"),
    ({"design": {**DESIGN, "simulations": 50_000}},
     "'simulations' may be at most 5000 here, got 50000 (manage.py design has no limit)"),
    ({"design": [1, 2]}, "'design' must be a JSON object (the design file of manage.py design)"),
    ({"design": {**DESIGN, "items": "many"}}, "'items' must be a whole number, got 'many'"),
    ({"study": "a\x00b", "design": DESIGN}, "'study' must be a study's slug"),
    ({"design": {**DESIGN, "pilot": "a\x00b"}}, "'pilot' must be a study's slug, got 'a\\x00b'"),
    ({"design": {**DESIGN, "systems": "ab"}}, "'systems' must map 2 to 8 system ids to strengths (numbers), got 'ab'"),
    ({"design": {**DESIGN, "targets": [{"test": "win_rate", "system": ["a"]}]}},
     "targets[0]: 'system' names ['a'], which is not in 'systems'"),
])
def test_bad_input_is_a_400_naming_the_problem(body, message):
    response = api_client(make_user("plan-bad", "researchers")).post("/api/designs/", body, format="json")
    assert response.status_code == 400
    assert message in response.json()["errors"]


def test_a_list_body_and_a_pilot_without_judgments_are_400s():
    client = api_client(make_user("plan-pilot", "researchers"))
    listed = client.post("/api/designs/", [1], format="json")
    assert listed.status_code == 400 and listed.json()["errors"] == [
        "the body must be a JSON object {\"design\": {...}, \"study\": slug?}"]
    make_study(slug="empty-pilot")
    response = client.post("/api/designs/", {"design": {**DESIGN, "pilot": "empty-pilot"}}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == ["'pilot': study 'empty-pilot' has no judgments to fit a model from"]


def test_the_plan_page_runs_shows_and_saves_a_design(client, tmp_path):
    study = make_study(slug="plan-page")
    make_items(study, 6)
    researcher = make_user("plan-page-rita", "researchers")
    client.force_login(researcher)
    page = client.get(reverse("study-plan", args=[study.slug]))
    assert page.status_code == 200
    html = page.content.decode()
    systems = page.context["form"]["systems"]
    assert len(systems) == 2 and all(f'name="strength:{s}"' in html for s in systems)
    assert page.context["form"]["items"] == 6 and page.context["form"]["annotations_per_item"] == 3
    a, b = systems
    form = {"action": "run", f"strength:{a}": "0.5", f"strength:{b}": "-0.5", "items": "10",
            "annotations_per_item": "3", "annotators": "3", "item_sd": "0", "annotator_sd": "0", "simulations": "5",
            "seed": "1", "targets": json.dumps([{"test": "win_rate", "system": a, "against": b}]),
            "stopping_every": ""}
    started = client.post(reverse("study-plan", args=[study.slug]), form)
    assert started.status_code == 302
    run_id = started["Location"].split("run=")[1]
    deadline = time.monotonic() + 120
    while (runs.load(run_id) or {}).get("status") != runs.DONE:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    panel = client.get(reverse("study-plan-run", args=[study.slug, run_id])).content.decode()
    result = runs.load(run_id)["result"]
    assert 'data-status="done"' in panel and "hx-trigger" not in panel  # polling stops when done
    assert f'<td class="num power">{result["targets"][0]["power"]:.3f}</td>' in panel
    assert f"win_rate: {a} vs {b}" in panel
    saved = client.post(reverse("study-plan", args=[study.slug]), {"action": "save", "run": run_id})
    assert saved.status_code == 302
    study.refresh_from_db()
    power = study.config["power"]
    assert power["result"] == result and power["design"]["systems"] == {a: 0.5, b: -0.5}
    assert power["run"] == run_id and power["saved_by"] == "plan-page-rita"
    sheet = datasheet(study)
    assert sheet["power"] == power
    target = result["targets"][0]
    assert (f"| win_rate: {a} vs {b} | {target['power']:.3f} | {target['se']:.3f} | {target['median_width']:.3f} | 5 |"
            in to_markdown(sheet))
    assert "10 items, 3 annotations per item, 3 annotators, seed 1" in to_markdown(sheet)
    tex = to_latex(sheet)
    assert "Power analysis (saved design)" in tex
    (tmp_path / "methods.tex").write_text(tex, encoding="utf-8")
    compiled = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "methods.tex"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
    assert compiled.returncode == 0, compiled.stdout[-2000:]
    page = client.get(reverse("study-plan", args=[study.slug])).content.decode()
    assert "The design saved to this study" in page
    bad = client.post(reverse("study-plan", args=[study.slug]), {**form, "items": "ten", "annotators": "2"})
    assert bad.status_code == 400
    assert "&#x27;items&#x27; must be a whole number, got &#x27;ten&#x27;" in bad.content.decode()
    client.force_login(make_user("plan-page-ann", "annotators"))
    assert client.get(reverse("study-plan", args=[study.slug])).status_code == 403


def test_the_plan_page_of_a_scalar_study_plans_a_scalar_difference(client, tmp_path):
    from evaluation.report.kinds import SCALAR_RATING

    study = make_study(SCALAR_RATING, slug="plan-scalar", config={"scale": [1, 7]})
    make_items(study, 10)  # 5 inputs' outputs of plot-a and plot-b
    client.force_login(make_user("plan-scalar-rita", "researchers"))
    form = client.get(reverse("study-plan", args=[study.slug])).context["form"]
    assert form["systems"] == {"plot-a": 4.0, "plot-b": 4.0} and form["items"] == 5 and form["scalar"]
    assert json.loads(form["targets"]) == [{"test": "scalar_difference", "a": "plot-a", "b": "plot-b"}]
    started = client.post(reverse("study-plan", args=[study.slug]), {
        "action": "run", "strength:plot-a": "5", "strength:plot-b": "4", "items": "20", "annotations_per_item": "2",
        "annotators": "2", "noise_sd": "1", "simulations": "4", "seed": "2", "targets": form["targets"]})
    assert started.status_code == 302, started.content.decode()[-2000:]
    run_id = started["Location"].split("run=")[1]
    deadline = time.monotonic() + 60
    while (run := runs.load(run_id))["status"] != runs.DONE:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert run["design"]["scale"] == [1, 7] and run["design"]["noise_sd"] == 1.0
    assert run["result"]["targets"][0]["test"] == "scalar_difference"
    assert run["result"] == command_result(run["design"], tmp_path)
    fit = client.post(reverse("study-plan", args=[study.slug]), {"action": "run", "fit": "on", "items": "20",
                                                                 "targets": form["targets"]})
    assert fit.status_code == 400
    assert "&#x27;pilot&#x27;: study &#x27;plan-scalar&#x27; has no judgments to fit a model from" in \
        fit.content.decode()

