"""Report HTML and CSV rendering, the report API (who may read it), the dashboard pages,
and a study replayed through import_batch + import_judgments + import_predictions."""
import csv
import io
import json
from html.parser import HTMLParser

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient
from test_report_pairwise import JUDGMENTS, PREDICTIONS, ROUGE, pairwise_study

from annotate.reports.data import fetch_report_input
from evaluation.report import build_report, render
from tests.factories import make_judged_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]


class Page(HTMLParser):
    """Collects figures (id -> has svg, caption text), tables, and external references."""

    def __init__(self):
        super().__init__()
        self.figures, self.stack, self.captions, self.external, self.tables = {}, [], {}, [], 0
        self._caption = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "figure":
            self.stack.append(attrs.get("id"))
            self.figures[attrs.get("id")] = False
        if tag == "svg" and self.stack:
            self.figures[self.stack[-1]] = True
        if tag == "figcaption" and self.stack:
            self._caption = self.stack[-1]
            self.captions[self._caption] = ""
        if tag == "table":
            self.tables += 1
        for key in ("src", "href"):
            if tag in ("script", "link", "img", "iframe") and attrs.get(key):
                self.external.append(attrs[key])

    def handle_endtag(self, tag):
        if tag == "figure":
            self.stack.pop()
        if tag == "figcaption":
            self._caption = None

    def handle_data(self, data):
        if self._caption:
            self.captions[self._caption] += data


def parse(text):
    page = Page()
    page.feed(text)
    return page


def test_html_report_has_every_figure_with_caption():
    inp = fetch_report_input(pairwise_study())
    text = render(build_report(inp), inp, "html")
    page = parse(text)
    for fig in ("fig-agreement", "fig-alignment", "fig-ratings", "fig-position-bias"):
        assert page.figures.get(fig) is True, fig
        assert len(page.captions[fig]) > 40
    assert "Wilson" in page.captions["fig-alignment"]
    assert "t-test of their shares" in page.captions["fig-position-bias"]
    assert "voting screens pooled" in page.captions["fig-position-bias"]
    assert page.external == []  # self-contained: no scripts, stylesheets or images to fetch
    assert page.tables >= 5
    # 3 decimals: rougeL alignment 2.5/3, Fleiss 23/143, alpha 1/3, first-shown 6/11.
    for number in ("0.833", "0.161", "0.333", "0.545"):
        assert f">{number}<" in text
    # Each SVG's ids are prefixed with its figure name, so no id repeats across figures.
    ids = [part.split('"', 1)[0] for part in text.split(' id="')[1:]]
    assert len(ids) == len(set(ids))
    assert "No annotator pair shares 10 or more units" in text  # pairwise kappa: 3 pairs, < 10 shared


def test_html_report_for_other_kinds_has_histograms():
    from test_report_kinds import SURVEY, survey_item
    items = [("s1", survey_item("d1", ["u1", "u2"]), None), ("s2", survey_item("d2", ["u1", "u3"]), None)]
    judgments = [(item, who, pid, str(r), "0|1", 30.0) for item, by_pair in SURVEY.items()
                 for pid, ratings in by_pair.items() for who, r in zip(("ann1", "ann2"), ratings)]
    inp = fetch_report_input(make_judged_study("sim-html", "similarity_survey", items, judgments, overlap=2))
    page = parse(render(build_report(inp), inp, "html"))
    assert page.figures["fig-ratings"] is True and page.figures["fig-agreement"] is True
    assert "similarity rating" in render(build_report(inp), inp, "html")


def test_report_api_roles(researcher, annotators, admin_user_):
    pairwise_study()
    client = APIClient()
    url = "/api/studies/pw/report/"
    assert client.get(url).status_code in (401, 403)
    client.force_authenticate(annotators[0])
    assert client.get(url).status_code == 403
    for reader in (researcher, admin_user_):
        client.force_authenticate(reader)
        response = client.get(url)
        assert response.status_code == 200
        body = response.json()
        assert body["win_rate"] == {"x": pytest.approx(2 / 3), "y": pytest.approx(1 / 3)}
    response = client.get(url + "?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[1][:5] == ["i1", "choice", "0", "3", "x"]
    response = client.get(url + "?format=html")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    assert parse(response.content.decode()).figures["fig-alignment"] is True
    response = client.get(url + "?format=xml")
    assert response.status_code == 400 and "unknown format" in response.json()["detail"]
    assert client.get("/api/studies/nope/report/").status_code == 404


def test_dashboard_pages_roles(client, researcher, annotators, admin_user_):
    pairwise_study()
    client.force_login(annotators[0])
    assert client.get("/studies/pw/").status_code == 403
    assert client.get("/studies/pw/progress/").status_code == 403
    client.force_login(researcher)
    page = client.get("/studies/pw/")
    text = page.content.decode()
    assert page.status_code == 200
    assert 'hx-get="/studies/pw/progress/"' in text and 'hx-trigger="every 5s"' in text
    for f in ("json", "csv", "html"):
        assert f'href="/api/studies/pw/report/?format={f}"' in text
    assert 'href="/api/studies/pw/judgments/?format=csv"' in text
    assert 'id="job-form"' not in text  # admins only
    assert parse(text).figures["fig-alignment"] is True
    progress = client.get("/studies/pw/progress/").content.decode()
    # ann1 judged 5 items (5 judgments), ann2 5, ann3 3; i1, i2, i4 are complete.
    assert "<td>ann1</td><td class=\"num\">5</td><td class=\"num\">5</td>" in progress
    assert "3 complete items of 4 (and 1 gold, not counted)" in progress
    client.force_login(admin_user_)
    text = client.get("/studies/pw/").content.decode()
    assert 'id="job-form"' in text and 'href="/studies/pw/upload/"' in text


def test_replay_through_importers_gives_the_same_report(tmp_path, capsys):
    """The pairwise study written as the three files of interfaces.md, loaded with the
    import commands, reports exactly what the ORM-built study reports."""
    batch = tmp_path / "batch.jsonl"
    lines = [{"study": {"slug": "pw", "kind": "pairwise_alignment", "title": "Replay", "instructions": "Pick.",
                        "annotations_per_item": 3}}]
    for item in ("i1", "i2", "i3", "i4", "g1"):
        line = {"item_id": item, "input": f"request {item}", "reference": f"ref {item}",
                "candidates": [{"id": "x", "text": "text of x"}, {"id": "y", "text": "text of y"}],
                "metric_scores": {"rougeL": ROUGE[item]}}
        if item == "g1":
            line["gold"] = "x"
        lines.append(line)
    batch.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    judgments = tmp_path / "judgments.csv"
    with judgments.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["study", "item_id", "annotator", "question", "value", "shown_order", "seconds",
                         "submitted_at"])
        for item, who, value, shown, seconds in JUDGMENTS:
            writer.writerow(["pw", item, who, "choice", value, shown, seconds, "2026-01-01T00:00:00+00:00"])
    predictions = tmp_path / "predictions.csv"
    with predictions.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["study", "item_id", "evaluator", "annotator", "question", "value"])
        for row in PREDICTIONS:
            writer.writerow(["pw", *row])
    call_command("import_batch", str(batch))
    call_command("import_judgments", str(judgments))
    call_command("import_predictions", str(predictions))
    call_command("import_judgments", str(judgments))  # idempotent: nothing changes
    capsys.readouterr()
    call_command("report", "pw")
    replayed = json.loads(capsys.readouterr().out)

    from annotate.models import Study
    Study.objects.filter(slug="pw").delete()
    expected = build_report(fetch_report_input(pairwise_study()))
    assert replayed == json.loads(json.dumps(expected))
    assert replayed["alignment"]["rougeL"]["alignment"] == pytest.approx(2.5 / 3)
    assert replayed["annotators"]["ann1"]["gold_accuracy"] == 1.0


def test_report_out_file_formats(tmp_path):
    pairwise_study()
    out = tmp_path / "r.html"
    call_command("report", "pw", "--format", "html", "--out", str(out))
    assert parse(out.read_text()).figures["fig-position-bias"] is True
    out = tmp_path / "r.csv"
    call_command("report", "pw", "--format", "csv", "--out", str(out))
    assert out.read_text().startswith("item_id,question,is_gold,n_judgments,majority")
