"""Implicit-personalization probes (`manage.py probes ip PLAN.json`, the `ip` job, the plan
judge `ip`, the human study and its report) with a scripted backend whose answers are fixed
per (question, cue, sample): the exact Delta, interval, p and tables of
tests/evaluation/test_ip_effect.py come out of the whole chain. Bad probe files are refused
whole with their line numbers."""
import csv
import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from runtime_judges.scripted import ScriptedBackend

from annotate.models import Item, Prediction, Study
from evaluation.personalization.ip_effect import cue_effect, label_of
from evaluation.vocabulary import IP_PROBE_EVALUATOR
from models_runtime.ip.probes import SHIPPED, ProbeFileError, parse_probes, read_probes
from models_runtime.models import Job, JobItem
from tests.evaluation.test_ip_effect import ANSWERS, EXPECTED, D
from tests.factories import add_judgments

CI_METHOD = "bootstrap over questions (2000 resamples, seed 0; bias-corrected, expanded percentile)"

pytestmark = pytest.mark.django_db

SAMPLING = {"max_tokens": 16, "temperature": 0.7, "top_p": 1.0, "seed": 0}
# Two metric-scored questions (rouge1 against the reference "the cat sat"): sae answers
# "the cat sat" (F 1), aae answers "the cat" (P 1, R 2/3, F 0.8) -> d = -0.2 on each.
METRIC_ANSWERS = {"m1": ("the cat sat", "the cat"), "m2": ("the cat sat", "the cat")}


def probe_lines():
    lines = [{"id": q, "question": f"What is the game called ({q})?",
              "cues": {"us": f"[{q}|us] What is the game called? My favorite neighbor asks.",
                       "uk": f"[{q}|uk] What is the game called? My favourite neighbour asks."},
              "expected": EXPECTED} for q in ANSWERS]
    lines += [{"id": q, "question": "Describe the cat.", "cues": {"sae": f"[{q}|sae] Describe the cat.",
                                                                  "aae": f"[{q}|aae] Tell about the cat."},
               "rule": "metric", "metric": "rouge1", "reference": "the cat sat"} for q in METRIC_ANSWERS]
    return lines


def answer(text, params, j):
    """The fixed answer of sample j for the prompt's (question, cue)."""
    question, cue = text[1:text.index("]")].split("|")
    if question in METRIC_ANSWERS:
        return METRIC_ANSWERS[question][cue == "aae"]
    return ANSWERS[question][cue == "uk"][j]


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture
def scripted(monkeypatch, settings, tmp_path):
    settings.HUMEVAL_JOBS_DIR = str(tmp_path / "jobs")
    settings.CELERY_BROKER_URL = ""
    backend = ScriptedBackend(answer)
    monkeypatch.setattr("models_runtime.ip.job._backend", lambda model, device: backend)
    return backend


def write_plan(tmp_path, ip=None, **top):
    write_jsonl(tmp_path / "probes.jsonl", probe_lines())
    plan = {"ip": {"probes": "probes.jsonl", "samples": 3, "generation": SAMPLING, **(ip or {})}, **top}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def run_probes(path):
    out, err = StringIO(), StringIO()
    call_command("probes", "ip", str(path), stdout=out, stderr=err)
    return json.loads(out.getvalue())


def read_csv(path):
    with open(path, encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_probe_job_exact_delta_interval_p_and_tables(tmp_path, scripted):
    result = run_probes(write_plan(tmp_path))
    label, metric = result["effects"]
    assert (label["model"], label["cues"], label["score"]) == ("smollm2", ["us", "uk"], "label")
    assert label["delta"] == pytest.approx(2 / 9)
    assert label["ci95"] == pytest.approx(cue_effect(D)["ci95"], abs=1e-12)  # = the exact re-implementation
    assert label["ci_method"] == CI_METHOD
    assert (label["p_value"], label["p_method"]) == (0.625, "exact: all 64 cue swaps of 6 questions")
    assert (label["shift_b1"], label["shift_b0"]) == (pytest.approx(2 / 9), pytest.approx(0.0))
    assert (label["n_questions"], label["n_samples"], label["unscored_samples"]) == (6, 36, 0)
    # label counts over the 18 answers per cue (ANSWERS): under us, soccer 7, football 5, neither 6;
    # under uk, football 9, soccer 7, neither 1, both 1
    assert label["labels"] == {"us": {"other": 6, "uk": 5, "us": 7}, "uk": {"mixed": 1, "other": 1, "uk": 9, "us": 7}}
    assert (metric["cues"], metric["score"], metric["n_questions"], metric["n_samples"]) == \
        (["sae", "aae"], "metric:rouge1", 2, 12)
    assert metric["delta"] == pytest.approx(-0.2) and metric["ci95"] is None  # 2 questions: no interval
    assert metric["p_value"] == 0.5  # d = (-0.2, -0.2): 2 of the 4 swap patterns reach |mean| 0.2
    rows = [r for r in result["questions"] if r["score"] == "label"]
    assert [r["d"] for r in rows] == pytest.approx(D.tolist())
    assert rows[3]["labels_b1"] == {"mixed": 1, "other": 1, "uk": 1}
    # same model and sampling for every cue: one backend call, 16 prompts x 3 samples
    assert [(n, p.n, p.temperature, p.seed, p.max_new_tokens) for n, p in scripted.calls] == [(16, 3, 0.7, 0, 16)]
    job = Job.objects.get(kind="ip")
    assert (job.state, job.done, job.total) == ("done", 8, 8)
    assert job.files == ["ip_effects.csv", "ip_questions.csv", "ip_responses.csv"]
    effects = read_csv(result["files"]["ip_effects.csv"])
    assert [(e["b0"], e["b1"], e["score"], e["n_questions"], e["samples_per_cue"]) for e in effects] == \
        [("us", "uk", "label", "6", "3"), ("sae", "aae", "metric:rouge1", "2", "3")]
    assert [e["ci_method"] for e in effects] == [CI_METHOD, CI_METHOD]  # the rule, stated in the file
    assert float(effects[0]["delta"]) == pytest.approx(2 / 9) and effects[0]["labels_b0"] == "other=6 uk=5 us=7"
    questions = read_csv(result["files"]["ip_questions.csv"])
    assert [q["question"] for q in questions] == [*ANSWERS, *METRIC_ANSWERS]
    responses = read_csv(result["files"]["ip_responses.csv"])
    assert len(responses) == 6 * 2 * 3 + 2 * 2 * 3
    assert all(r["label"] == label_of(r["text"], EXPECTED) for r in responses if r["cue"] in ("us", "uk"))
    assert responses[0]["prompt"] == probe_lines()[0]["cues"]["us"]


def test_a_question_budget_is_its_own_backend_call(tmp_path, scripted):
    """A line's max_tokens replaces the plan's for every cue of that question: one backend
    call per budget, the same sampling otherwise; the effects do not change."""
    lines = probe_lines()
    lines[0]["max_tokens"] = 5
    lines[1]["max_tokens"] = 5
    write_jsonl(tmp_path / "probes.jsonl", lines)
    (tmp_path / "plan.json").write_text(json.dumps({"ip": {"probes": "probes.jsonl", "generation": SAMPLING}}))
    result = run_probes(tmp_path / "plan.json")
    assert [(n, p.n, p.temperature, p.max_new_tokens) for n, p in scripted.calls] == [(4, 3, 0.7, 5),
                                                                                     (12, 3, 0.7, 16)]
    assert scripted.seen[:4] == [lines[0]["cues"]["us"], lines[0]["cues"]["uk"], lines[1]["cues"]["us"],
                                 lines[1]["cues"]["uk"]]
    assert result["effects"][0]["delta"] == pytest.approx(2 / 9)


def test_a_failed_probe_job_resumes_without_asking_again(tmp_path, scripted, monkeypatch):
    """Ten questions = two chunks of 8 and 2. The backend breaks on the second call: the job
    fails with the first chunk's checkpoints; the same command resumes it and asks only the
    two questions left."""
    lines = probe_lines()[:6] + [dict(line, id=f"{line['id']}-again", cues={
        cue: prompt.replace("]", "-again]", 1) for cue, prompt in line["cues"].items()}) for line in probe_lines()[:4]]
    write_jsonl(tmp_path / "probes.jsonl", lines)
    (tmp_path / "plan.json").write_text(json.dumps({"ip": {"probes": "probes.jsonl", "generation": SAMPLING}}))

    def flaky(text, params, j):
        if len(scripted.calls) > 1:
            raise RuntimeError("the model server broke")
        return answer(text.replace("-again", ""), params, j)

    scripted.respond = flaky
    with pytest.raises(CommandError, match="RuntimeError: the model server broke"):
        run_probes(tmp_path / "plan.json")
    job = Job.objects.get(kind="ip")
    assert (job.state, JobItem.objects.filter(job=job).count()) == ("failed", 8)
    scripted.respond = lambda text, params, j: answer(text.replace("-again", ""), params, j)
    scripted.calls.clear()
    result = run_probes(tmp_path / "plan.json")
    assert [n for n, _ in scripted.calls] == [4]  # 2 questions x 2 cues
    assert Job.objects.filter(kind="ip").count() == 1 and result["effects"][0]["n_questions"] == 10


BAD_LINES = [
    {"id": "ok", "question": "Q?", "cues": {"us": "color?", "uk": "colour?"}, "expected": {"us": "a", "uk": "b"}},
    {"id": "no-uk", "question": "Q?", "cues": {"us": "color?", "uk": "colour?"}, "expected": {"us": "a"}},
    {"id": "blank", "question": "  ", "cues": {"us": "color?", "uk": "colour?"}, "expected": {"us": "a", "uk": "b"}},
    "",
    {"id": "ok", "question": "Q?", "cues": {"us": "gray?", "uk": "grey?"}, "expected": {"us": "a", "uk": "b"}},
    "{not json",
    {"id": "one-cue", "question": "Q?", "cues": {"us": "color?"}, "expected": {"us": "a"}},
    {"id": "essay", "question": "Q?", "cues": {"sae": "x", "aae": "y"}, "rule": "metric", "metric": "nonsense"},
    {"id": "typo", "question": "Q?", "cues": {"us": "color?", "uk": "colour?"}, "expectd": {"us": "a"}},
]
BAD_ERRORS = [
    "line 2: expected has no answer for cue 'uk'",
    "line 3: empty question",
    "line 5: duplicate id 'ok' (first on line 1)",
    "line 6: bad JSON: Expecting property name enclosed in double quotes at column 2",
    "line 7: 'cues' must map at least two cue names to their prompts",
    "line 8: unknown metric 'nonsense'",
    "line 9: unknown key 'expectd' (did you mean 'expected'?)",
]


def test_bad_probe_files_are_refused_whole_with_line_numbers(tmp_path, scripted):
    with pytest.raises(ProbeFileError) as err:
        read_probes(write_jsonl(tmp_path / "bad.jsonl", BAD_LINES))
    errors = err.value.errors
    assert [e.split(" (known")[0] for e in errors[:5]] == BAD_ERRORS[:5]
    assert errors[5].startswith(BAD_ERRORS[5] + " (known: ") and errors[6] == BAD_ERRORS[6]
    assert errors[7] == "line 9: no scoring rule: give 'expected' (rule label) or 'metric' (rule metric)"
    assert len(errors) == 8
    # the command refuses the plan before any job exists
    (tmp_path / "plan.json").write_text(json.dumps({"ip": {"probes": "bad.jsonl"}}))
    with pytest.raises(CommandError) as err:
        run_probes(tmp_path / "plan.json")
    assert "refused: line 2: expected has no answer for cue 'uk'; line 3: empty question; line 5:" in str(err.value)
    assert not Job.objects.exists() and not scripted.calls
    # more shapes: extra cue in expected, empty prompt, same prompts, rule/metric mix-ups, empty file
    lines = [
        {"id": "a", "question": "Q", "cues": {"us": "x", "uk": "y"}, "expected": {"us": "a", "uk": "b", "au": "c"}},
        {"id": "b", "question": "Q", "cues": {"us": "x", "uk": ""}, "expected": {"us": "a", "uk": "b"}},
        {"id": "c", "question": "Q", "cues": {"us": "x", "uk": "x"}, "expected": {"us": "a", "uk": "b"}},
        {"id": "d", "question": "Q", "cues": {"us": "x", "uk": "y"}, "expected": {"us": "a", "uk": []}},
        {"id": "e", "question": "Q", "cues": {"us": "x", "uk": "y"}, "rule": "metric", "expected": {"us": "a"}},
        {"id": "f", "question": "Q", "cues": {"us": "x", "other": "y"}, "expected": {"us": "a", "other": "b"}},
        {"id": "g", "question": 3, "cues": {"us": "x", "uk": "y"}, "expected": {"us": "a", "uk": "b"}},
        [1, 2],
        {"id": "h", "question": "Q", "cues": {"us": "x", "uk": "y"}, "expected": {"us": "a", "uk": "b"},
         "max_tokens": 0},
    ]
    with pytest.raises(ProbeFileError) as err:
        parse_probes((json.dumps(line) for line in lines), lambda name: None)
    assert err.value.errors == [
        "line 1: expected names cue 'au', which is not in cues",
        "line 2: cue 'uk' has an empty prompt",
        "line 3: two cues have the same prompt: the probe would change nothing",
        "line 4: the expected answer of cue 'uk' must be a non-empty string or list of strings",
        "line 5: 'expected' belongs to rule label; rule metric scores with 'metric'",
        "line 6: cue name 'other' must be letters, digits, '_', '.' or '-' (at most 40), not 'other' or 'mixed'",
        "line 7: 'question' must be a string",
        "line 8: expected a JSON object {id, question, cues, expected | metric}",
        "line 9: 'max_tokens' must be an integer from 1 to 4096",
    ]
    with pytest.raises(ProbeFileError, match="no probes: the file has no lines"):
        parse_probes(["\n"], lambda name: None)


def test_shipped_probe_set():
    """At least 30 American/British items with an expected answer per cue, and at least 10
    SAE/AAE/ESL essay prompts scored by the essay_quality judge. No prompt gives away one
    of its own expected answers."""
    probes = read_probes(SHIPPED)
    us_uk = [p for p in probes if list(p.cues) == ["us", "uk"] and p.rule == "label"]
    essays = [p for p in probes if list(p.cues) == ["sae", "aae", "esl"] and p.metric == "essay_quality"]
    assert len(us_uk) >= 30 and len(essays) >= 10 and len(us_uk) + len(essays) == len(probes)
    for p in us_uk:
        assert all(label_of(prompt, p.expected) == "other" for prompt in p.cues.values()), p.id
        assert set(p.expected["us"]).isdisjoint(p.expected["uk"]), p.id
    assert len({p.question for p in probes}) == len(probes)


def test_plan_errors_name_the_key(tmp_path, scripted):
    cases = [({"ip": {"sample": 3}}, "ip: unknown key `sample` (did you mean `samples`?)"),
             ({"ip": {"generation": {"temperature": 0.0}}},
              "samples 3 at temperature 0 would be 3 copies of the greedy answer"),
             ({"ip": {"models": ["nope"]}}, "unknown model 'nope'"),
             ({"ipp": {}}, "the plan: unknown key `ipp` (did you mean `ip`?)"),
             ({"ip": {"probes": "missing.jsonl"}}, "does not exist"),
             ({"ip": {"study": {"slug": "Bad Slug", "title": "x"}}}, "human study: slug must be 1-50 of a-z, 0-9, -"),
             ({"ip": {"samples": 0}}, "samples must be an integer from 1 to 100")]
    for plan, message in cases:
        (tmp_path / "plan.json").write_text(json.dumps(plan))
        with pytest.raises(CommandError) as err:
            run_probes(tmp_path / "plan.json")
        assert message in str(err.value)
    assert not Job.objects.exists()


def test_human_study_report_puts_delta_beside_the_human_rate(tmp_path, scripted):
    """Items for the first answers of each question whose two answers differ: q1, q2, q6 of
    the label pair (q3-q5 give the same first answer under both cues), m1 and m2 of the
    metric pair; two items each (user cue b0, user cue b1). Majorities on the label items:
    a us user's answer wins on q1 and q2, loses on q6; a uk user's wins on q1 and q6; q2 of
    the uk user has no majority. Human rate = 4 / 5."""
    study_header = {"slug": "ip-human", "title": "Which answer suits this user?", "annotations_per_item": 3}
    result = run_probes(write_plan(tmp_path, ip={"study": study_header}))
    human = result["human_study"]
    assert (human["slug"], human["n_items"], human["created"]) == ("ip-human", 10, 10)
    assert human["left_out"] == [{"model": "smollm2", "question": q, "cues": ["us", "uk"], "why": "identical answers"}
                                 for q in ("q3", "q4", "q5")]
    study = Study.objects.get(slug="ip-human")
    item = Item.objects.get(study=study, item_id="q1/us-uk/uk/smollm2")
    assert item.data["input"] == "What is the game called (q1)?"
    assert item.data["reference"] == "[q1|uk] What is the game called? My favourite neighbour asks."
    assert item.data["candidates"] == [{"id": "us", "text": "Soccer."}, {"id": "uk", "text": "Football."}]
    facts = dict(Prediction.objects.filter(item=item, evaluator=IP_PROBE_EVALUATOR).values_list("question", "value"))
    assert facts["user_cue"] == "uk" and float(facts["delta"]) == pytest.approx(2 / 9) and facts["p_value"] == "0.625"
    votes = {"q1/us-uk/us/smollm2": "us", "q2/us-uk/us/smollm2": "us", "q6/us-uk/us/smollm2": "uk",
             "q1/us-uk/uk/smollm2": "uk", "q6/us-uk/uk/smollm2": "uk"}
    rows = [(item_id, f"ann{k}", "choice", value, "us|uk", 5) for item_id, value in votes.items() for k in range(3)]
    rows += [("q2/us-uk/uk/smollm2", "ann0", "choice", "us", "us|uk", 5),
             ("q2/us-uk/uk/smollm2", "ann1", "choice", "uk", "us|uk", 5)]
    add_judgments(study, rows)
    from annotate.reports.data import study_report

    report, html = study_report(study, "html")
    label, metric = report["ip_probe"]
    assert (label["model"], label["cues"], label["score"]) == ("smollm2", ["us", "uk"], "label")
    assert label["probe"] == {"delta": pytest.approx(2 / 9), "ci95": pytest.approx(cue_effect(D)["ci95"]),
                              "ci_method": CI_METHOD, "p_value": 0.625, "n_questions": 6, "n_samples": 36}
    assert label["human"]["prefer_user_cue"] == pytest.approx(0.8)
    assert (label["human"]["n_decided"], label["human"]["n_items"], label["human"]["n_clusters"]) == (5, 6, 3)
    assert label["human"]["ci95"] is None and label["human"]["ci95_reason"].startswith("fewer than 5 questions")
    assert metric["probe"]["delta"] == pytest.approx(-0.2) and metric["human"]["prefer_user_cue"] is None
    assert "Implicit personalization probe" in html and "humans prefer the user&#x27;s cue" in html
    # the same command again: a new job, the study's items skipped, nothing duplicated
    again = run_probes(write_plan(tmp_path, ip={"study": study_header}))
    assert (again["human_study"]["created"], again["human_study"]["skipped"]) == (0, 10)
    assert Prediction.objects.filter(study=study, evaluator=IP_PROBE_EVALUATOR).count() == 10 * 11


def test_human_rate_interval_resamples_questions():
    """Five questions or more: the report's interval rule over questions (default_rng(0),
    2,000 rows of question indices, rate = wins / decided of each row; issue 31 item 12).
    Every question has 2 decided items, so a row's rate is its wins / 10, exact in
    integers: G = (#below 6 + #equal / 2 + 1/2) / 2001, bounds at 100 Phi(2 z0 -+ ze)."""
    from scipy.stats import norm
    from scipy.stats import t as student_t

    from evaluation.report.ip_probe import human_rate

    questions = ["a", "a", "b", "b", "c", "c", "d", "d", "e", "e", "f"]
    wins = np.array([1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0], dtype=float)
    decided = np.array([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0], dtype=float)  # f has no decided item
    rate = human_rate(questions, wins, decided)
    w, m = np.array([2, 1, 0, 2, 1.0]), np.array([2, 2, 2, 2, 2.0])
    idx = np.random.default_rng(0).integers(0, 5, (2000, 5))
    wins_of_row = w[idx].sum(1)
    g = (np.count_nonzero(wins_of_row < 6) + np.count_nonzero(wins_of_row == 6) / 2 + 0.5) / 2001
    z0, ze = norm.ppf(g), np.sqrt(5 / 4) * student_t.ppf(0.975, 4)
    expected = np.percentile(wins_of_row / m[idx].sum(1), [100 * norm.cdf(2 * z0 - ze), 100 * norm.cdf(2 * z0 + ze)])
    assert rate["prefer_user_cue"] == 0.6 and (rate["n_decided"], rate["n_items"], rate["n_clusters"]) == (10, 11, 5)
    assert rate["ci95"] == pytest.approx(expected.tolist(), abs=1e-12)
    assert rate["ci_method"] == "bootstrap over questions (2000 resamples, seed 0; bias-corrected, expanded percentile)"


def test_plan_judge_ip_runs_the_probe_as_a_pipeline_step(tmp_path, scripted, monkeypatch, settings):
    """A study plan with `"judges": ["ip"]`: the pipeline's score step scores the metrics
    only, and a fifth step runs the probe on the plan's model with the plan's `ip` section;
    the step's result holds the probe's job and effects."""
    from runtime.test_pipeline import OUTPUTS, QUESTIONS

    settings.HUMEVAL_GENERATION_CACHE = ""
    settings.HUMEVAL_PIPELINE_DIR = str(tmp_path / "work")
    titles = ScriptedBackend(lambda text, params, j: f"A title of {len(text)} characters")
    monkeypatch.setattr("models_runtime.backends.registry.get_backend", lambda name, device=None: titles)
    (tmp_path / "q.json").write_text(json.dumps(QUESTIONS))
    (tmp_path / "o.json").write_text(json.dumps(OUTPUTS))
    write_jsonl(tmp_path / "probes.jsonl", probe_lines())
    plan = {"study": {"slug": "lamp-ip", "kind": "pairwise_alignment", "title": "LaMP with a probe"},
            "input": {"format": "lamp", "questions": "q.json", "outputs": "o.json"},
            "systems": [{"id": "bm25", "model": "smollm2", "retriever": "bm25", "k": 1},
                        {"id": "none", "model": "smollm2", "retriever": "none"}],
            "metrics": ["rouge1"], "judges": ["ip"],
            "ip": {"probes": "probes.jsonl", "samples": 3, "generation": SAMPLING}}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    out = StringIO()
    call_command("pipeline", str(tmp_path / "plan.json"), stdout=out, stderr=StringIO())
    report = json.loads(out.getvalue())
    assert (report["state"], report["progress"]) == ("done", {"done": 5, "total": 5}), report
    steps = report["result"]["steps"]
    assert steps["score"]["result"]["metrics"] == ["rouge1"]
    probe = Job.objects.get(pk=steps["ip"]["job"])
    assert (probe.kind, probe.state, probe.study, probe.params["models"]) == ("ip", "done", "lamp-ip", ["smollm2"])
    label = steps["ip"]["effects"][0]
    assert (label["cues"], label["delta"], label["p_value"], label["n_questions"]) == \
        (["us", "uk"], pytest.approx(2 / 9), 0.625, 6)
    # a bad ip section is refused with the plan, before anything runs
    (tmp_path / "plan.json").write_text(json.dumps(dict(plan, ip={"probes": "probes.jsonl", "sampels": 2})))
    with pytest.raises(CommandError, match="ip: unknown key `sampels`"):
        call_command("pipeline", str(tmp_path / "plan.json"), stdout=StringIO(), stderr=StringIO())


@pytest.mark.django_db(transaction=True)  # the job runs in a thread with its own connection
def test_api_takes_an_uploaded_probe_file_never_a_path(client, scripted, plain_http):
    """POST /api/jobs/ kind `ip`: a server path is refused without a word about the file;
    an uploaded probe file runs (a thread of the web process without a broker) and its CSV
    tables download from the job's files."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from models_runtime.jobs import BACKGROUND_THREADS
    from tests.factories import ensure_roles, make_user

    ensure_roles()
    client.force_login(make_user("adm", "admins"))
    response = client.post("/api/jobs/", {"kind": "ip", "params": {"probes": "/etc/passwd"}},
                           content_type="application/json")
    assert (response.status_code, response.json()["error"].split(";")[:2]) == \
        (400, ["probes: the web and the API take no server paths", " upload probes as a multipart file field"])
    uploaded = "".join(json.dumps(line) + "\n" for line in probe_lines()).encode()
    response = client.post("/api/jobs/", {"kind": "ip", "params": json.dumps({"generation": SAMPLING}),
                                          "probes": SimpleUploadedFile("mine.jsonl", uploaded)})
    assert response.status_code == 201, response.content
    body = response.json()
    BACKGROUND_THREADS[body["id"]].join(60)
    job = Job.objects.get(pk=body["id"])
    assert (job.state, job.files) == ("done", ["probes.jsonl", "ip_effects.csv", "ip_questions.csv",
                                               "ip_responses.csv"])
    assert job.result["effects"][0]["delta"] == pytest.approx(2 / 9)
    got = client.get(f"/api/jobs/{job.pk}/files/ip_effects.csv")
    lines = b"".join(got.streaming_content).decode().splitlines()
    assert got.status_code == 200 and lines[0].startswith("model,b0,b1,score,delta,ci_low,ci_high,ci_method,p_value")
    assert lines[1].startswith("smollm2,us,uk,label,0.2222")


@pytest.mark.model
@pytest.mark.slow
def test_embedded_model_on_two_shipped_probes(tmp_path, settings):
    """SmolLM2 on two American/British questions of the shipped set, 2 samples at
    temperature 0.7, 12 new tokens: every stored label is what label_of gives for the
    answer's text, Delta is recomputed from the responses table, and the same plan again
    takes every answer from the generation cache (the same texts)."""
    settings.HUMEVAL_JOBS_DIR = str(tmp_path / "jobs")
    settings.HUMEVAL_GENERATION_CACHE = str(tmp_path / "generations.sqlite3")
    settings.CELERY_BROKER_URL = ""
    shipped = {p.id: p for p in read_probes(SHIPPED)}
    lines = [line for line in map(json.loads, SHIPPED.read_text().splitlines())
             if line["id"] in ("football-colour", "sport-name")]
    write_jsonl(tmp_path / "two.jsonl", lines)
    plan = {"ip": {"probes": "two.jsonl", "samples": 2, "generation": {"max_tokens": 12, "temperature": 0.7}},
            "device": "cpu"}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    result = run_probes(tmp_path / "plan.json")
    responses = read_csv(result["files"]["ip_responses.csv"])
    assert len(responses) == 2 * 2 * 2 and all(r["text"] for r in responses)
    assert all(r["label"] == label_of(r["text"], shipped[r["question"]].expected) for r in responses)
    signed = {"uk": 1, "us": -1}  # r of the label rule: +1 for the British answer, -1 for the American one

    def mean_r(question, cue):
        return np.mean([signed.get(r["label"], 0) for r in responses if (r["question"], r["cue"]) == (question, cue)])

    d = [mean_r(q, "uk") - mean_r(q, "us") for q in ("football-colour", "sport-name")]
    assert result["effects"][0]["delta"] == pytest.approx(np.mean(d))
    again = run_probes(tmp_path / "plan.json")
    assert read_csv(again["files"]["ip_responses.csv"]) == responses


def test_essay_quality_judge_scores_one_to_ten_and_skips_empty_essays():
    """The reference-free judge of the essay probes: one greedy call for the non-empty
    essays, the score parsed like GEMBA's (1..10); an empty essay and an answer without a
    score in range are unscored (None)."""
    from models_runtime.judges.essay import essay_scores

    answers = iter(["Score: 7", "I would rate it 12 out of 10", "8/10"])
    judge = ScriptedBackend(lambda text, params, j: next(answers))
    records = [{"input": "Q?", "output": "An essay."}, {"input": "Q?", "output": "  "},
               {"input": "Q?", "output": "Another."}, {"input": "Q?", "output": "Third."}]
    assert essay_scores(records, judge) == [7.0, None, None, 8.0]
    assert [(n, p.temperature, p.n) for n, p in judge.calls] == [(3, 0.0, 1)]
    assert "Question: Q?" in judge.seen[0] and "Essay: An essay." in judge.seen[0]
