"""The judge commands (expert, expert_batch, probes, perse) with a scripted backend, the
suffix probe against a classic metric, and the judges' metric registrations."""
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from models_runtime.judges.probes import SUFFIX, suffix_probe
from models_runtime.metrics.registry import get_metric
from models_runtime.models import Job
from runtime_judges.scripted import ScriptedBackend
from runtime_judges.test_expert_unit import OUT, REF, pasta_script
from tests.factories import perse_study

PAIR_BATCH = [
    {"study": {"slug": "pasta", "kind": "pairwise_alignment", "title": "Which review?", "annotations_per_item": 3}},
    {"item_id": "i1", "input": "Review the restaurant.", "reference": REF,
     "candidates": [{"id": "c1", "text": OUT}, {"id": "c2", "text": REF}], "metric_scores": {"x": {"c1": 1, "c2": 2}}},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_judges_are_registered_metrics():
    for name in ("gemba", "geval", "expert"):
        assert callable(get_metric(name))


def test_suffix_probe_rouge1_hand_worked():
    """rouge1 of "the cat sat" against itself is 1. With the suffix the output has 17
    rouge tokens (the cat sat i am sure this is the best answer possible and this is 100
    right), 3 of them match: P = 3/17, R = 1, F = (6/17)/(20/17) = 0.3. The second record
    shares no word before or after: 0 and 0. Means 0.5 -> 0.15, change -0.35/0.5 = -0.7."""
    records = [{"input": "", "output": "the cat sat", "reference": "the cat sat"},
               {"input": "", "output": "cats meow", "reference": "dogs bark loudly"}]
    report = suffix_probe(records, ["rouge1"])
    assert report["rouge1"] == pytest.approx({"before": 0.5, "after": 0.15, "relative_change": -0.7, "n": 2})


@pytest.mark.django_db  # the command runs a job (a Job row and its checkpoints)
def test_expert_command_scripted(tmp_path, monkeypatch, capsys):
    backend = ScriptedBackend(pasta_script)
    monkeypatch.setattr("models_runtime.judges.jobs._backend", lambda params: backend)
    record = {"id": "r1", "input": "Review the restaurant.", "output": OUT, "reference": REF}
    source = write_jsonl(tmp_path / "in.jsonl", [record])
    call_command("expert", "--input", source, "--out", str(tmp_path / "out.json"))
    printed = json.loads(capsys.readouterr().out)
    assert printed["score"] == pytest.approx(0.25) and printed["llm_calls"] == 12 and len(printed["items"]) == 1
    assert printed["checks"] == "separate" and printed["llm_calls_per_item"] == 12
    assert json.loads((tmp_path / "out.json").read_text()) == printed
    assert printed["items"][0]["id"] == "r1"


@pytest.mark.django_db
def test_expert_reads_the_batch_generate_rag_writes(tmp_path, monkeypatch, capsys):
    """D8: a pairwise batch (header + items with candidates) is one record per candidate,
    its id `<item_id>/<candidate id>`."""
    backend = ScriptedBackend(pasta_script)
    monkeypatch.setattr("models_runtime.judges.jobs._backend", lambda params: backend)
    call_command("expert", "--input", write_jsonl(tmp_path / "batch.jsonl", PAIR_BATCH))
    printed = json.loads(capsys.readouterr().out)
    assert [item["id"] for item in printed["items"]] == ["i1/c1", "i1/c2"]


@pytest.mark.django_db  # the command runs a job (a Job row and its checkpoints)
def test_expert_command_bad_input(tmp_path):
    source = tmp_path / "bad.jsonl"
    source.write_text('{"id": 1, "output": "x"}\nnope\n')
    with pytest.raises(CommandError) as err:
        call_command("expert", "--input", str(source))
    assert str(err.value) == "line 1: missing or non-text reference; line 2: not JSON (Expecting value)"
    with pytest.raises(CommandError, match="cannot read"):
        call_command("expert", "--input", str(tmp_path / "missing.jsonl"))


@pytest.mark.django_db
def test_expert_batch_command_imports_as_explanation_choice(tmp_path, monkeypatch, capsys):
    """c1 is the pasta output (F 0.25, 12 calls). c2 repeats the reference: both sides get
    {Food, Service}; Food matches Food both ways (content yes, style no), Service matches
    nothing: R = P = 0.5/2 = 0.25, F = 0.25; calls 2 + 4 + content 2 + style 2 = 10 (each
    side's check counts, even when the two prompts are the same). Total 22."""
    backend = ScriptedBackend(pasta_script)
    monkeypatch.setattr("models_runtime.judges.jobs._backend", lambda params: backend)
    out = tmp_path / "expl.jsonl"
    call_command("expert_batch", "--input", write_jsonl(tmp_path / "pw.jsonl", PAIR_BATCH), "--out", str(out))
    assert json.loads(capsys.readouterr().out) == {"study": "pasta-explanations", "items": 1, "llm_calls": 22,
                                                   "out": str(out)}
    header, item = [json.loads(line) for line in out.read_text().splitlines()]
    assert header["study"]["kind"] == "explanation_choice" and header["study"]["annotations_per_item"] == 3
    assert set(item["explanations"]) == {"c1", "c2"} and "metric_scores" not in item
    assert [item["explanations"][c]["llm_calls"] for c in ("c1", "c2")] == [12, 10]
    assert item["explanations"]["c2"]["score"] == pytest.approx(0.25)
    call_command("import_batch", str(out))
    assert json.loads(capsys.readouterr().out)["created"] == 1


@pytest.mark.django_db  # the command runs a job (a Job row and its checkpoints)
def test_probes_command(tmp_path, monkeypatch, capsys):
    """rouge1 on the two candidates (c1: pasta output, c2: the reference itself) and the
    order swap with a judge that always says "B" (the second-shown candidate): 1 flip in 1."""
    monkeypatch.setattr("models_runtime.judges.jobs._backend",
                        lambda params: ScriptedBackend(lambda text, p, j: "B"))
    call_command("probes", "--input", write_jsonl(tmp_path / "pw.jsonl", PAIR_BATCH), "--metrics", "rouge1")
    out = json.loads(capsys.readouterr().out)
    assert out["suffix"]["text"] == SUFFIX and out["suffix"]["metrics"]["rouge1"]["n"] == 2
    assert out["suffix"]["metrics"]["rouge1"]["relative_change"] < 0
    assert out["order_swap"] == {"pairwise": {"flip_rate": 1.0, "flips": 1, "n": 1, "unparsed": 0}}
    with pytest.raises(CommandError, match="unknown metric"):
        call_command("probes", "--input", str(tmp_path / "pw.jsonl"), "--metrics", "nonsense")
    # --study keeps the probes job, and so its result, with the study (its dashboard's job list)
    with pytest.raises(CommandError, match="unknown study 'nope'"):
        call_command("probes", "--input", str(tmp_path / "pw.jsonl"), "--metrics", "rouge1", "--study", "nope")
    study = perse_study()
    call_command("probes", "--input", str(tmp_path / "pw.jsonl"), "--metrics", "rouge1", "--study", study.slug)
    kept = json.loads(capsys.readouterr().out)
    job = Job.objects.get(kind="probes", study=study.slug)
    assert job.state == "done" and job.result == kept and kept["order_swap"] == out["order_swap"]


@pytest.mark.django_db
def test_expert_batch_and_perse_as_jobs(tmp_path, monkeypatch, annotators):
    """Both judge runs also exist as resumable job kinds (run in process without a broker)."""
    from models_runtime.jobs import submit_job

    monkeypatch.setattr("models_runtime.judges.jobs._backend", lambda params: ScriptedBackend(
        lambda text, p, j: "Plot A" if "reader" in text else pasta_script(text, p, j)))
    out = tmp_path / "expl.jsonl"
    job = submit_job("expert_batch", {"input": write_jsonl(tmp_path / "pw.jsonl", PAIR_BATCH), "out": str(out),
                                      "server_paths": True})  # what the commands set
    assert job.state == "done", job.errors
    assert job.result == {"study": "pasta-explanations", "items": 1, "failed": 0, "llm_calls": 22, "out": str(out)}
    assert len(out.read_text().splitlines()) == 2

    study = perse_study()
    job = submit_job("perse", {"study": study.slug, "k": 2})
    assert job.state == "done", job.errors
    # ann1: 3 judgments on each of 2 aspects, all predicted "Plot A" (k = 2 finds a profile
    # for each); ann2: one judgment per aspect, no profile -> 2 skipped.
    assert job.result == {"study": study.slug, "evaluator": "perse-smollm2", "predictions": 6, "unparsed": 0,
                          "na": 0, "skipped": 2, "created": 6, "updated": 0}
    assert (job.total, job.done) == (2, 2)  # ann1 and ann2


@pytest.mark.django_db
def test_perse_command_prints_the_counts(monkeypatch, capsys):
    """k = 1: ann1's 6 judgments are predicted (the scripted judge always says Plot B,
    i.e. b0/b1/b2), ann2's 2 have no profile. A second run is a new job (the first is
    done) and finds every value already stored."""
    study = perse_study()
    monkeypatch.setattr("models_runtime.judges.jobs._backend",
                        lambda params: ScriptedBackend(lambda text, p, j: "Plot B"))
    call_command("perse", study.slug)
    assert json.loads(capsys.readouterr().out) == {"study": "perdoc-mini", "evaluator": "perse-smollm2",
                                                   "predictions": 6, "unparsed": 0, "na": 0, "skipped": 2,
                                                   "created": 6, "updated": 0}
    call_command("perse", study.slug)
    again = json.loads(capsys.readouterr().out)
    assert (again["created"], again["updated"], again["predictions"]) == (0, 0, 6)


@pytest.mark.django_db
def test_score_counts_geval_samples_without_a_score(monkeypatch):
    """G-Eval draws 20 samples per candidate and averages the parsable ones: 3 items x 2
    candidates x 20 = 120 samples; every sample of candidate c2 reads "n/a" (60 dropped,
    its score empty), c1's answer "Rating: 4". The job result and a stderr line say so."""
    from io import StringIO

    from annotate.studies.importing import import_batch_bytes
    from tests.factories import header, jsonl

    items = [{"item_id": f"i{n}", "input": "Review it.", "reference": REF,
              "candidates": [{"id": "c1", "text": f"{OUT} {n}"}, {"id": "c2", "text": f"weird {n}"}]} for n in range(3)]
    import_batch_bytes(jsonl(header("samples", "pairwise_alignment"), *items))
    backend = ScriptedBackend(lambda text, params, j: "n/a" if "weird" in text else "Rating: 4")
    monkeypatch.setattr("models_runtime.judges.metrics._backend", lambda model, device: backend)
    out, err = StringIO(), StringIO()
    call_command("score", "samples", "--metrics", "geval", stdout=out, stderr=err)
    result = json.loads(out.getvalue())["result"]
    assert result["samples"] == {"geval": {"samples": 120, "unparsed_samples": 60}}
    assert result["coverage"]["geval"] == {"n_items": 3, "n_scored": 0, "n_unparsed": 3}
    assert err.getvalue().strip() == ('warning: geval: 60 of 120 samples had no score in them and were left out of the '
                                      'means (the result\'s "samples")')
