"""The PerSE-style evaluator end to end on a small aspect_pairwise study (PostgreSQL)."""
import pytest
from django.core.management import call_command

from annotate.models import Prediction
from models_runtime.judges.perse import build_prompt, parse_answer, perse_predict, profile_for
from runtime_judges.scripted import ScriptedBackend
from tests.factories import make_study, perse_study


def test_profile_selection():
    history = ["j0", "j1", "j2", "j3"]
    assert profile_for(history, 2, 1) == ["j1"]
    assert profile_for(history, 2, 3) == ["j1", "j0", "j3"]
    assert profile_for(history, 0, 2) == ["j1", "j2"]
    assert profile_for(["only"], 0, 2) == []


def test_prompt_and_answer_parsing():
    data = {"premise": "P", "candidates": [{"id": "x", "text": "X plot"}, {"id": "y", "text": "Y plot"}]}
    text = build_prompt("Which ending?", [(data, "y")], data)[0]["content"]
    assert "The reader chose: Plot B" in text and text.endswith("The reader chose:")
    assert text.count("Plot A: X plot") == 2 and "?" not in text.split("New plots:")[1].split("Which plot")[0]
    assert [parse_answer(t, data) for t in ["Plot B", "a", "N/A", "NA.", "Plot A or Plot B", "I like it", ""]] == \
        ["y", "x", "N/A", "N/A", "", "", ""]


@pytest.mark.django_db
def test_perse_end_to_end_scripted(annotators):
    """ann1 has 3 judgments per aspect -> 6 predictions; ann2 has 1 per aspect -> 2 skipped.
    The script answers from the profile it sees: it copies the reader's earlier choice
    letter for `ending`, answers garbage for surprise on item p1, and N/A elsewhere."""
    study = perse_study()

    def script(text, params, j):
        if "better ending" in text:
            return "Plot " + text.split("The reader chose: Plot ")[1][0]
        return "hmm" if "Premise 1." in text.split("New plots:")[1] else "N/A"

    backend = ScriptedBackend(script)
    result = perse_predict(study, backend, k=1, evaluator="perse-test")
    assert backend.calls[0][0] == 6 and len(backend.calls) == 1  # one batched call
    assert result == {"study": "perdoc-mini", "evaluator": "perse-test", "predictions": 6, "unparsed": 1,
                      "na": 2, "skipped": 2, "created": 6, "updated": 0}
    got = {(p.item.item_id, p.annotator, p.question): p.value
           for p in Prediction.objects.filter(evaluator="perse-test")}
    # ending: p0's profile is p1 (chose a1 = Plot A) -> a0; p1's is p0 (b0 = Plot B) -> b1; p2's is p1 -> a2.
    assert got == {("p0", "ann1", "ending"): "a0", ("p1", "ann1", "ending"): "b1", ("p2", "ann1", "ending"): "a2",
                   ("p0", "ann1", "surprise"): "N/A", ("p1", "ann1", "surprise"): "", ("p2", "ann1", "surprise"): "N/A"}
    # Idempotent: a second run changes nothing.
    again = perse_predict(study, ScriptedBackend(script), k=1, evaluator="perse-test")
    assert (again["created"], again["updated"]) == (0, 0)
    assert Prediction.objects.filter(evaluator="perse-test").count() == 6


@pytest.mark.django_db
def test_perse_rejects_other_kinds():
    study = make_study(slug="pw", title="t")
    with pytest.raises(ValueError, match="aspect_pairwise"):
        perse_predict(study, ScriptedBackend([]))


@pytest.mark.django_db
def test_perse_command_unknown_study():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="does not exist"):
        call_command("perse", "nope")
