"""A plan is checked whole before anything runs (runtime.md "Plans, revised 2026-11-27"):
unknown keys at any level with the closest valid one, types and bounds, the slug, the
systems, models, metrics and judges, LaMP's task from its own files, the batch the import
would refuse. Each test checks the exact message and that no job was made and no prompt
sent. LaMP-4 files in LaMP's shape (its "task": "LaMP_4" spelling included)."""
import copy
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Study
from models_runtime.job_support.kinds import JobParamsError
from models_runtime.models import Job
from models_runtime.plan_support.plan_checks import Check, shown
from models_runtime.plans import PlanInvalid, check_systems, parse_plan, validate_plan

pytestmark = pytest.mark.django_db

ASK = "Generate a headline for the following article: "
QUESTIONS = [
    {"id": "310", "input": ASK + "the city opened a new bike lane downtown on monday",
     "profile": [{"id": "3100", "title": "Bike lane plans", "text": "the council discussed a bike lane downtown"},
                 {"id": "3101", "title": "Bakery wins", "text": "a small bakery won the bread prize"}]},
    {"id": "311", "input": ASK + "heavy rain floods the old market square",
     "profile": [{"id": "3110", "title": "Storm warning", "text": "heavy rain expected this week"},
                 {"id": "3111", "title": "Market reopens", "text": "the old market reopens after repairs"}]},
    {"id": "312", "input": ASK + "a reader with no history", "profile": []},
]
OUTPUTS = {"task": "LaMP_4", "golds": [{"id": "310", "output": "Downtown gets a bike lane"},
                                      {"id": "311", "output": "Rain floods the old market"},
                                      {"id": "312", "output": "Nothing yet"}]}


def plan(**changes):
    base = {"study": {"slug": "lamp4-pilot", "kind": "pairwise_alignment", "title": "LaMP-4 headlines",
                      "annotations_per_item": 3},
            "input": {"format": "lamp", "questions": "dev_questions.json", "outputs": "dev_outputs.json"},
            "systems": [{"id": "bm25-k1", "model": "fake", "retriever": "bm25", "k": 1},
                        {"id": "no-profile", "model": "fake", "retriever": "none"}],
            "generation": {"max_tokens": 16, "temperature": 0.0, "stop": ["\n"], "postprocess": "title"},
            "metrics": ["rouge1", "rougeL"], "judges": []}
    base.update(changes)
    return base


@pytest.fixture
def files(tmp_path):
    (tmp_path / "dev_questions.json").write_text(json.dumps(QUESTIONS))
    (tmp_path / "dev_outputs.json").write_text(json.dumps(OUTPUTS))
    return tmp_path


def refused(the_plan, files) -> list[str]:
    with pytest.raises(PlanInvalid) as caught:
        validate_plan(the_plan, files, files / "work")
    return caught.value.errors


def test_a_good_plan_reads_lamps_task_from_its_outputs_file(fake_llm, files):
    params = validate_plan(plan(), files, files / "work")
    assert params["input"]["task"] == "LaMP-4" and params["input"]["n_questions"] == 3
    assert params["systems"][0] == {"id": "bm25-k1", "model": "fake", "retriever": "bm25", "k": 1, "prompt": "lamp"}
    assert params["generation"] == {"max_tokens": 16, "temperature": 0.0, "stop": ["\n"], "postprocess": "title",
                                    "budget": 256}
    assert params["study_header"]["instructions"].startswith("Read the request")


def test_unknown_keys_at_every_level_name_the_closest_valid_one(fake_llm, files):
    bad = plan()
    bad["systems"][0] = {"id": "bm25-k1", "model": "fake", "retriever": "bm25", "top_k": 3}
    bad["generation"] = {"max_new_tokens": 32, "temprature": 0.7}
    bad["judge"] = ["gemba"]
    bad["study"]["overlap"] = 3
    errors = refused(bad, files)
    assert errors == [
        "judge: unknown key (did you mean `judges`?); allowed: study, input, systems, generation, metrics, judges, "
        "judge_model, device, ip",
        errors[1],
        "systems[0] (bm25-k1).top_k: unknown key (did you mean `k`?); allowed: id, model, retriever, k, prompt",
        "generation.max_new_tokens: unknown key (did you mean `max_tokens`?); allowed: max_tokens, temperature, stop, "
        "postprocess, budget",
        "generation.temprature: unknown key (did you mean `temperature`?); allowed: max_tokens, temperature, stop, "
        "postprocess, budget"]
    assert errors[1].startswith("study.overlap: unknown key (did you mean `annotations_per_item`?); allowed: slug, ")
    assert fake_llm.prompts == [] and not Job.objects.exists()


def test_the_command_refuses_top_k_before_any_job(fake_llm, files):
    bad = plan()
    bad["systems"][0]["top_k"] = 3
    (files / "plan.json").write_text(json.dumps(bad))
    with pytest.raises(CommandError) as caught:
        call_command("pipeline", str(files / "plan.json"), stdout=StringIO(), stderr=StringIO())
    assert str(caught.value).endswith("the plan was not run: systems[0] (bm25-k1).top_k: unknown key (did you mean "
                                      "`k`?); allowed: id, model, retriever, k, prompt")
    assert fake_llm.prompts == [] and not Job.objects.exists()


@pytest.mark.parametrize("slug", ["../x", "/tmp/x", "x/../../y", "Lamp4", "a" * 51, "", "lamp_4"])
def test_slugs_that_are_not_a_folder_name_are_refused_before_any_job(fake_llm, files, slug):
    bad = plan()
    bad["study"]["slug"] = slug
    assert refused(bad, files) == [f"study.slug: must be 1-50 lowercase letters, digits or '-', got {shown(slug)}"]
    assert not Job.objects.exists() and not (files / "work").exists()


def test_types_and_bounds_of_every_number(fake_llm, files):
    bad = plan(generation={"max_tokens": 1e9, "temperature": -1, "stop": "\n", "postprocess": "headline",
                           "budget": True})
    bad["systems"][0]["k"] = "3"
    bad["systems"][1]["k"] = 2
    assert refused(bad, files) == [
        "systems[0] (bm25-k1).k: must be an integer from 1 to 1000, got '3'",
        'systems[1] (no-profile).k: a system with retriever "none" retrieves nothing: leave k out',
        "generation.stop: must be a list of at most 16 non-empty strings of at most 200 characters, got '\\n'",
        "generation.postprocess: must be first_line or title (or left out), got 'headline'",
        "generation.max_tokens: must be an integer from 1 to 8192, got 1000000000.0",
        "generation.temperature: must be from 0.0 to 2.0, got -1",
        "generation.budget: must be an integer from 1 to 100000, got True"]


def test_a_stop_list_too_long_says_its_count_and_the_limit(fake_llm, files):
    """Issue 31 item 5: the count and the limit, not a shortened echo of the list."""
    bad = plan(generation={"max_tokens": 16, "temperature": 0.0, "stop": [f"s{n}" for n in range(40)]})
    assert refused(bad, files) == ["generation.stop: must be a list of at most 16 strings, got 40"]
    assert not Job.objects.exists()


def test_systems_two_to_eight_with_distinct_valid_ids(fake_llm, files):
    one = plan(systems=[plan()["systems"][0]])
    assert refused(one, files) == ["systems: a pairwise_alignment study takes 2 to 8 systems (a list), got 1"]
    check = Check()
    nine = [{"id": f"s{n}", "model": "fake"} for n in range(9)]
    assert check_systems(check, nine, "pairwise_alignment") == []
    assert check.errors == ["systems: a pairwise_alignment study takes 2 to 8 systems (a list), got 9"]
    check = Check()
    eight = check_systems(check, [{"id": f"s{n}", "model": "fake"} for n in range(8)], "pairwise_alignment")
    assert len(eight) == 8 and check.errors == []
    same = plan(systems=[{"id": "a", "model": "fake"}, {"id": "a", "model": "gpt-9"}, {"id": "tie", "model": "fake"}])
    errors = refused(same, files)
    assert errors[0].startswith("systems[1] (a).model: unknown model 'gpt-9': add it to HUMEVAL_MODELS (known: fake, "
                                "smollm2)")
    assert errors[1].startswith("systems[2] (tie).id: must be 1-64 letters, digits")
    assert errors[2] == "systems: two systems are named 'a': ids must differ (they are the candidate ids)"


def test_a_task_other_than_the_files_own_is_refused(fake_llm, files):
    other = plan()
    other["input"]["task"] = "LaMP-5"
    assert refused(other, files) == ['input: input.task is LaMP-5 but dev_outputs.json says "task": LaMP-4: fix the '
                                     "plan or give the other task's files"]
    same = plan()
    same["input"]["task"] = "LaMP_4"  # LaMP's own spelling is the same task
    assert validate_plan(same, files, files / "work")["input"]["task"] == "LaMP-4"
    nonsense = plan()
    nonsense["input"]["task"] = "LaMP-9"
    assert refused(nonsense, files)[0].startswith("input.task: must be a LaMP task (LaMP-1 ... LaMP-7")


def test_metrics_and_judges_are_checked_against_the_task_and_the_kind(fake_llm, files):
    bad = plan(metrics=["rougeL", "lamp_accuracy", "rouge-1"], judges=["gemba", "gmeba"], judge_model="gpt-9")
    errors = refused(bad, files)
    assert errors[0] == ("metrics: lamp_accuracy: is defined for LaMP-1 and LaMP-2 (LaMP's eval/evaluation.py), this "
                         "input is LaMP-4: use rouge1, rougeL")
    assert errors[1].startswith("metrics: rouge-1: unknown metric (did you mean `rouge1`?); known: ")
    assert "egises_jsd" in errors[1] and "lamp_f1" in errors[1]
    assert errors[2] == ("judges: gmeba: unknown judge (did you mean `gemba`?); known: expert, gemba, geval, "
                         "geval_prob, ip")
    assert errors[3].startswith("judge_model: unknown model 'gpt-9'")


def test_input_problems_are_listed_by_question(fake_llm, files):
    broken = copy.deepcopy(QUESTIONS) + [{"id": "313", "input": "", "profile": []}, {"id": "310", "input": "x"},
                                         {"id": "399", "input": "no gold", "profile": "nope"}]
    (files / "dev_questions.json").write_text(json.dumps(broken))
    assert refused(plan(), files) == [
        'input: dev_questions.json question 3: missing "input" text',
        "input: dev_questions.json question 4: id '310' appears twice",
        'input: dev_questions.json question 5: "profile" must be a list of objects']
    (files / "dev_questions.json").write_text(json.dumps(QUESTIONS)[:-30])
    assert refused(plan(), files)[0].startswith("input: dev_questions.json: element 2 is not valid JSON")
    (files / "dev_questions.json").write_text('{"id": 1}')
    assert refused(plan(), files) == ['input: dev_questions.json: expected a JSON array of questions ([{"id", '
                                      '"input", "profile"}, ...])']
    missing = plan()
    missing["input"]["outputs"] = "test_outputs.json"
    assert refused(missing, files) == [f"input.outputs: input file test_outputs.json does not exist next to the plan "
                                       f"({files})"]


def test_the_import_step_is_checked_first_an_existing_study_of_another_kind(fake_llm, files):
    Study.objects.create(slug="lamp4-pilot", kind="similarity_survey", title="A survey")
    assert refused(plan(), files) == ["study: study 'lamp4-pilot' is similarity_survey, the header says "
                                      "pairwise_alignment"]
    no_title = plan()
    del no_title["study"]["title"]
    no_title["study"]["slug"] = "new-one"
    assert refused(no_title, files) == ["study: 'title' is required to create a new study"]


def test_a_hostile_plan_is_a_clear_refusal_not_a_500():
    with pytest.raises(JobParamsError, match="nested more than 32 levels deep"):
        parse_plan("[" * 3000 + "]" * 3000)
    with pytest.raises(JobParamsError, match="a number of 5000 digits"):
        parse_plan('{"study": {"annotations_per_item": ' + "9" * 5000 + "}}")
    with pytest.raises(JobParamsError, match="NaN is not a number JSON allows"):
        parse_plan('{"generation": {"temperature": NaN}}')
    with pytest.raises(PlanInvalid, match="plan: must be a JSON object"):
        validate_plan([1], ".", ".")


def test_a_ranking_plan_needs_three_systems_and_writes_every_output(fake_llm, files):
    """A listwise ranking study shows every output at once: 3 to 8 systems; its items carry
    each system's output as a candidate, identical ones included (nothing merged)."""
    from evaluation.report.kinds import RANKING
    from models_runtime.plan_support.plan_kinds import PLAN_KINDS

    two = plan(study={**plan()["study"], "kind": RANKING})
    assert refused(two, files) == [f"systems: a {RANKING} study takes 3 to 8 systems (a list), got 2"]
    three = plan(study={**plan()["study"], "kind": RANKING},
                 systems=plan()["systems"] + [{"id": "bm25-k2", "model": "fake", "retriever": "bm25", "k": 2}])
    params = validate_plan(three, files, files / "work")
    assert params["study_header"]["instructions"].startswith("Read the request and the user's own expected output, "
                                                             "then rank")
    items = PLAN_KINDS[RANKING].items({"id": 7, "input": "Q", "output": "A"},
                                      [{"id": "a", "text": "same"}, {"id": "b", "text": "same "},
                                       {"id": "c", "text": "other"}], {"task": "LaMP-4"})
    assert items == [{"item_id": "7", "input": "Q", "reference": "A", "meta": {"task": "LaMP-4"},
                      "candidates": [{"id": "a", "text": "same"}, {"id": "b", "text": "same "},
                                     {"id": "c", "text": "other"}]}]


def test_a_plan_of_three_systems_opens_a_best_worst_study(fake_llm, files):
    """Issue 33: a plan with 3+ systems may build a best_worst study (every output on one
    screen, `tuple_size` passed through to the study); with two systems it is refused."""
    from evaluation.report.kinds import BEST_WORST
    from models_runtime.plan_support.plan_kinds import PLAN_KINDS

    three = plan(study={"slug": "lamp4-bws", "kind": BEST_WORST, "title": "BWS", "annotations_per_item": 3,
                        "tuple_size": 3},
                 systems=plan()["systems"] + [{"id": "recent-k2", "model": "fake", "retriever": "recency", "k": 2}])
    params = validate_plan(three, files, files / "work")
    assert params["study_header"]["kind"] == BEST_WORST and params["study_header"]["tuple_size"] == 3
    assert params["study_header"]["instructions"].startswith("Read the request and the user's own expected output")
    items = PLAN_KINDS[BEST_WORST].items({"id": 7, "input": "Q", "output": "Mine"},
                                         [{"id": s, "text": "same"} for s in ("a", "b", "c")], {"task": "LaMP-4"})
    assert items == [{"item_id": "7", "input": "Q", "reference": "Mine", "meta": {"task": "LaMP-4"},
                      "candidates": [{"id": "a", "text": "same"}, {"id": "b", "text": "same"},
                                     {"id": "c", "text": "same"}]}]
    two = plan(study={"slug": "lamp4-bws", "kind": BEST_WORST, "title": "BWS"})
    assert refused(two, files) == [f"systems: a {BEST_WORST} study takes 3 to 8 systems (a list), got 2"]
