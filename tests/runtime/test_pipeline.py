"""Study plans end to end on LaMP's own file format with the embedded SmolLM2 (8 new
tokens, CPU): `manage.py pipeline` generates both systems' candidates, builds the batch
(leaving out a question with an empty profile), imports it and scores it; a re-run loads
no model and imports nothing twice; a plan whose every item is left out fails."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Item, Prediction, Study
from models_runtime.backends import registry, transformers_backend
from models_runtime.models import Job, JobItem

pytestmark = [pytest.mark.django_db]

ASK = "Generate a title for the following abstract of a paper: "
QUESTIONS = [
    {"id": "q1", "input": ASK + "we train neural networks on images",
     "profile": [{"id": "p1", "title": "Deep nets for vision", "abstract": "we train deep networks on images"},
                 {"id": "p2", "title": "Pruning trees", "abstract": "we prune decision trees"},
                 {"id": "p3", "title": "Graph walks", "abstract": "random walks on graphs"}]},
    {"id": "q2", "input": ASK + "random walks on large graphs",
     "profile": [{"id": "p4", "title": "Graph walks", "abstract": "random walks on graphs"},
                 {"id": "p5", "title": "Speech", "abstract": "we recognise speech"}]},
    {"id": "q3", "input": ASK + "a user with no papers", "profile": []},
]
OUTPUTS = {"task": "LaMP-5", "golds": [{"id": "q1", "output": "Neural nets for images"},
                                      {"id": "q2", "output": "Walking large graphs"},
                                      {"id": "q3", "output": "Nothing yet"}]}


def plan(slug="lamp5-pilot", systems=None, **extra):
    return {"study": {"slug": slug, "kind": "pairwise_alignment", "title": "LaMP-5 pilot",
                      "annotations_per_item": 3},
            "input": {"format": "lamp", "task": "LaMP-5", "questions": "dev_questions.json",
                      "outputs": "dev_outputs.json"},
            "systems": systems or [{"id": "bm25-k2", "model": "smollm2", "retriever": "bm25", "k": 2},
                                   {"id": "no-profile", "model": "smollm2", "retriever": "none"}],
            "generation": {"max_tokens": 8, "temperature": 0.0, "stop": ["\n"], "postprocess": "first_line"},
            "metrics": ["rougeL", "bleu"], "judges": [], "device": "cpu", **extra}


def write_plan(tmp_path, **kwargs):
    (tmp_path / "dev_questions.json").write_text(json.dumps(QUESTIONS))
    (tmp_path / "dev_outputs.json").write_text(json.dumps(OUTPUTS))
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan(**kwargs)))
    return path


@pytest.fixture
def pipeline_env(settings, tmp_path):
    settings.HUMEVAL_GENERATION_CACHE = str(tmp_path / "generations.sqlite3")
    settings.HUMEVAL_PIPELINE_DIR = str(tmp_path / "work")
    settings.CELERY_BROKER_URL = ""
    return tmp_path


@pytest.fixture
def count_loads(monkeypatch):
    """How many times model weights are loaded from disk (D16)."""
    loads = []
    real = transformers_backend._load
    monkeypatch.setattr(transformers_backend, "_load", lambda spec, name: loads.append(name) or real(spec, name))
    registry.clear()
    transformers_backend._loaded.clear()
    yield loads
    registry.clear()
    transformers_backend._loaded.clear()


def run_plan(path):
    out = StringIO()
    call_command("pipeline", str(path), stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


@pytest.mark.model
@pytest.mark.slow
def test_plan_runs_end_to_end_and_reruns_from_the_cache(pipeline_env, count_loads):
    path = write_plan(pipeline_env)
    report = run_plan(path)
    assert (report["state"], report["progress"]) == ("done", {"done": 4, "total": 4}), report
    steps = report["result"]["steps"]
    assert steps["batch"]["left_out"] == [{"id": "q3", "why": "empty profile (system bm25-k2 retrieves)"}]
    assert (steps["batch"]["n_items"], steps["batch"]["n_left_out"], steps["batch"]["failed"]) == (2, 1, 0)
    assert steps["import"] == {"study": "lamp5-pilot", "created": 2, "skipped": 0}
    assert steps["score"]["result"]["n_scores"] == 2 * 2 * 2  # items x systems x metrics
    generate = Job.objects.get(pk=steps["generate"]["job"])
    assert (generate.kind, generate.state, generate.done, generate.total) == ("plan_generate", "done", 3, 3)
    study = Study.objects.get(slug="lamp5-pilot")
    items = list(Item.objects.filter(study=study).order_by("position"))
    assert [i.item_id for i in items] == ["q1", "q2"]
    assert [i.data["reference"] for i in items] == ["Neural nets for images", "Walking large graphs"]
    assert [[c["id"] for c in i.data["candidates"]] for i in items] == [["bm25-k2", "no-profile"]] * 2
    # BM25 (rank_bm25.BM25Okapi) on LaMP-5's query (the abstract after "paper:") and corpus
    # (title + abstract): q1: p1 shares 5 tokens; p2 ("we") and p3 ("on") one each, both
    # words in 2 of 3 items, both items 6 tokens long: a tie, which LaMP's
    # np.argsort(scores)[::-1] breaks towards the later item -> p3. q2 has two items: a word
    # in one of two has idf ln(1.5) - ln(1.5) = 0, so every score is 0: the later item first.
    assert [i.meta["retrieved"] for i in items] == [{"bm25-k2": ["p1", "p3"], "no-profile": []},
                                                   {"bm25-k2": ["p5", "p4"], "no-profile": []}]
    assert [i.meta["task"] for i in items] == ["LaMP-5", "LaMP-5"]
    texts = [c["text"] for i in items for c in i.data["candidates"]]
    assert all(t and "\n" not in t for t in texts)
    assert Prediction.objects.filter(study=study, evaluator__in=["rougeL", "bleu"]).count() == 8
    assert count_loads == ["smollm2"]
    # The same plan again: a new chain whose generations all come from the cache, so the
    # model is never loaded (D16), the import skips both items, and nothing is duplicated.
    registry.clear()
    again = run_plan(path)
    assert again["state"] == "done" and again["job"] != report["job"]
    assert again["result"]["steps"]["import"] == {"study": "lamp5-pilot", "created": 0, "skipped": 2}
    assert count_loads == ["smollm2"]
    assert Item.objects.filter(study=study).count() == 2
    assert Prediction.objects.filter(study=study, evaluator__in=["rougeL", "bleu"]).count() == 8
    assert JobItem.objects.filter(job__kind="plan_generate").count() == 6


@pytest.mark.django_db
def test_identical_candidates_are_left_out_and_an_empty_batch_fails_the_chain(fake_llm, tmp_path):
    same = [{"id": "a", "model": "fake", "retriever": "none"}, {"id": "b", "model": "fake", "retriever": "none"}]
    path = write_plan(tmp_path, slug="same", systems=same)
    with pytest.raises(CommandError) as err:
        run_plan(path)
    assert str(err.value) == (
        f"job {Job.objects.get(kind='pipeline').pk} (pipeline) failed: step batch: no item to put in the batch (3 "
        "left out, 0 failed; first left out: q1: identical candidates (a, b)); nothing was imported (fix what the "
        "message says, then run the command again)")
    job = Job.objects.filter(kind="pipeline").latest("pk")
    assert (job.state, job.done, job.total) == ("failed", 1, 4)
    assert not Study.objects.filter(slug="same").exists()


def test_bad_plans_are_refused_with_their_reason(pipeline_env):
    path = write_plan(pipeline_env, systems=[{"id": "x", "model": "smollm2", "retriever": "bm25"}])
    with pytest.raises(CommandError, match="the plan was not run: systems: a pairwise_alignment study takes 2 to 8 "
                                           "systems"):
        run_plan(path)
    bad = plan()
    bad["input"]["questions"] = "missing.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(CommandError, match="input.questions: input file missing.json does not exist next to the plan"):
        run_plan(path)
    assert not Job.objects.filter(kind="pipeline").exists()
