"""iCOPERNICUS prompt styles: budgets per part, headline extraction, the survey batch and
the EGISES-JSD table (scripted backend; the real model is in test_model_steps)."""
import csv
import json

import pytest
from django.core.management import CommandError, call_command

from models_runtime.icopernicus import (
    STYLES,
    WhitespaceTokenizer,
    allocate,
    build_prompt,
    extract_headline,
    run_icopernicus,
)
from runtime_judges.scripted import ScriptedBackend

WS = WhitespaceTokenizer()
U1 = {"history": ["Sports news today", "Cup final tonight"], "reference": "Local team celebrates title",
      "examples": [{"article": "The club won the league.", "headline": "Team wins cup"},
                   {"article": "A striker signed.", "headline": "Striker joins club"}]}
U2 = {"history": ["Stock markets fall"], "reference": "Interest rates climb again",
      "examples": [{"article": "The bank moved rates.", "headline": "Banks raise rates"}]}
DOC = {"doc_id": "d1", "title": "Busy week", "text": "The team won the title while the central bank raised rates.",
       "users": {"u1": U1, "u2": U2}}


def test_allocate_water_filling():
    """[10, 100] in 50: the short part keeps 10, the long one gets the other 40.
    [30, 30, 5] in 40: 5 kept, 35 left -> 17 each (floor), total 39 <= 40."""
    assert allocate([10, 100], 50) == [10, 40]
    assert allocate([30, 30, 5], 40) == [17, 17, 5]
    assert allocate([3, 4], 100) == [3, 4]
    assert allocate([5, 5], -3) == [0, 0]


def test_budget_per_part_whitespace_tokens():
    """0-shot has two parts: the history "Sports news today; Cup final tonight" (6 tokens)
    and the document "Busy week The team ... rates." (13 tokens). With the fixed text f
    tokens and budget f + 10, water-filling gives history min(6, 5) = 5 and document 5."""
    fixed = build_prompt("0-shot", DOC, U1, U2, WS, budget=10_000)[1]["fixed"]
    text, parts = build_prompt("0-shot", DOC, U1, U2, WS, budget=fixed + 10)
    assert parts == {"user.history": 5, "document": 5, "fixed": fixed}
    assert len(text.split()) == fixed + 10
    assert "Sports news today; Cup final\n" in text and "Article: Busy week The team won\n" in text
    # A generous budget keeps everything.
    _, full = build_prompt("0-shot", DOC, U1, U2, WS, budget=10_000)
    assert (full["user.history"], full["document"]) == (6, 13)


@pytest.mark.parametrize("style", STYLES)
def test_every_style_fits_the_budget(style):
    text, parts = build_prompt(style, DOC, U1, U2, WS, budget=90)
    assert len(text.split()) == sum(parts.values()) <= 90
    assert ("Reader 2" in text) == style.startswith("C-")
    assert ("clicked" in text) == (style.endswith("hist") and "w/o" not in style or style.endswith("0-shot"))
    examples = text.count("example 1 headline") + text.count("example 2 headline")
    assert examples == {"0-shot": 0, "2-shot w/o hist": 2, "2-shot w/ hist": 2, "C-0-shot": 0,
                        "C-2-shot w/o hist": 2, "C-2-shot w/ hist": 2}[style]


def test_unknown_style_and_too_small_budget():
    with pytest.raises(ValueError, match="unknown prompt style"):
        build_prompt("3-shot", DOC, U1, U2, WS)
    with pytest.raises(ValueError, match="too small for style 'C-2-shot w/ hist'"):
        build_prompt("C-2-shot w/ hist", DOC, U1, U2, WS, budget=60)


@pytest.mark.parametrize("raw, headline", [
    ('**Headline:** "Team wins the cup"', "Team wins the cup"),
    ("Sure! Here is a headline for Reader 1:\nHeadline: Rates rise", "Rates rise"),
    ("Team wins cup\nThis headline suits the reader.", "Team wins cup"),
    ("# Banks  raise rates", "Banks raise rates"),
    ("Headline:\n“Quiet week”", "Quiet week"),
    ("", ""),
    # D11: the reader names of the contrastive prompts are not part of the headline.
    ("Reader 1: Rain floods the market", "Rain floods the market"),
    ("For Reader 2 - Headline: Stocks fall", "Stocks fall"),
    ('Reader 1:\n"Quiet week"', "Quiet week"),
    ("**Headline:** Reader 1: Big win", "Big win"),
])
def test_extract_headline(raw, headline):
    assert extract_headline(raw) == headline


def script(text, params, j):
    """Plain styles answer the target reader's own reference; contrastive styles answer one
    fixed headline for every reader. The target is whoever's markers appear first."""
    markers = {"Sports news today": U1, "Team wins cup": U1, "Stock markets fall": U2, "Banks raise rates": U2}
    first = min((text.find(m), u) for m, u in markers.items() if m in text)[1]
    if "Reader 2" in text:
        return "Big news headline"
    return f'**Headline:** "{first["reference"]}"'


def test_run_icopernicus_batch_and_table(tmp_path):
    """1 document, 2 readers, 6 styles -> 12 prompts in one call. Plain styles reproduce the
    references, so X = Y and prop = 1: EGISES = 1 - 1 = 0. Contrastive styles give both
    readers the same headline: sigma_model = 0, so Y = 0 while X = soft * sigma_ref = 1 * 1
    (two readers: soft = 1; the references share no word: JSD 1), prop = 1e-5 / (1 + 1e-5)
    and EGISES = 1 - 1e-5 / 1.00001 = 1 / 1.00001."""
    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps(DOC) + "\n")
    backend = ScriptedBackend(script)
    result = run_icopernicus(str(source), "smollm2", str(tmp_path / "b.jsonl"), str(tmp_path / "t.csv"), "ico",
                             backends={"smollm2": backend})
    assert [n for n, _ in backend.calls] == [12]
    assert (result["documents"], result["generations"], result["items"], result["errors"]) == (1, 12, 1, [])
    header, item = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert header["study"]["kind"] == "similarity_survey" and header["study"]["slug"] == "ico"
    assert item["users"] == ["u1", "u2"] and item["document"] == {"id": "d1", "text": DOC["text"], "title": "Busy week"}
    assert item["pairs"][0] == {"id": "reference", "source": "reference", "texts": [U1["reference"], U2["reference"]]}
    assert [(p["id"], p["prompt_style"], p["texts"]) for p in item["pairs"][1:]] == [
        ("smollm2-c-0-shot", "C-0-shot", ["Big news headline"] * 2),
        ("smollm2-c-2-shot-w-o-hist", "C-2-shot w/o hist", ["Big news headline"] * 2),
        ("smollm2-c-2-shot-w-hist", "C-2-shot w/ hist", ["Big news headline"] * 2)]
    rows = list(csv.reader((tmp_path / "t.csv").open()))
    assert rows[0] == ["model", *STYLES]
    values = dict(zip(STYLES, map(float, rows[1][1:])))
    for style in STYLES:
        assert values[style] == pytest.approx(1 / 1.00001 if style.startswith("C-") else 0.0, abs=1e-12)


@pytest.mark.django_db
def test_outputs_feed_import_batch_and_paradoxes(tmp_path, capsys):
    """The batch imports as a similarity_survey study; the table is what `paradoxes` reads.
    PX-3 (C-0-shot vs 0-shot): EGISES 0.99999 >= 0 -> the paradox holds."""
    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps(DOC) + "\n")
    run_icopernicus(str(source), ["smollm2"], str(tmp_path / "b.jsonl"), str(tmp_path / "t.csv"), "ico-survey",
                    backends={"smollm2": ScriptedBackend(script)})
    call_command("import_batch", str(tmp_path / "b.jsonl"))
    assert json.loads(capsys.readouterr().out)["created"] == 1
    call_command("paradoxes", str(tmp_path / "t.csv"))
    probes = json.loads(capsys.readouterr().out)["smollm2"]["probes"]
    assert probes["PX-3"] is True and probes["PX-1"] is True  # 2-shot w/o hist 0 >= 0-shot 0


def test_bad_input_lists_every_line(tmp_path):
    source = tmp_path / "docs.jsonl"
    source.write_text('{"doc_id": "a"}\nnot json\n' + json.dumps(dict(DOC, users={"u1": U1})) + "\n")
    with pytest.raises(ValueError) as err:
        run_icopernicus(str(source), "m", str(tmp_path / "b"), str(tmp_path / "t"), "s",
                        backends={"m": ScriptedBackend([])})
    assert str(err.value).splitlines() == ["line 1: missing text, users", "line 2: not JSON (Expecting value)",
                                           "line 3: needs at least 2 users"]


@pytest.fixture
def two_models(settings, monkeypatch):
    """`smollm2` and `other` (declared, never contacted): both answer from `script`; the
    first call for `other` can be made to die like a killed process."""
    settings.CELERY_BROKER_URL = ""
    settings.HUMEVAL_MODELS_JSON = json.dumps({"other": {"backend": "openai", "base_url": "http://127.0.0.1:9/v1"}})
    backends = {"smollm2": ScriptedBackend(script), "other": ScriptedBackend(script)}
    crash = {"other": False}

    def get_backend(name, device=None):
        if crash.get(name):
            crash[name] = False
            raise KeyboardInterrupt("killed")
        return backends[name]

    monkeypatch.setattr("models_runtime.backends.registry.get_backend", get_backend)
    return backends, crash


@pytest.mark.django_db
def test_generate_icopernicus_runs_a_job_that_resumes(tmp_path, two_models):
    """The command is a job with one item per model. Killed while `other` generates, the
    same command resumes it: smollm2 is not asked again, and the files and the printed
    document are those of run_icopernicus on the same input."""
    from io import StringIO

    from models_runtime.job_support.kinds import file_sha256
    from models_runtime.models import Job

    backends, crash = two_models
    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps(DOC) + "\n")
    direct = run_icopernicus(str(source), "smollm2,other", str(tmp_path / "direct.jsonl"), str(tmp_path / "direct.csv"),
                             "ico", backends={m: ScriptedBackend(script) for m in ("smollm2", "other")})
    args = ["generate", "icopernicus", "--input", str(source), "--models", "smollm2,other", "--out-batch",
            str(tmp_path / "b.jsonl"), "--out-table", str(tmp_path / "t.csv"), "--slug", "ico", "--device", "cpu"]
    crash["other"] = True
    with pytest.raises(CommandError, match=r"^interrupted: job \d+ \(icopernicus\) stopped at 1/2 items; re-running "
                                           "the same command resumes it$"):
        call_command(*args, stdout=StringIO(), stderr=StringIO())
    job = Job.objects.get()
    assert (job.state, job.done, job.total) == ("cancelled", 1, 2)  # Ctrl-C: stopped cleanly, never left running
    assert job.params == {"input": str(source), "input_sha256": file_sha256(str(source)),
                          "models": ["smollm2", "other"],
                          "out_batch": str(tmp_path / "b.jsonl"), "out_table": str(tmp_path / "t.csv"), "slug": "ico",
                          "device": "cpu", "budget": 1024, "max_new_tokens": 32, "chunk_size": 1,
                          "server_paths": True}  # set by the command: only commands name server paths
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    assert err.getvalue().startswith(f"resuming job {job.pk} (icopernicus, 1/2 items done)")
    assert [n for n, _ in backends["smollm2"].calls] == [12] and [n for n, _ in backends["other"].calls] == [12]
    assert json.loads(out.getvalue()) == json.loads(json.dumps(direct))
    assert (tmp_path / "b.jsonl").read_text() == (tmp_path / "direct.jsonl").read_text()
    assert (tmp_path / "t.csv").read_text() == (tmp_path / "direct.csv").read_text()
    job.refresh_from_db()
    assert (job.state, job.done, job.attempts) == ("done", 2, 2)
