"""Issue 36: from study to paper. The simulated 4-system demo study, its datasheet (Markdown,
LaTeX that compiles, JSON equal to the report), its data release read back with the
consumers' own libraries (datasets, pyarrow) and by import_study, `import_batch --from-hf`,
and privacy: no username, e-mail or platform id in any export."""
import io
import json
import subprocess
from collections import Counter
from pathlib import Path

import choix
import numpy as np
import pyarrow.parquet as pq
import pytest
from datasets import Dataset, load_from_disk
from django.core.management import CommandError, call_command
from django.test import Client

from annotate.models import Item, Judgment, Participant, Prediction, Study
from annotate.reports.data import study_report
from annotate.reports.datasheet import datasheet, number, render_datasheet
from annotate.studies.demo_simulated import N_ANNOTATORS, N_ITEMS, SLUG, STRENGTHS, create_simulated_study
from tests.factories import make_user

pytestmark = pytest.mark.django_db

HOSTILE = ["mallory.SECRETNAME@evil.example", "eve<script>SECRETNAME2"]
PLATFORM_IDS = ["PIDSECRET5f9c0a", "STUDYSECRET77", "SESSIONSECRET99"]


@pytest.fixture
def study():
    study, created = create_simulated_study()
    assert created == N_ITEMS * 6
    return study


def add_hostile_annotators(study):
    """Two annotators with hostile usernames (one a platform participant with platform ids)
    answer the first item; one prediction is per annotator (it carries a username)."""
    item = study.items.order_by("position").first()
    for index, name in enumerate(HOSTILE):
        user = make_user(name, email=f"{name.split('<')[0]}@mail.example")
        Judgment.objects.create(study=study, item=item, annotator=user, question="choice", value="profile-rag",
                                shown_order="profile-rag|bm25-k2", seconds=12.5 + index, comment="ok")
    Participant.objects.create(study=study, user=make_user("prolific:" + PLATFORM_IDS[0]), platform="prolific",
                               external_id=PLATFORM_IDS[0], platform_study_id=PLATFORM_IDS[1],
                               platform_session_id=PLATFORM_IDS[2])
    Prediction.objects.create(study=study, item=item, evaluator="judge", annotator=HOSTILE[0], question="choice",
                              value="profile-rag")


def all_bytes(directory):
    return b"".join(p.read_bytes() for p in sorted(Path(directory).rglob("*")) if p.is_file())


def test_demo_simulated_is_idempotent_labelled_and_ranked_as_choix_does(settings):
    """`demo --simulated` adds the study once; its title says SIMULATED; the report's
    Bradley-Terry strengths equal choix's on the same judgments (an independent fit), and the
    ranking recovers the simulated order."""
    settings.DEBUG = True
    out = io.StringIO()
    call_command("demo", "--simulated", stdout=out)
    assert f"{SLUG}" in out.getvalue() and "SIMULATED judgments: 144 new (144 in all)" in out.getvalue()
    call_command("demo", "--simulated", stdout=io.StringIO())
    study = Study.objects.get(slug=SLUG)
    assert "SIMULATED" in study.title and study.judgments.count() == 144
    assert len(set(study.judgments.values_list("annotator", flat=True))) == N_ANNOTATORS
    report, _ = study_report(study)
    systems = sorted(STRENGTHS)
    index = {s: i for i, s in enumerate(systems)}
    comparisons = []
    for shown, value in study.judgments.values_list("shown_order", "value"):
        a, b = shown.split("|")
        loser = b if value == a else a
        comparisons.append((index[value], index[loser]))
    expected = choix.opt_pairwise(len(systems), comparisons, alpha=0)
    expected -= expected.mean()
    got = np.array([report["ranking"][s]["strength"] for s in systems])
    assert np.allclose(got, expected, atol=1e-6)
    order = sorted(systems, key=lambda s: report["ranking"][s]["rank"])
    assert order == ["profile-rag", "bm25-k2", "no-profile", "random-profile"]
    assert report["agreement"]["choice"]["n_units"] == 48  # 24 items x 2 shown pairs, 3 votes each


def test_datasheet_json_numbers_are_the_reports(study):
    report, _ = study_report(study)
    sheet = json.loads(render_datasheet(datasheet(study, pay="GBP 9.00/hour"), "json"))
    assert sheet["design"]["n_items"] == report["n_items"] == N_ITEMS
    assert sheet["design"]["systems"] == sorted(STRENGTHS)
    assert sheet["rater_pool"]["pay"] == "GBP 9.00/hour"
    assert sheet["rater_pool"]["n_annotators"] == N_ANNOTATORS
    agreement = sheet["agreement"][0]
    assert agreement["krippendorff_alpha"] == report["agreement"]["choice"]["krippendorff_alpha"]
    assert agreement["ci95"] == report["agreement"]["choice"]["krippendorff_alpha_ci95"]
    ranking = next(t for t in sheet["results"] if t["key"] == "ranking")
    for system, rank, rank_ci, strength, ci, win_rate, win_ci, n in ranking["rows"]:
        entry, human = report["ranking"][system], report["systems"][system]["human"]
        assert (rank, rank_ci, strength, ci) == (entry["rank"], entry["rank_ci95"], entry["strength"], entry["ci95"])
        assert (win_rate, win_ci, n) == (human["win_rate"], human["ci95"], human["n"])
    medians = sorted(a["median_seconds"] for a in report["annotators"].values())
    assert sheet["rater_pool"]["median_seconds_per_item"] == (medians[5] + medians[6]) / 2


def test_datasheet_latex_compiles_and_prints_the_reports_numbers(study, tmp_path):
    report, _ = study_report(study)
    tex = render_datasheet(datasheet(study), "tex")
    assert r"\usepackage{booktabs}" in tex and r"\toprule" in tex
    for system, entry in report["ranking"].items():
        row = next(line for line in tex.splitlines() if line.startswith(system.replace("-", "-") + " &"))
        assert f"{entry['strength']:.3f}" in row and number(entry["ci95"]) in row
    alpha = report["agreement"]["choice"]["krippendorff_alpha"]
    assert f"& {alpha:.3f} &" in tex
    (tmp_path / "methods.tex").write_text(tex, encoding="utf-8")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "methods.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "methods.pdf").stat().st_size > 1000


def test_hostile_titles_are_escaped_in_latex_and_the_methods_page(study, plain_http):
    study.title = r"50% of {users} & $5 \o/ <script>alert(1)</script>"
    study.save()
    tex = render_datasheet(datasheet(study), "tex")
    assert r"50\% of \{users\} \& \$5 \textbackslash{}o/" in tex
    researcher = make_user("res1", role="researchers")
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/studies/{SLUG}/methods/")
    assert page.status_code == 200
    assert b"<script>alert(1)" not in page.content and b"System strengths" in page.content
    download = client.get(f"/studies/{SLUG}/methods/?format=tex")
    assert download["Content-Disposition"] == f'attachment; filename="{SLUG}-methods.tex"'
    outsider = make_user("ann1", role="annotators")
    client.force_login(outsider)
    assert client.get(f"/studies/{SLUG}/methods/").status_code in (403, 404)
    assert client.get("/studies/no-such-study/methods/").status_code == 404


@pytest.mark.parametrize("fmt", ["hf", "parquet"])
def test_release_reads_back_with_the_consumers_library_and_leaks_no_identity(study, tmp_path, fmt):
    add_hostile_annotators(study)
    out = tmp_path / "release"
    call_command("export_study", SLUG, "--format", fmt, "--out", str(out), stdout=io.StringIO())
    if fmt == "hf":
        loaded = load_from_disk(str(out))
        tables = {name: loaded[name].to_list() for name in ("items", "judgments", "predictions")}
    else:
        tables = {name: pq.read_table(out / f"{name}.parquet").to_pylist()
                  for name in ("items", "judgments", "predictions")}
    assert len(tables["items"]) == N_ITEMS
    assert len(tables["judgments"]) == 144 + 2
    report, _ = study_report(study)
    counts = Counter(row["value"] for row in tables["judgments"])
    assert {k: v for k, v in counts.items()} == report["value_counts"]["choice"]
    assert {row["annotator"] for row in tables["judgments"]} == {f"annotator-{n:03d}" for n in range(1, 15)}
    first = json.loads(tables["items"][0]["data"])
    assert [c["id"] for c in first["candidates"]] == list(STRENGTHS)  # real system ids are kept
    assert {row["annotator"] for row in tables["predictions"]} == {"", "annotator-013"}
    seconds = sorted(row["seconds"] for row in tables["judgments"] if row["annotator"] in ("annotator-013",
                                                                                           "annotator-014"))
    assert seconds == [12.5, 13.5]
    blob = all_bytes(out)
    for secret in ["SECRETNAME", "mail.example", "evil.example", *PLATFORM_IDS, "prolific:"]:
        assert secret.encode() not in blob, secret
    assert b"sim-annotator" not in blob
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\npretty_name:") and "System strengths" in card


def test_release_imports_back_as_the_same_study(study, tmp_path):
    before, _ = study_report(study)
    out = tmp_path / "release"
    call_command("export_study", SLUG, "--format", "hf", "--out", str(out), stdout=io.StringIO())
    with pytest.raises(CommandError, match="already exists"):
        call_command("import_study", str(out), stdout=io.StringIO())
    result = io.StringIO()
    call_command("import_study", str(out), "--replace", stdout=result)
    # the audit log is not released; the two doors the release goes through each log one import
    assert json.loads(result.getvalue()) == {"study": SLUG, "items": 24, "judgments": 144, "predictions": 96,
                                             "audit": 2}
    after, _ = study_report(Study.objects.get(slug=SLUG))
    for key in ("ranking", "agreement", "alignment", "systems", "n_judgments", "complete_items"):
        assert after[key] == before[key], key
    assert Item.objects.get(study__slug=SLUG, item_id="sim-01").n_completed == 6


def test_export_refuses_a_non_empty_directory(study, tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(CommandError, match="is not empty"):
        call_command("export_study", SLUG, "--format", "parquet", "--out", str(tmp_path), stdout=io.StringIO())
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


HEADER = {"study": {"slug": "from-hf", "kind": "pairwise_alignment", "title": "From a dataset"}}


def hf_rows(n, bad_row=None):
    rows = []
    for i in range(n):
        row = {"item_id": f"hf-{i}", "input": f"request {i}", "reference": f"mine {i}",
               "candidates": [{"id": "a", "text": f"A {i}"}, {"id": "b", "text": f"B {i}"}],
               "gold": "a" if i == 0 else None}
        if i == bad_row:
            row["candidates"] = [{"id": "a", "text": "only one"}]
        rows.append(row)
    return rows


def test_import_batch_from_hf(tmp_path):
    Dataset.from_list(hf_rows(5)).save_to_disk(str(tmp_path / "ds"))
    header = tmp_path / "header.json"
    header.write_text(json.dumps(HEADER))
    out = io.StringIO()
    call_command("import_batch", str(header), "--from-hf", str(tmp_path / "ds"), stdout=out)
    assert json.loads(out.getvalue()) == {"study": "from-hf", "created": 5, "skipped": 0}
    items = Item.objects.filter(study__slug="from-hf").order_by("position")
    assert [i.item_id for i in items] == [f"hf-{i}" for i in range(5)]
    assert [i.is_gold for i in items] == [True, False, False, False, False]  # None = no gold, not a gold of None
    again = io.StringIO()
    call_command("import_batch", str(header), "--from-hf", str(tmp_path / "ds"), stdout=again)
    assert json.loads(again.getvalue()) == {"study": "from-hf", "created": 0, "skipped": 5}


def test_import_batch_from_hf_refuses_a_bad_dataset_whole(tmp_path):
    Dataset.from_list(hf_rows(4, bad_row=2)).save_to_disk(str(tmp_path / "ds"))
    header = tmp_path / "header.json"
    header.write_text(json.dumps(HEADER))
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was written"):
        call_command("import_batch", str(header), "--from-hf", str(tmp_path / "ds"), stdout=io.StringIO(),
                     stderr=err)
    assert err.getvalue().startswith("line 4: ")  # dataset row 2 = line 4 (line 1 is the header)
    assert not Study.objects.filter(slug="from-hf").exists()
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was written"):
        call_command("import_batch", str(header), "--from-hf", str(tmp_path / "nothing"), stdout=io.StringIO(),
                     stderr=err)
    assert "not a dataset saved with save_to_disk" in err.getvalue()
