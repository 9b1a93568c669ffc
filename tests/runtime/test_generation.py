"""Real generation with the embedded SmolLM2 (no fake): batching with left padding, the
generation cache on a second run, and `manage.py generate rag` end to end (its batch file
imports as a pairwise_alignment study)."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotate.studies.importing import import_batch_path
from models_runtime.backends.base import SamplingParams
from models_runtime.backends.config import ModelNotAvailable
from models_runtime.backends.registry import get_backend
from models_runtime.models import JobItem
from models_runtime.rag import disagreement, pick_discriminative

PROMPTS = ["What is the capital of France?", "Name a colour of the sky.", "Say hello in Spanish, please, in one word."]
GREEDY8 = SamplingParams(max_new_tokens=8)


@pytest.fixture
def cache_file(settings, tmp_path):
    settings.HUMEVAL_GENERATION_CACHE = tmp_path / "generations.sqlite3"
    settings.CELERY_BROKER_URL = ""
    return settings.HUMEVAL_GENERATION_CACHE


@pytest.mark.model
@pytest.mark.slow
def test_batched_generation_matches_one_by_one_and_second_run_hits_cache(cache_file):
    backend = get_backend("smollm2", device="cpu")
    assert backend.tokenizer.padding_side == "left" and backend.tokenizer.chat_template
    batched = backend.generate(PROMPTS, GREEDY8)  # one left-padded batch of 3
    assert [len(g) for g in batched] == [1, 1, 1]
    for (gen,) in batched:
        assert gen.text.strip() and 1 <= gen.tokens_out <= 8 and gen.tokens_in > 10 and not gen.cached
    assert "paris" in batched[0][0].text.lower()
    # Greedy decoding of a left-padded batch gives each prompt's own greedy output.
    backend.batch_size = 1
    try:
        alone = [backend._generate_uncached([p], GREEDY8)[0][0].text for p in PROMPTS]
    finally:
        backend.batch_size = 8
    assert alone == [g[0].text for g in batched]
    # Second run: every prompt answered from the cache, nothing generated.
    calls_before, seconds_before = backend.stats.cache_hits, backend.stats.seconds
    again = backend.generate(PROMPTS, GREEDY8)
    assert [g[0].text for g in again] == [g[0].text for g in batched]
    assert all(g[0].cached for g in again)
    assert backend.stats.cache_hits - calls_before == 3 and backend.stats.seconds == seconds_before
    from models_runtime.backends.cache import GenerationCache
    assert len(GenerationCache(cache_file)) == 3


LAMP = [
    {"id": "r1", "input": "Generate a headline for this article: the city opened a new bike lane downtown",
     "output": "Downtown gets its first bike lane",
     "profile": [{"id": "p1", "title": "Bakery wins prize", "text": "a small bakery won the national bread prize",
                  "date": "2020-01-01"},
                 {"id": "p2", "title": "New bike lane plans", "text": "the city council discussed a bike lane",
                  "date": "2019-01-01"}]},
    {"id": "r2", "input": "Generate a headline for this article: heavy rain floods the old market",
     "output": "Rain floods old market",
     "profile": [{"id": "p3", "title": "Storm warning", "text": "heavy rain expected this week", "date": "2021-05-05"},
                 {"id": "p4", "title": "Market reopens", "text": "the old market reopens after repairs",
                  "date": "2022-05-05"}]},
]


def write_lamp(tmp_path, records=LAMP):
    path = tmp_path / "lamp.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.django_db
def test_generate_rag_writes_an_importable_batch_and_reruns_from_cache(cache_file, tmp_path):
    """BM25 (rank_bm25.BM25Okapi, LaMP's), k = 1, on LaMP-4's corpus (title + text; date not
    searched) of two-item profiles: a word in one item of two has idf ln(1.5) - ln(1.5) = 0,
    a word in both a negative idf floored at 0.25 x the mean. r1: only "the" and "a" count,
    in both items, both 10 tokens long: a tie. r2: every shared word is in one item: all 0.
    LaMP's np.argsort(scores)[::-1] breaks both ties towards the later item: p2, p4. The
    answers' prompts are kept with them in the job's checkpoints."""
    out = tmp_path / "batch.jsonl"
    args = ["rag", "--input", str(write_lamp(tmp_path)), "--models", "smollm2", "--retriever", "bm25", "--k", "1",
            "--out", str(out), "--slug", "lamp-test", "--max-new-tokens", "8", "--device", "cpu"]
    stdout = StringIO()
    call_command("generate", *args, stdout=stdout, stderr=StringIO())
    report = json.loads(stdout.getvalue())
    assert report["state"] == "done" and report["result"]["n_items"] == 2
    assert report["progress"] == {"done": 2, "total": 2}
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["study"]["kind"] == "pairwise_alignment" and lines[0]["study"]["slug"] == "lamp-test"
    items = lines[1:]
    assert [i["item_id"] for i in items] == ["r1", "r2"]
    assert [i["reference"] for i in items] == ["Downtown gets its first bike lane", "Rain floods old market"]
    assert [[c["id"] for c in i["candidates"]] for i in items] == [["smollm2-bm25", "smollm2-noprofile"]] * 2
    assert [i["meta"]["retrieved"] for i in items] == [["p2"], ["p4"]]
    assert all(c["text"].strip() for i in items for c in i["candidates"])
    job_items = JobItem.objects.filter(job_id=report["job"])
    assert not any(c["cached"] for ji in job_items for c in ji.result["candidates"])
    first = job_items.get(key="r1").result["candidates"]
    assert [c["prompt"] for c in first] == [
        '"New bike lane plans" is the title for "the city council discussed a bike lane" . ' + LAMP[0]["input"],
        LAMP[0]["input"]]
    assert import_batch_path(out).created == 2
    # Same command again: every generation comes from the cache, and the file is identical.
    first = out.read_text()
    stdout = StringIO()
    call_command("generate", *args, "--import", stdout=stdout, stderr=StringIO())
    again = json.loads(stdout.getvalue())
    assert again["imported"] == {"study": "lamp-test", "created": 0, "skipped": 2}  # D8: --import
    assert all(c["cached"] for ji in JobItem.objects.filter(job_id=again["job"]) for c in ji.result["candidates"])
    assert out.read_text() == first


@pytest.mark.django_db
def test_generate_rag_reports_bad_input_and_unknown_models(cache_file, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "input": "x", "profile": []}\nnot json\n'
                   '{"id": "a", "input": "", "profile": {}, "output": "y"}\n')
    base = ["rag", "--retriever", "bm25", "--k", "1", "--out", str(tmp_path / "o.jsonl"), "--slug", "s"]
    with pytest.raises(CommandError) as err:
        call_command("generate", *base, "--input", str(bad), "--models", "smollm2", stdout=StringIO())
    message = str(err.value)
    for part in ['line 1: missing "output"', "line 2: not JSON", "line 3: duplicate id 'a'",
                 'line 3: missing "input" text', 'line 3: "profile" must be a list']:
        assert part in message
    good = write_lamp(tmp_path)
    with pytest.raises(CommandError, match="unknown model 'gpt-9': add it to HUMEVAL_MODELS"):
        call_command("generate", *base, "--input", str(good), "--models", "gpt-9", stdout=StringIO())
    with pytest.raises(CommandError, match="one or two different model names"):
        call_command("generate", *base, "--input", str(good), "--models", "smollm2,smollm2", stdout=StringIO())


def test_missing_model_path_names_the_setting(settings):
    settings.HUMEVAL_MODELS_JSON = json.dumps({"mine": {"backend": "transformers", "path": "/nonexistent/model"}})
    with pytest.raises(ModelNotAvailable, match=r"HUMEVAL_MODELS\['mine'\]\['path'\]"):
        get_backend("mine", device="cpu")
    settings.HUMEVAL_MODELS_JSON = "{not json"
    with pytest.raises(ModelNotAvailable, match="HUMEVAL_MODELS is not valid JSON"):
        get_backend("smollm2", device="cpu")
    settings.HUMEVAL_MODELS_JSON = json.dumps({"remote": {"backend": "openai"}})
    with pytest.raises(ModelNotAvailable, match=r"set HUMEVAL_MODELS\['remote'\]\['base_url'\]"):
        get_backend("remote")


def test_discriminative_selection_by_hand():
    """Three metrics. Item x: a wins on all three -> split (0, 3). Item y: a wins twice,
    b once -> (1, 2). Item z: a once, b once, one tie -> (1, 1). Keeping 2: the largest
    minority first (y and z have 1; z's majority is smaller, then y), output in input order."""
    def item(name, a, b):
        return {"item_id": name, "_split": disagreement(dict(zip("mnk", a)), dict(zip("mnk", b)))}

    items = [item("x", [3, 3, 3], [1, 1, 1]), item("y", [3, 3, 1], [1, 1, 3]), item("z", [3, 1, 2], [1, 3, 2])]
    assert [i["_split"] for i in items] == [(0, 3), (1, 2), (1, 1)]
    assert [i["item_id"] for i in pick_discriminative(items, 2)] == ["y", "z"]
    assert [i["item_id"] for i in pick_discriminative(items, 1)] == ["z"]
    assert disagreement({"m": None, "n": 1.0}, {"m": 2.0, "n": 0.5}) == (0, 1)  # None: no vote
