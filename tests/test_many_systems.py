"""Issue 22 (annotation side): items with 2 to 8 candidates in the pairwise kinds
(studies.md "More than two systems in one study"). The batch's refusals (exact messages,
nothing written, through the command and the API), the pair each assignment shows (least
shown in the whole study, then on the item, then a seeded draw; A/B the same way), what
the annotator sees and may answer (the shown pair's tokens only), and the judgments'
round trip through export and import_judgments. Concurrency: test_assignment_concurrency.py;
the 5-system study through the REST API: test_many_systems_api.py."""
import io
import itertools
import json
import random
from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from annotate.desk.assignment import next_assignment
from annotate.kinds import get_kind
from annotate.kinds.two_candidate import pair_order
from annotate.models import AuditLog, Batch, Item, Judgment, Prediction, Study
from annotate.studies.answers import OPTION_REFUSED
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import import_judgments
from evaluation.report.kinds import ASPECT_PAIRWISE, EXPLANATION_CHOICE, PAIRWISE_ALIGNMENT
from tests.factories import api_client, blinding, explanation, header, jsonl, make_user, write

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
PAIRWISE_KINDS = (PAIRWISE_ALIGNMENT, EXPLANATION_CHOICE, ASPECT_PAIRWISE)
SYSTEMS = ("bm25-k1", "bm25-k4", "contriever", "recency", "no-profile", "oracle", "random", "sft")


def said(cid, item_id):
    """A candidate's text: which system's by its number, never its name."""
    return f"Output {SYSTEMS.index(cid) if cid in SYSTEMS else cid[::-1]} for {item_id}."


def line(kind, item_id, ids, **extra):
    """A batch line of `kind` whose candidates have the ids `ids`."""
    candidates = [{"id": cid, "text": said(cid, item_id)} for cid in ids]
    if kind == ASPECT_PAIRWISE:
        return {"item_id": item_id, "premise": f"Premise {item_id}.", "candidates": candidates, **extra}
    out = {"item_id": item_id, "input": f"Request {item_id}.", "reference": f"The user's text {item_id}.",
           "candidates": candidates, **extra}
    if kind == EXPLANATION_CHOICE:
        out["explanations"] = {cid: explanation(f"T{SYSTEMS.index(cid)}") for cid in dict.fromkeys(ids)
                               if cid in SYSTEMS}
    return out


def nothing_written():
    return (Study.objects.count(), Item.objects.count(), Batch.objects.count(), AuditLog.objects.count(),
            Prediction.objects.count()) == (0, 0, 0, 0, 0)


# --- the batch: what is taken, what is refused --------------------------------------------------

@pytest.mark.parametrize("kind", PAIRWISE_KINDS)
def test_two_to_eight_candidates_and_a_mix_of_counts_are_taken(kind):
    """The spec sets no number per study: one batch may mix items of 2, 3 and 8 candidates
    (docs/formats.md: gold items keep two, so a study of five systems has gold items too)."""
    lines = [line(kind, "two", SYSTEMS[:2]), line(kind, "three", SYSTEMS[:3]), line(kind, "eight", SYSTEMS),
             line(kind, "gold", SYSTEMS[:2], gold=SYSTEMS[0])]
    result = import_batch_bytes(jsonl(header("many", kind), *lines))
    assert result.as_json() == {"study": "many", "created": 4, "skipped": 0}
    kind_obj = get_kind(kind)
    assert [kind_obj.candidate_ids(i.data) for i in Item.objects.order_by("position")] == [
        list(SYSTEMS[:2]), list(SYSTEMS[:3]), list(SYSTEMS), list(SYSTEMS[:2])]


REFUSALS = {
    "one candidate": ([SYSTEMS[0]], {}, "line 3: 'candidates' must be a list of 2 to 8, got 1"),
    "nine candidates": ([*SYSTEMS, "ninth"], {}, "line 3: 'candidates' must be a list of 2 to 8, got 9"),
    "duplicate ids": (["a", "b", "a"], {}, "line 3: candidates 1 and 3 have the same id 'a'"),
    "gold with three": (SYSTEMS[:3], {"gold": SYSTEMS[0]},
                        "line 3: 'gold' needs an item with exactly 2 candidates (this one has 3; an annotator is "
                        "shown two of them)"),
}


def refused_batch(kind, case):
    ids, extra, expected = REFUSALS[case]
    lines = [header("refused", kind), line(kind, "fine", SYSTEMS[:3]), line(kind, "bad", ids, **extra)]
    return lines, expected


@pytest.mark.parametrize("case", list(REFUSALS))
@pytest.mark.parametrize("kind", PAIRWISE_KINDS)
def test_bad_candidates_are_refused_by_the_command_with_nothing_written(kind, case, tmp_path):
    lines, expected = refused_batch(kind, case)
    err = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("import_batch", str(write(tmp_path, *lines)), stdout=io.StringIO(), stderr=err)
    assert caught.value.returncode == 1
    assert err.getvalue().splitlines() == [expected]
    assert nothing_written()


@pytest.mark.parametrize("case", list(REFUSALS))
@pytest.mark.parametrize("kind", PAIRWISE_KINDS)
def test_bad_candidates_are_refused_by_the_api_with_nothing_written(kind, case):
    lines, expected = refused_batch(kind, case)
    response = api_client(make_user("admin-many", "admins")).post(
        "/api/studies/refused/batches/", jsonl(*lines), content_type="application/x-ndjson")
    assert (response.status_code, response.json()) == (400, {"errors": [expected]})
    assert nothing_written()


# --- which pair an assignment shows -------------------------------------------------------------

class Coin:
    """An rng whose draws are given: randrange takes the next of `picks`, random the next of `coins`."""

    def __init__(self, picks=(), coins=()):
        self.picks, self.coins = list(picks), list(coins)

    def randrange(self, n):
        pick = self.picks.pop(0)
        assert 0 <= pick < n
        return pick

    def random(self):
        return self.coins.pop(0)


def test_the_pair_least_shown_in_the_study_then_on_the_item_then_drawn():
    ids = ["a", "b", "c"]
    # Study: (a,b) 2, (a,c) 1, (b,c) 1. Least in the study: {a,c} and {b,c}; the item showed c-a once -> b,c.
    study = Counter({("a", "b"): 1, ("b", "a"): 1, ("c", "a"): 1, ("b", "c"): 1})
    assert pair_order(ids, [{"candidates": ["c", "a"]}], study, True, Coin()) == ["c", "b"]  # b-first shown once
    # Nothing shown anywhere: all three tie; the draw picks the 3rd pair of combinations (b, c),
    # then the coin (0.7 >= 0.5) shows it as c, b.
    assert pair_order(ids, [], Counter(), True, Coin(picks=[2], coins=[0.7])) == ["c", "b"]
    assert pair_order(ids, [], Counter(), True, Coin(picks=[0], coins=[0.2])) == ["a", "b"]
    # The orientation: fewer in the study first (a,c: a-first once), then fewer on the item.
    assert pair_order(ids, [], Counter({("a", "b"): 1, ("b", "a"): 1, ("a", "c"): 1, ("c", "b"): 1,
                                        ("b", "c"): 1}), True, Coin()) == ["c", "a"]
    assert pair_order(ids, [{"candidates": ["b", "c"]}],
                      Counter({("a", "b"): 1, ("b", "a"): 1, ("a", "c"): 1, ("c", "a"): 1}), True, Coin()) == ["c", "b"]
    # randomize_order off: the pair still balanced, shown in the item's order.
    study = Counter({("a", "b"): 2, ("a", "c"): 2, ("b", "c"): 1})
    assert pair_order(ids, [], study, True, Coin()) == ["c", "b"]
    assert pair_order(ids, [], study, False, Coin()) == ["b", "c"]


def simulate(n_systems, n_items, overlap, seed=0):
    """The engine's rule applied in sequence: (study pair counts, [(item, order)])."""
    ids = list(SYSTEMS[:n_systems])
    study, orders = Counter(), {i: [] for i in range(n_items)}
    rng = random.Random(seed)
    for _ in range(overlap):
        for i in range(n_items):
            order = pair_order(ids, orders[i], study, True, rng)
            orders[i].append({"candidates": order})
            study[tuple(order)] += 1
    return study


@pytest.mark.parametrize("n_systems", [3, 4, 5, 8])
def test_pairs_and_orientations_stay_within_one_over_the_study(n_systems):
    study = simulate(n_systems, n_items=20, overlap=3)
    unordered = Counter({pair: study[pair] + study[pair[::-1]]
                         for pair in itertools.combinations(SYSTEMS[:n_systems], 2)})
    assert sum(unordered.values()) == 60
    assert max(unordered.values()) - min(unordered.values()) <= 1
    assert all(abs(study[pair] - study[pair[::-1]]) <= 1 for pair in unordered)


def multi_study(kind=PAIRWISE_ALIGNMENT, n_items=4, ids=SYSTEMS[:4], overlap=3, **extra):
    import_batch_bytes(jsonl(header("multi", kind, annotations_per_item=overlap, **extra),
                             *[line(kind, f"q{i}", ids) for i in range(n_items)]))
    return Study.objects.get(slug="multi")


def test_the_engine_balances_pairs_over_the_study():
    """4 systems, 4 items x 3 annotators = 12 assignments: each of the 6 pairs twice, once
    each way; each assignment's judgment records the two shown (and tie)."""
    study = multi_study(allow_tie=True)
    people = [make_user(f"ann{k}") for k in range(3)]
    for user in people:
        while (assignment := next_assignment(study, user)) is not None:
            first, second = assignment.shown_order["candidates"]
            assert assignment.shown_order["choice"] == [first, second, "tie"]
            api_client(user).post(f"/api/assignments/{assignment.pk}/judgments/",
                                  {"choice": blinding(assignment.pk).option(first)}, format="json")
    orders = Counter(tuple(j.shown_order.split("|")[:2]) for j in Judgment.objects.all())
    assert orders == {pair: 1 for a, b in itertools.combinations(SYSTEMS[:4], 2) for pair in ((a, b), (b, a))}
    assert all(j.value == j.shown_order.split("|")[0] for j in Judgment.objects.all())


def test_two_candidates_keep_their_per_item_order():
    """With exactly two candidates nothing changes: issue 4's per-item counterbalancing, each
    item shown each way twice to four annotators."""
    study = multi_study(ids=SYSTEMS[:2], n_items=2, overlap=4)
    for k in range(4):
        user = make_user(f"ann{k}")
        while (assignment := next_assignment(study, user)) is not None:
            api_client(user).post(f"/api/assignments/{assignment.pk}/judgments/",
                                  {"choice": blinding(assignment.pk).option("bm25-k1")}, format="json")
    per_item = Counter((a.item.item_id, a.shown_order["candidates"][0]) for a in study.assignments.all())
    assert per_item == {("q0", "bm25-k1"): 2, ("q0", "bm25-k4"): 2, ("q1", "bm25-k1"): 2, ("q1", "bm25-k4"): 2}


# --- what the annotator sees and may answer ----------------------------------------------------------

@pytest.mark.parametrize("kind", PAIRWISE_KINDS)
def test_the_annotator_sees_and_answers_only_the_shown_pair(kind):
    study = multi_study(kind, n_items=1, ids=SYSTEMS[:5], overlap=1)
    user = make_user("ann-pair")
    client = api_client(user)
    body = client.post(f"/api/studies/{study.slug}/assignments/next/").json()
    assignment = study.assignments.get()
    shown = assignment.shown_order["candidates"]
    tokens = blinding(assignment.pk)
    assert sorted(tokens.options.values()) == sorted(shown)  # tokens for the shown two only
    assert [c["id"] for c in body["item"]["candidates"]] == [tokens.option(cid) for cid in shown]
    text = json.dumps(body)
    assert not any(cid in text for cid in SYSTEMS)  # no system name, shown or not
    hidden = [cid for cid in SYSTEMS[:5] if cid not in shown]
    marker = (lambda cid: f"T{SYSTEMS.index(cid)}\"") if kind == EXPLANATION_CHOICE else (lambda cid: said(cid, "q0"))
    assert [marker(cid) in text for cid in SYSTEMS[:5]] == [cid in shown for cid in SYSTEMS[:5]]
    choices = [q for q in body["questions"] if "options" in q]
    assert all(q["options"] == [tokens.option(cid) for cid in shown] for q in choices)
    # A hidden candidate's id, or a shown one's real id: refused, nothing written.
    for bad in (hidden[0], shown[0]):
        answers = {q["id"]: bad if "options" in q else q["scale"][0] for q in body["questions"]}
        refused = client.post(f"/api/assignments/{assignment.pk}/judgments/", answers, format="json")
        assert (refused.status_code, refused.json()) == (400, {"errors": {q["id"]: OPTION_REFUSED for q in choices}})
    assert Judgment.objects.count() == 0
    answers = {q["id"]: q["options"][1] if "options" in q else q["scale"][0] for q in body["questions"]}
    assert client.post(f"/api/assignments/{assignment.pk}/judgments/", answers, format="json").status_code == 201
    assert {j.value for j in Judgment.objects.filter(question__in=[q["id"] for q in choices])} == {shown[1]}
    assert {j.shown_order for j in Judgment.objects.filter(question__in=[q["id"] for q in choices])} == {
        "|".join(shown)}


def test_the_task_page_draws_the_shown_pair_only():
    from django.test import Client

    study = multi_study(n_items=1, ids=SYSTEMS[:4], overlap=1)
    client = Client()
    client.force_login(make_user("ann-page"))
    html = client.post(f"/annotate/{study.slug}/next/", HTTP_HX_REQUEST="true").content.decode()
    assignment = study.assignments.get()
    shown = assignment.shown_order["candidates"]
    tokens = blinding(assignment.pk)
    assert [said(cid, "q0") in html for cid in SYSTEMS[:4]] == [cid in shown for cid in SYSTEMS[:4]]
    assert html.count('type="radio" name="q:choice"') == 2
    assert not any(cid in html for cid in SYSTEMS)
    saved = client.post(f"/annotate/{study.slug}/items/{assignment.pk}/submit/",
                        {"q:choice": tokens.option(shown[0]), "seconds": "3"}, HTTP_HX_REQUEST="true")
    assert "Saved." in saved.content.decode()
    assert Judgment.objects.get().value == shown[0]


# --- judgments out and in ----------------------------------------------------------------------------

def judged_study():
    study = multi_study(n_items=3, ids=SYSTEMS[:3], overlap=2, allow_tie=True)
    for k in range(2):
        user = make_user(f"ann{k}")
        while (assignment := next_assignment(study, user)) is not None:
            pick = assignment.shown_order["candidates"][k] if k == 0 else "tie"
            api_client(user).post(f"/api/assignments/{assignment.pk}/judgments/",
                                  {"choice": blinding(assignment.pk).option(pick)}, format="json")
    return study


def export(slug, fmt):
    out = io.StringIO()
    call_command("export_judgments", slug, "--format", fmt, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_keeps_the_real_pair_and_imports_back(fmt):
    study = judged_study()
    exported = export(study.slug, fmt)
    stored = sorted(Judgment.objects.values_list("item__item_id", "annotator__username", "value", "shown_order"))
    assert all(len(order.split("|")) == 3 and order.endswith("|tie") for *_, order in stored)
    batch = [header("multi", PAIRWISE_ALIGNMENT, annotations_per_item=2, allow_tie=True),
             *[line(PAIRWISE_ALIGNMENT, f"q{i}", SYSTEMS[:3]) for i in range(3)]]
    study.delete()
    import_batch_bytes(jsonl(*batch))
    assert import_judgments(io.BytesIO(exported.encode()))["created"] == 6
    assert sorted(Judgment.objects.values_list("item__item_id", "annotator__username", "value",
                                               "shown_order")) == stored
    assert export("multi", fmt) == exported
    # The imported assignments name their pair, so the engine counts it in the study's pairs.
    pairs = Counter(tuple(a.shown_order["candidates"]) for a in Study.objects.get(slug="multi").assignments.all())
    assert pairs == Counter(tuple(order.split("|")[:2]) for *_, order in stored)


def judgment_row(**cells):
    row = {"study": "multi", "item_id": "q0", "annotator": "imp", "question": "choice", "value": "bm25-k1",
           "shown_order": "bm25-k1|bm25-k4|tie", "seconds": "", "submitted_at": "", "comment": ""}
    row.update(cells)
    return row


IMPORT_REFUSALS = {
    "no shown order": ({"shown_order": ""},
                       "line 2: shown_order must name the 2 candidates shown (of bm25-k1|bm25-k4|contriever; then "
                       "'tie' where the study allows it), got ''"),
    "all three": ({"shown_order": "bm25-k1|bm25-k4|contriever"},
                  "line 2: shown_order must name the 2 candidates shown (of bm25-k1|bm25-k4|contriever; then 'tie' "
                  "where the study allows it), got 'bm25-k1|bm25-k4|contriever'"),
    "the same twice": ({"shown_order": "bm25-k1|bm25-k1"},
                       "line 2: shown_order must name the 2 candidates shown (of bm25-k1|bm25-k4|contriever; then "
                       "'tie' where the study allows it), got 'bm25-k1|bm25-k1'"),
    "value not shown": ({"value": "contriever"},
                        "line 2: value 'contriever' is not one of the candidates shown (bm25-k1|bm25-k4)"),
}


@pytest.mark.parametrize("case", list(IMPORT_REFUSALS))
def test_imported_judgments_name_the_pair_they_compared(case):
    multi_study(n_items=1, ids=SYSTEMS[:3], allow_tie=True)
    cells, expected = IMPORT_REFUSALS[case]
    data = json.dumps(judgment_row(**cells)).encode() + b"\n"
    with pytest.raises(BatchInvalid) as caught:
        import_judgments(io.BytesIO(json.dumps(judgment_row(annotator="imp2", value="tie",
                                                            shown_order="contriever|bm25-k1|tie")).encode()
                                    + b"\n" + data))
    assert caught.value.errors == [expected]
    assert Judgment.objects.count() == 0


def test_the_runtime_reads_a_judgment_with_the_pair_its_annotator_saw():
    """PerSE's per-annotator judge builds its prompts from judged items (Plot A / Plot B):
    services hands it each judgment's item as its annotator saw it, the shown pair only."""
    from annotate import services
    from models_runtime.judges.perse import build_prompt

    study = multi_study(ASPECT_PAIRWISE, n_items=2, ids=SYSTEMS[:3], overlap=1,
                        aspects=[{"key": "fun", "question": "Which is more fun?"}])
    user = make_user("ann-perse")
    while (assignment := next_assignment(study, user)) is not None:
        api_client(user).post(f"/api/assignments/{assignment.pk}/judgments/",
                              {"fun": blinding(assignment.pk).option(assignment.shown_order["candidates"][1])},
                              format="json")
    judged = services.judgments_for_perse(study.slug, ["fun"])
    shown = {a.item.pk: a.shown_order["candidates"] for a in study.assignments.all()}
    assert [sorted(c["id"] for c in j.item_data["candidates"]) for j in judged] == [
        sorted(shown[int(j.item_key)]) for j in judged]
    assert all(j.value == shown[int(j.item_key)][1] for j in judged)
    prompt = build_prompt("Which is more fun?", [(judged[0].item_data, judged[0].value)], judged[1].item_data)
    item_ids = dict(Item.objects.values_list("pk", "item_id"))
    assert all(said(cid, item_ids[int(j.item_key)]) in prompt[0]["content"]
               for j in judged for cid in shown[int(j.item_key)])


def test_a_skip_on_an_item_of_three_needs_no_pair():
    """'I can't judge this' names no pair: its row imports with an empty shown_order."""
    multi_study(n_items=1, ids=SYSTEMS[:3])
    row = judgment_row(question="_skip", value="other", shown_order="")
    assert import_judgments(io.BytesIO(json.dumps(row).encode() + b"\n"))["created"] == 1
    assert Judgment.objects.get().question == "_skip"
