"""The header keys of adaptive allocation (annotate/studies/allocation.py): `allocation`,
`min_per_pair`, `stop_when`: stored in Study.config, refused with the header's line number
and a clear reason otherwise, including an adaptive study of fewer than 3 systems, a kind
without a `choice` question, and a later batch that contradicts the study; a plan's study
header may set them."""
import pytest

from annotate.models import Study
from annotate.studies.batch_format import BatchInvalid, parse_header
from annotate.studies.importing import batch_errors, import_batch_bytes
from tests.factories import header, jsonl, pairwise


def errors_of(**keys):
    _, errors = parse_header(header("s", "pairwise_alignment", **keys), line=1)
    return list(errors)


def three(item_id, ids=("m1", "m2", "m3")):
    return {**pairwise(item_id), "candidates": [{"id": s, "text": f"{s} text"} for s in ids]}


def test_valid_keys_are_kept_in_config():
    h, errors = parse_header(header("s", "pairwise_alignment", allocation="adaptive", min_per_pair=4,
                                    stop_when={"separated": ["m1", "m2"]}))
    assert list(errors) == []
    assert h.config == {"allocation": "adaptive", "min_per_pair": 4, "stop_when": {"separated": ["m1", "m2"]}}
    h, _ = parse_header(header("s", "pairwise_alignment", allocation="balanced", stop_when="top_separated"))
    assert h.config == {"allocation": "balanced", "stop_when": "top_separated"}


@pytest.mark.parametrize("keys, message", [
    ({"allocation": "greedy"}, "line 1: 'allocation' must be one of balanced, adaptive, judge_uncertain, got 'greedy'"),
    ({"allocation": 1}, "line 1: 'allocation' must be one of balanced, adaptive, judge_uncertain, got 1"),
    ({"allocation": "adaptive", "min_per_pair": 0}, "line 1: 'min_per_pair' must be an integer from 1 to "),
    ({"allocation": "adaptive", "min_per_pair": 2.5}, "line 1: 'min_per_pair' must be an integer from 1 to "),
    ({"allocation": "adaptive", "min_per_pair": True}, "line 1: 'min_per_pair' must be an integer from 1 to "),
    ({"min_per_pair": 3}, "line 1: 'min_per_pair' applies to \"allocation\": \"adaptive\" only"),
    ({"stop_when": "soon"}, "line 1: 'stop_when' must be \"top_separated\" or {\"separated\": [system, other "
                            "system]}, got 'soon'"),
    ({"stop_when": {"separated": ["m1", "m1"]}}, "line 1: 'stop_when' must be"),
    ({"stop_when": {"separated": ["m1"]}}, "line 1: 'stop_when' must be"),
])
def test_bad_values_are_refused_with_the_line(keys, message):
    errors = errors_of(**keys)
    assert len(errors) == 1 and errors[0].startswith(message), errors


def test_adaptive_needs_a_choice_question():
    _, errors = parse_header(header("s", "scalar_rating", allocation="adaptive"))
    assert list(errors) == ["line 1: 'allocation': \"adaptive\" needs a study whose items hold candidates and a "
                            "'choice' question; scalar_rating has none"]


@pytest.mark.django_db
def test_adaptive_with_two_systems_is_refused_and_writes_nothing():
    data = jsonl(header("two", "pairwise_alignment", allocation="adaptive"), pairwise("a"), pairwise("b"))
    expected = ["line 1: 'allocation': \"adaptive\" needs 3 or more systems; the study's items name 2"]
    assert batch_errors_of(data) == expected
    with pytest.raises(BatchInvalid) as refused:
        import_batch_bytes(data)
    assert refused.value.errors == expected
    assert not Study.objects.filter(slug="two").exists()


@pytest.mark.django_db
def test_an_empty_adaptive_study_is_checked_when_its_items_come():
    assert import_batch_bytes(jsonl(header("empty", "pairwise_alignment", allocation="adaptive"))).created == 0
    with pytest.raises(BatchInvalid) as refused:
        import_batch_bytes(jsonl(header("empty", "pairwise_alignment"), pairwise("a")))
    assert refused.value.errors == ["line 1: 'allocation': \"adaptive\" needs 3 or more systems; the study's "
                                    "items name 2"]
    assert import_batch_bytes(jsonl(header("empty", "pairwise_alignment"), three("a"))).created == 1


@pytest.mark.django_db
def test_adaptive_with_three_systems_loads_and_later_batches_may_not_change_it():
    result = import_batch_bytes(jsonl(header("three", "pairwise_alignment", allocation="adaptive", min_per_pair=5),
                                      three("a")))
    assert result.study.config == {"allocation": "adaptive", "min_per_pair": 5}
    # a later batch of two-candidate items: the study already names 3 systems
    import_batch_bytes(jsonl(header("three", "pairwise_alignment"), pairwise("b")))
    with pytest.raises(BatchInvalid) as refused:
        import_batch_bytes(jsonl(header("three", "pairwise_alignment", allocation="balanced"), pairwise("c")))
    assert refused.value.errors == ["line 1: 'allocation' 'balanced' differs from the existing study's "
                                    "'adaptive'"]


def batch_errors_of(data):
    import io
    return batch_errors(io.BytesIO(data))


@pytest.mark.django_db
def test_a_plan_may_set_the_allocation(tmp_path):
    """The plan's study header passes the importer's checks with the keys, and a bad value is
    the plan's error under `study`."""
    from models_runtime.plans import Check, check_batch, check_study

    check = Check()
    study = check_study(check, {"slug": "plan-adaptive", "title": "T", "allocation": "adaptive", "min_per_pair": 3})
    assert check.errors == [] and study["allocation"] == "adaptive"
    systems = [{"id": s} for s in ("a", "b", "c")]
    check_batch(check, study, systems, "")
    assert check.errors == []
    check_batch(check, dict(study, allocation="sometimes"), systems, "")
    assert check.errors == ["study: 'allocation' must be one of balanced, adaptive, judge_uncertain, got 'sometimes'"]
