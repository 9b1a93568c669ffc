"""Generation options (stop strings, postprocess) applied the same way in both backends,
and the defects around them: a model server that is down fails `generate rag` without
writing a batch (D1), an empty batch is refused by the importer (D1), a LaMP file passed
as JSONL gets a hint (D10)."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotate import services
from annotate.models import Study
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from models_runtime.backends import registry, transformers_backend
from models_runtime.backends.base import SamplingParams, cut_at_stop, extract_title, first_line
from models_runtime.models import Job
from tests.factories import header, jsonl

from .test_openai_backend import backend, server  # noqa: F401 - the fake OpenAI server fixture


def test_text_helpers_by_hand():
    assert cut_at_stop("a title\nmore text. Then", ["\n", "."]) == "a title"
    assert cut_at_stop("no stop here", ["\n"]) == "no stop here"
    assert first_line("\n\n  first one \nsecond") == "first one"
    assert extract_title('Title: "Deep nets for all"\nExplanation: ...') == "Deep nets for all"
    assert extract_title("**Headline:** Rain floods the old market") == "Rain floods the old market"
    assert extract_title("  'Quoted'  ") == "Quoted"
    assert extract_title("The Headline: Headline: Rain floods the old market") == "Rain floods the old market"
    assert extract_title("**The headline:** **Title:** Bike lanes") == "Bike lanes"
    assert extract_title("Subtitle: a second life") == "Subtitle: a second life"  # not a label


def test_openai_backend_sends_stop_and_cuts_and_postprocesses(server):  # noqa: F811
    b = backend(server)
    out = b.generate(["one two\nthree"], SamplingParams(max_new_tokens=5, stop=("two",)))
    assert out[0][0].text == "echo: one"
    assert server["requests"][0][1]["stop"] == ["two"]
    out = b.generate(["one two\nthree"], SamplingParams(max_new_tokens=5, postprocess="first_line"))
    assert out[0][0].text == "echo: one two"
    assert "stop" not in server["requests"][1][1]
    with pytest.raises(ValueError, match="unknown postprocess 'upper'"):
        b.generate(["x"], SamplingParams(postprocess="upper"))


@pytest.mark.model
@pytest.mark.slow
def test_transformers_backend_applies_stop_and_postprocess_and_loads_lazily(settings, tmp_path, monkeypatch):
    settings.HUMEVAL_GENERATION_CACHE = str(tmp_path / "cache.sqlite3")
    loads = []
    real = transformers_backend._load
    monkeypatch.setattr(transformers_backend, "_load", lambda spec, name: loads.append(name) or real(spec, name))
    registry.clear()
    transformers_backend._loaded.clear()
    try:
        b = registry.get_backend("smollm2", device="cpu")
        assert loads == []  # creating the backend loads nothing
        prompt = ["Write two short lines about the sea."]
        raw = b.generate(prompt, SamplingParams(max_new_tokens=12))[0][0].text
        assert loads == ["smollm2"]
        stop = raw.split()[1]
        cut = b.generate(prompt, SamplingParams(max_new_tokens=12, stop=(stop,)))[0][0].text
        assert cut == raw[:raw.find(stop)].strip()
        line = b.generate(prompt, SamplingParams(max_new_tokens=12, postprocess="first_line"))[0][0].text
        assert line == raw.splitlines()[0].strip()
        # A new process (backends forgotten) whose prompts are all cached loads nothing.
        registry.clear()
        transformers_backend._loaded.clear()
        again = registry.get_backend("smollm2", device="cpu").generate(prompt, SamplingParams(max_new_tokens=12))
        assert again[0][0].text == raw and again[0][0].cached
        assert loads == ["smollm2"]
    finally:
        registry.clear()
        transformers_backend._loaded.clear()


LAMP_RECORD = {"id": "r1", "input": "Generate a headline for the following article: rain", "output": "Rain",
               "profile": [{"id": "p1", "title": "Sun", "text": "it shone"}]}


@pytest.mark.django_db
def test_generate_rag_with_the_model_server_down_fails_and_writes_nothing(settings, tmp_path):
    settings.HUMEVAL_MODELS_JSON = json.dumps({"down": {
        "backend": "openai", "base_url": "http://127.0.0.1:9/v1", "max_retries": 0, "timeout_seconds": 2}})
    settings.HUMEVAL_GENERATION_CACHE = ""
    settings.CELERY_BROKER_URL = ""
    registry.clear()
    records = tmp_path / "in.jsonl"
    records.write_text(json.dumps(LAMP_RECORD) + "\n")
    out = tmp_path / "batch.jsonl"
    with pytest.raises(CommandError, match=r"^job \d+ \(rag\) failed: OpenAIError: model down: http://127.0.0.1:9/v1/chat"
                                           r"/completions gave up after 1 attempts \(ConnectError.*\(re-running the "
                                           r"same command resumes it\)$"):
        call_command("generate", "rag", "--input", str(records), "--models", "down", "--retriever", "bm25",
                     "--k", "1", "--out", str(out), "--slug", "down", stdout=StringIO(), stderr=StringIO())
    assert not out.exists() and not (tmp_path / "batch.jsonl.part").exists()
    job = Job.objects.get(kind="rag")
    assert (job.state, job.done, job.total) == ("failed", 0, 1)
    registry.clear()


@pytest.mark.django_db
def test_an_empty_batch_is_refused_and_creates_no_study(tmp_path):
    data = jsonl(header("empty-one", "pairwise_alignment", title="Empty"))
    with pytest.raises(BatchInvalid) as err:
        import_batch_bytes(data, allow_empty=False)
    assert err.value.errors == ["line 1: the batch has no items: nothing to import (no study is created)"]
    path = tmp_path / "empty.jsonl"
    path.write_bytes(data)
    err_out = StringIO()
    with pytest.raises(CommandError, match="1 error"):
        call_command("import_batch", str(path), stdout=StringIO(), stderr=err_out)
    assert "line 1: the batch has no items" in err_out.getvalue()
    with pytest.raises(services.BatchRefused, match="the batch has no items"):
        services.import_batch_file(str(path))
    assert not Study.objects.filter(slug="empty-one").exists()


@pytest.mark.django_db
def test_a_lamp_file_given_as_jsonl_gets_a_hint(tmp_path, settings):
    settings.CELERY_BROKER_URL = ""
    questions = tmp_path / "dev_questions.json"
    questions.write_text(json.dumps([{"id": str(n), "input": "x", "profile": []} for n in range(30)], indent=1))
    with pytest.raises(CommandError) as err:
        call_command("generate", "rag", "--input", str(questions), "--models", "smollm2", "--retriever", "bm25",
                     "--k", "1", "--out", str(tmp_path / "o.jsonl"), "--slug", "s", stdout=StringIO())
    message = str(err.value)
    assert "this is a LaMP file" in message and '"format": "lamp"' in message
    assert "not valid JSON" not in message


@pytest.mark.django_db
def test_generate_rag_takes_the_plans_options_and_leaves_out_empty_profiles_and_identical_pairs(fake_llm, tmp_path):
    """--temperature, --stop, --postprocess as a plan's generation; a record with an empty
    profile (with and without the profile would be one prompt) and one whose two answers
    are the same are left out and listed, never put in the batch."""
    ask = "Generate a headline for the following article: "
    records = [
        {"id": "a", "input": ask + "bike lanes open", "output": "Bike lanes", "profile": [
            {"id": "a1", "title": "Lanes", "text": "bike lanes planned"}]},
        {"id": "b", "input": ask + "no history", "output": "None", "profile": []},
        {"id": "c", "input": ask + "same either way", "output": "Same", "profile": [
            {"id": "c1", "title": "Same", "text": "same either way"}]},
    ]
    fake_llm.answer = lambda prompt: ("Title: Same answer\nmore" if "same either way" in prompt
                                      else f"The Headline: Headline: {len(prompt)} chars. Extra")
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = StringIO()
    call_command("generate", "rag", "--input", str(path), "--models", "fake", "--retriever", "bm25", "--k", "1",
                 "--out", str(tmp_path / "batch.jsonl"), "--slug", "opts", "--temperature", "0.5", "--stop", ".",
                 "--postprocess", "title", stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue())["result"]
    assert (result["n_items"], result["failed"]) == (1, 0)
    assert result["left_out"] == [{"id": "b", "why": "empty profile (the system retrieves)"},
                                  {"id": "c", "why": "identical candidates"}]
    header_line, item = [json.loads(line) for line in (tmp_path / "batch.jsonl").read_text().splitlines()]
    sent = sorted((p for p in fake_llm.prompts if "bike lanes open" in p), key=len, reverse=True)
    assert [c["text"] for c in item["candidates"]] == [f"{len(p)} chars" for p in sent]  # with the profile first
    job = Job.objects.get(kind="rag")
    assert (job.params["temperature"], job.params["stop"], job.params["postprocess"]) == (0.5, ["."], "title")
    assert len(fake_llm.prompts) == 4  # a and c, with and without the profile; b is never sent
