"""PerSE's scalar evaluator (models_runtime/judges/perse_scalar.py): the profile (the
annotator's K other rated items with text, score and review), the prompt, the score read
from an answer, exact predictions through a scripted backend (directly and as the `score`
job's study judge), and the real embedded SmolLM2 on a few items. Also the kind's plan
builder registered there: a scalar_rating plan's chain against the OpenAI-compatible test
server (one item per (question, system), the user's output as the metrics' reference)."""
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from annotate.models import Prediction
from models_runtime.judges import perse_scalar as ps
from runtime_judges.scripted import ScriptedBackend
from tests.factories import make_judged_study
from tests.runtime.fake_llm import fake_llm  # noqa: F401 - an OpenAI-compatible test server as model `fake`

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCALE = [1, 10]


def item(k):
    return {"input": f"Premise {k}.", "candidate": {"id": f"sys-{k % 2}", "text": f"Plot {k}: a twist at the end."}}


def scalar_study(slug="per-mpst-mini"):
    """4 items; ann1 rates all four in order (scores 7, 3, 8, 5, reviews on all but item 2),
    ann2 rates item 0 only (no profile: skipped); a gold item is left out."""
    items = [(f"i{k}", item(k), None) for k in range(4)] + [("g", item(9), {"score": 1})]
    judgments = [(f"i{k}", "ann1", "score", str(score), "", 5.0, T0 + timedelta(minutes=k))
                 for k, score in enumerate((7, 3, 8, 5))]
    judgments += [("i0", "ann2", "score", "6", "", 5.0, T0), ("g", "ann1", "score", "1", "", 5.0, T0)]
    study = make_judged_study(slug, "scalar_rating", items, judgments, config={"scale": SCALE})
    reviews = {"i0": "Warm, funny.", "i1": "Dull.", "i3": "Fine, a bit long."}
    for item_id, review in reviews.items():
        study.judgments.filter(item__item_id=item_id, annotator__username="ann1").update(comment=review)
    return study


def test_options_default_to_the_papers_sampling_and_refuse_unknown_keys():
    assert (ps.Options().k, ps.Options().temperature, ps.Options().max_new_tokens) == (3, 0.8, 600)
    assert ps.Options.of({"k": 2, "temperature": 0.0}).k == 2
    with pytest.raises(ValueError, match=r"unknown perse_scalar options \['topk'\]"):
        ps.Options.of({"topk": 2})
    with pytest.raises(ValueError, match="k >= 1"):
        ps.Options.of({"k": 0})


def test_the_prompt_holds_the_profile_texts_scores_and_reviews():
    profile = [(item(1), "3", "Dull."), (item(2), "8", "")]
    text = ps.build_prompt(SCALE, profile, item(0))[0]["content"]
    assert text == (
        "Below are texts one reader has read, each with the reader's own review and score from 1 to 10. "
        "Learn this reader's taste from them.\n\n"
        "Example 1:\nContext: Premise 1.\nText: Plot 1: a twist at the end.\nThe reader's review: Dull.\n"
        "The reader's score: 3\n\n"
        "Example 2:\nContext: Premise 2.\nText: Plot 2: a twist at the end.\nThe reader's review: (no review)\n"
        "The reader's score: 8\n\n"
        "New text:\nContext: Premise 0.\nText: Plot 0: a twist at the end.\n\n"
        "Write the review this reader would write about the new text, then give the score this reader would "
        "give, on the last line as \"Score: N\" with N from 1 to 10.\nThe reader's review:")


@pytest.mark.parametrize("answer, stored", [
    ("A fun ride with a sad middle.\nScore: 7", "7"),
    ("I would rate it 8 out of 10.", "8"),
    ("On a scale from 1 to 10, this reader gives 6.", "6"),
    ("Score: 7.5", "7.5"),
    ("Score: 11", ""),  # outside the scale: unparsed, never clipped
    ("Loved it, two thumbs up.", ""),
    ("", ""),
])
def test_the_score_is_read_by_the_judges_rule(answer, stored):
    assert ps.parse_answer(answer, SCALE) == stored


@pytest.mark.django_db
def test_scripted_predictions_per_annotator(annotators):
    """ann1's four ratings each get a prediction from the three others (K = 3): earlier ones
    first, latest first, then later ones. The script answers the profile's first score + 1,
    and nonsense for item 2. ann2 (one rating) is skipped; the gold item is never used."""
    study = scalar_study()

    def script(text, params, attempt):
        assert (params.temperature, params.max_new_tokens) == (0.8, 600)
        if "Premise 2.\nText: Plot 2" in text.split("New text:")[1]:
            return "No idea."
        first = int(text.split("The reader's score: ")[1].split("\n")[0])
        return f"Fine.\nScore: {first + 1}"

    backend = ScriptedBackend(script)
    result = ps.perse_scalar(study.slug, backend)
    assert len(backend.calls) == 1 and backend.calls[0][0] == 4  # one batched call
    assert result == {"study": study.slug, "evaluator": "perse_scalar", "predictions": 4, "unparsed": 1,
                      "skipped": 1, "created": 4, "updated": 0, "k": 3, "temperature": 0.8, "max_new_tokens": 600}
    # profiles (first score): i0 <- i1, i2, i3 (3); i1 <- i0, i2, i3 (7); i3 <- i2, i1, i0 (8)
    got = {(p.item.item_id, p.annotator, p.question): p.value for p in Prediction.objects.filter(study=study)}
    assert got == {("i0", "ann1", "score"): "4", ("i1", "ann1", "score"): "8", ("i2", "ann1", "score"): "",
                   ("i3", "ann1", "score"): "9"}
    assert "The reader's review: Dull." in backend.seen[0] and "Plot 9" not in "".join(backend.seen)
    assert ps.perse_scalar(study.slug, ScriptedBackend(script))["created"] == 0  # a re-run replaces, no duplicates


@pytest.mark.django_db
def test_the_score_job_runs_it_as_a_study_judge(annotators, monkeypatch):
    study = scalar_study("per-mpst-job")
    backend = ScriptedBackend(lambda text, params, attempt: f"Score: {params.max_new_tokens % 10}")
    monkeypatch.setattr("models_runtime.backends.registry.get_backend", lambda name, device=None: backend)
    out = io.StringIO()
    call_command("score", study.slug, "--metrics", "perse_scalar", "--options",
                 json.dumps({"perse_scalar": {"k": 1, "max_new_tokens": 7}}), stdout=out)
    summary = json.loads(out.getvalue())
    assert summary["state"] == "done"
    assert summary["result"]["perse_scalar"]["predictions"] == 4 and summary["result"]["perse_scalar"]["k"] == 1
    assert set(Prediction.objects.filter(study=study).values_list("value", flat=True)) == {"7"}


@pytest.mark.django_db
def test_other_kinds_are_refused():
    from django.core.management.base import CommandError

    make_judged_study("pairwise", "pairwise_alignment", [("i0", {"input": "q", "reference": "r", "candidates": [
        {"id": "a", "text": "x"}, {"id": "b", "text": "y"}]}, None)])
    with pytest.raises(ValueError, match="perse_scalar scores scalar_rating studies"):
        ps.perse_scalar("pairwise", ScriptedBackend([]))
    with pytest.raises(CommandError, match="study pairwise is pairwise_alignment; perse_scalar scores scalar_rating"):
        call_command("score", "pairwise", "--metrics", "rougeL,perse_scalar", stdout=io.StringIO())


@pytest.mark.django_db
def test_a_plan_builds_a_scalar_study_of_each_systems_outputs(fake_llm, tmp_path, settings):  # noqa: F811
    """A LaMP-4 plan of kind scalar_rating through the whole chain: question 312 (an empty
    profile, system bm25-k1 retrieves) is left out as for any kind; the two others give one
    item per system, imported, and scored by ROUGE-L against the user's own headline (the
    never-shown `reference`); perse_scalar is no plan judge (nobody has rated yet)."""
    from rouge_score import rouge_scorer

    from annotate.models import Item, Study
    from models_runtime.plans import PlanInvalid, validate_plan
    from tests.runtime.test_pipeline_chain import read_jsonl, run_plan
    from tests.runtime.test_plans import OUTPUTS, QUESTIONS, plan

    settings.HUMEVAL_PIPELINE_DIR = str(tmp_path / "work")
    (tmp_path / "dev_questions.json").write_text(json.dumps(QUESTIONS))
    (tmp_path / "dev_outputs.json").write_text(json.dumps(OUTPUTS))
    study = {"slug": "lamp4-scalar", "kind": "scalar_rating", "title": "LaMP-4 headlines, rated"}
    with pytest.raises(PlanInvalid, match="judges: perse_scalar"):
        validate_plan(plan(study=study, judges=["perse_scalar"]), tmp_path, settings.HUMEVAL_PIPELINE_DIR)
    (tmp_path / "plan.json").write_text(json.dumps(plan(study=study, metrics=["rougeL"])))
    report, _ = run_plan(tmp_path / "plan.json")
    assert report["state"] == "done", report
    header, *items = read_jsonl(tmp_path / "work" / "lamp4-scalar" / "batch.jsonl")
    assert header["study"]["instructions"] == ps.PLAN_INSTRUCTIONS
    golds = {g["id"]: g["output"] for g in OUTPUTS["golds"]}
    assert [(i["item_id"], i["candidate"]["id"], i["reference"]) for i in items] == [
        (f"{q}-{s}", s, golds[q]) for q in ("310", "311") for s in ("bm25-k1", "no-profile")]
    assert Study.objects.get(slug="lamp4-scalar").kind == "scalar_rating"
    assert Item.objects.filter(study__slug="lamp4-scalar").count() == 4
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    stored = {(p.item.item_id, p.question): float(p.value)
              for p in Prediction.objects.filter(study__slug="lamp4-scalar", evaluator="rougeL")}
    assert stored == pytest.approx({(i["item_id"], i["candidate"]["id"]): scorer.score(
        i["reference"], i["candidate"]["text"])["rougeL"].fmeasure for i in items}, abs=1e-9)


class Recording:
    """The real backend, its answers kept (to check what was stored against them)."""

    def __init__(self, inner):
        self.inner, self.texts = inner, []

    def generate(self, prompts, params):
        out = self.inner.generate(prompts, params)
        self.texts += [gens[0].text for gens in out]
        return out


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.django_db
def test_with_the_embedded_smollm2(annotators):
    """The real SmolLM2-135M on the four-item study (short answers to stay quick): every
    prediction stored is what the judges' rule reads in the model's own answer, unparsed
    ones are stored empty and counted, and the same seed gives the same answers."""
    import torch
    from django.test import override_settings

    from models_runtime.backends.registry import get_backend

    study = scalar_study("per-mpst-model")
    options = ps.Options(max_new_tokens=24)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with override_settings(HUMEVAL_GENERATION_CACHE=""):
            model = get_backend("smollm2", device="cpu")
            backend, again = Recording(model), Recording(model)
            result = ps.perse_scalar(study.slug, backend, options)
            ps.predict(ps.study_info(study.slug), again, options)
    finally:
        torch.set_num_threads(threads)
    assert len(backend.texts) == result["predictions"] == 4
    stored = dict(Prediction.objects.filter(study=study).values_list("item__item_id", "value"))
    assert [stored[f"i{k}"] for k in range(4)] == [ps.parse_answer(t, SCALE) for t in backend.texts]
    assert result["unparsed"] == [ps.parse_answer(t, SCALE) for t in backend.texts].count("")
    assert again.texts == backend.texts  # seeded sampling at temperature 0.8
