"""Shared test builders: users in each role, studies of every kind with items, gold items,
judgments and predictions written straight to the ORM (no importer, so each test states its
data in one place), batch lines for the importer, and an API client.

Texts here are written for the tests. Pytest fixtures built on these live in conftest.py.
"""
import json
from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import F
from django.utils import timezone
from rest_framework.test import APIClient

from annotate.models import Assignment, Item, Judgment, Prediction, Study
from annotate.participants.recruitment import new_entry_key
from annotate.roles import ROLES
from evaluation.report.kinds import PAIRWISE_ALIGNMENT

# --- users ---------------------------------------------------------------------------------


def ensure_roles():
    """Transactional tests flush the groups the migration made; put them back."""
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def make_user(username, role="annotators", password=None, **extra):
    """A user in `role` (one of annotate.roles.ROLES; None: no group). No password = unusable: the test logs
    in with force_login and pays no hashing. `extra`: is_superuser, is_staff..."""
    user = get_user_model().objects.create_user(username=username, password=password, **extra)
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def get_annotator(username):
    """The annotator called `username`, made on first use (judgment rows name them)."""
    user = get_user_model().objects.filter(username=username).first()
    return user or make_user(username)


def api_client(user=None):
    """A DRF test client authenticated as `user` (anonymous when None)."""
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def blinding(assignment_id):
    """The token mapping of an assignment (annotate.desk.blinding), made if it has none yet."""
    from annotate.desk.blinding import blinding_for

    return blinding_for(Assignment.objects.select_related("study", "item").get(pk=assignment_id))


def tokens(assignment_id, real_answers):
    """{question id: value} in real ids, as the annotator doors take it: in the tokens."""
    return blinding(assignment_id).values(real_answers)


# --- display data of items, per kind ---------------------------------------------------------


def two(a="x", b="y"):
    """Two candidates `a` and `b` with placeholder texts."""
    return [{"id": a, "text": f"text of {a}"}, {"id": b, "text": f"text of {b}"}]


def short_pairwise():
    """The smallest pairwise_alignment item: candidates m1/m2 with one-letter texts."""
    return {"input": "q", "reference": "r", "candidates": [{"id": "m1", "text": "a"}, {"id": "m2", "text": "b"}]}


def explanation(tag):
    """An ExPerT explanation whose aspect names carry `tag` (to tell two candidates apart)."""
    from annotate.kinds.explanation_choice import example_explanation

    return example_explanation(tag, 0.75)


def item_data(kind, i):
    """Display data of item number i of a kind: its example item i (StudyKind.example_item)."""
    from annotate.kinds import get_kind

    return {k: v for k, v in get_kind(kind).example_item(i).items() if k not in ("item_id", "meta", "gold")}


# --- studies, items, judgments, predictions (ORM) --------------------------------------------


def make_study(kind=PAIRWISE_ALIGNMENT, slug=None, overlap=3, **fields):
    """A study without items. Defaults: slug from the kind, gold_rate 0 (tests add the gold
    items they want and ask for a rate themselves)."""
    fields.setdefault("gold_rate", 0.0)
    fields.setdefault("title", f"A {kind} study")
    fields.setdefault("instructions", "Read **carefully**.")
    if fields.get("recruitment") and "entry_key" not in fields:  # opting in draws the link's key
        fields["entry_key"] = new_entry_key()
    return Study.objects.create(slug=slug or kind.replace("_", "-"), kind=kind, annotations_per_item=overlap,
                                **fields)


def participant_link(study, query=""):
    """The path of a recruiting study's participant link, with `query` ("?PROLIFIC_PID=..")."""
    return f"/p/{study.slug}/{study.entry_key}/{query}"


def make_items(study, n, start=0, gold=None):
    """n items item-0000... of item_data() in import order; `gold` (a {question: value}
    dict) makes them gold items gold-0000..."""
    prefix = "gold" if gold else "item"
    items = [Item.objects.create(study=study, item_id=f"{prefix}-{i:04d}", position=i,
                                 data=item_data(study.kind, i), gold=gold, is_gold=bool(gold),
                                 content_hash=f"{prefix}{i}")
             for i in range(start, start + n)]
    add_metric_scores(study, items)
    return items


def add_items(study, rows):
    """rows: [(item_id, data, gold-or-None)] in position order; returns {item_id: Item}.
    Their `metric_scores` become Prediction rows, as the importer writes them."""
    items = {item_id: Item.objects.create(study=study, item_id=item_id, position=position, data=data, gold=gold,
                                          is_gold=gold is not None, content_hash=item_id)
             for position, (item_id, data, gold) in enumerate(rows)}
    add_metric_scores(study, items.values())
    return items


def add_metric_scores(study, items):
    """The Prediction rows of the items' `metric_scores` (annotate.studies.importing.metric_predictions)."""
    from annotate.studies.importing import metric_predictions

    rows = metric_predictions(study, [(item.pk, item.data, item.data["metric_scores"]) for item in items
                                      if item.data.get("metric_scores")])
    Prediction.objects.bulk_create([Prediction(**row) for row in rows])


def add_judgments(study, rows):
    """rows: [(item_id, annotator, question, value, shown_order, seconds[, submitted_at])];
    annotators are made on first use."""
    items = {item.item_id: item for item in study.items.all()}
    Judgment.objects.bulk_create([
        Judgment(study=study, item=items[row[0]], annotator=get_annotator(row[1]), question=row[2], value=row[3],
                 shown_order=row[4], seconds=row[5], submitted_at=row[6] if len(row) > 6 else None)
        for row in rows])


def add_predictions(study, rows):
    """rows: [(item_id, evaluator, annotator, question, value)]."""
    items = {item.item_id: item for item in study.items.all()}
    Prediction.objects.bulk_create([
        Prediction(study=study, item=items[item_id], evaluator=evaluator, annotator=who, question=question,
                   value=value)
        for item_id, evaluator, who, question, value in rows])


def make_judged_study(slug, kind, items, judgments=(), predictions=(), overlap=3, **fields):
    """A study with its items, judgments and predictions in one call (the report tests'
    tables); the title is "Study <slug>"."""
    fields.setdefault("title", f"Study {slug}")
    study = make_study(kind, slug, overlap, **fields)
    add_items(study, items)
    add_judgments(study, judgments)
    complete_assignments(study, judgments)
    add_predictions(study, predictions)
    return study


def complete_assignments(study, judgment_rows):
    """One completed assignment per (item, annotator) of `judgment_rows`, with the item
    counters bumped, as submitting or importing makes (complete items count these)."""
    items = {item.item_id: item for item in study.items.all()}
    done = sorted({(row[0], row[1]) for row in judgment_rows})
    Assignment.objects.bulk_create([Assignment(study=study, item=items[item_id], annotator=get_annotator(who),
                                               completed_at=timezone.now()) for item_id, who in done])
    for item_id, _ in done:
        Item.objects.filter(pk=items[item_id].pk).update(n_assigned=F("n_assigned") + 1,
                                                         n_completed=F("n_completed") + 1)


PERSE_T0 = datetime(2026, 1, 1, tzinfo=UTC)
PERSE_ASPECTS = [{"key": "ending", "question": "Which story has a better ending?"},
                 {"key": "surprise", "question": "Which story plot created more suspense and surprise?"}]


def perse_study():
    """The PerSE tests' aspect_pairwise study "perdoc-mini": 3 items; ann1 judges all three on
    both aspects (items in order 0, 1, 2), ann2 judges item 0 only (no profile possible ->
    skipped). A gold item is ignored."""
    items = [(f"p{i}", {"premise": f"Premise {i}.",
                        "candidates": [{"id": f"a{i}", "text": f"Plot A{i} ends happily."},
                                       {"id": f"b{i}", "text": f"Plot B{i} ends in a twist."}]}, None)
             for i in range(3)]
    items.append(("g", {"premise": "G", "candidates": [{"id": "ga", "text": "x"}, {"id": "gb", "text": "y"}]},
                  {"ending": "ga"}))
    judgments = []
    for key, values in {"ending": ["b0", "a1", "b2"], "surprise": ["a0", "a1", "a2"]}.items():
        judgments += [(f"p{i}", "ann1", key, value, "", None, PERSE_T0 + timedelta(minutes=i))
                      for i, value in enumerate(values)]
        judgments.append(("p0", "ann2", key, "a0", "", None, PERSE_T0))
    judgments.append(("g", "ann1", "ending", "ga", "", None, PERSE_T0))
    return make_judged_study("perdoc-mini", "aspect_pairwise", items, judgments, title="t",
                             config={"aspects": PERSE_ASPECTS})


# --- batch lines (the importer's input) ------------------------------------------------------


def header(slug, kind, **extra):
    """A batch file's first line."""
    return {"study": {"slug": slug, "kind": kind, "title": f"Test {kind}", **extra}}


def pairwise(item_id, **extra):
    return {"item_id": item_id, "input": "Write a note to my landlord about the heater.",
            "reference": "Hi Sam, the heater clicks but stays cold. Could you look at it this week? Thanks, Ana",
            "candidates": [{"id": "m1", "text": "Dear landlord, the heater is broken."},
                           {"id": "m2", "text": "Hi Sam, heater's cold again, could you come by? Ana"}], **extra}


def _flat_explanation(score):
    """An explanation whose every figure is `score`."""
    return {"score": score, "precision": score, "recall": score,
            "variants": {"content": score, "style": score, "and": score, "or": score, "average": score},
            "aspects_reference": [{"aspect": "request", "description": "asks for a repair",
                                   "evidence": ["Could you look at it"]}],
            "aspects_generated": [{"aspect": "request", "description": "asks for a visit",
                                   "evidence": ["could you come by"]}],
            "matches": [{"side": "recall", "from": "request", "to": "request", "reason": "same ask",
                         "content_match": True, "content_reason": "both ask", "style_match": True,
                         "style_reason": "both casual"}],
            "llm_calls": 4}


def explained(item_id, **extra):
    item = pairwise(item_id)
    item["explanations"] = {"m1": _flat_explanation(0.25), "m2": _flat_explanation(0.75)}
    item.update(extra)
    return item


def similarity(item_id, **extra):
    return {"item_id": item_id, "document": {"id": "d1", "title": "Rain", "text": "Heavy rain closed two bridges."},
            "users": ["u1", "u2"],
            "pairs": [{"id": "ref", "source": "reference", "texts": ["Bridges shut", "Storm hits town"]},
                      {"id": "gen-c0", "source": "model", "model": "smollm2", "prompt_style": "C-0-shot",
                       "texts": ["Rain closes bridges", "Rain closes two bridges"]}], **extra}


def aspects(item_id, **extra):
    return {"item_id": item_id, "premise": "A lighthouse keeper finds a letter addressed to her future self.",
            "candidates": [{"id": "plot-a", "text": "She answers it and starts a correspondence with time."},
                           {"id": "plot-b", "text": "She burns it, and the lighthouse goes dark."}], **extra}


def example_line(kind):
    """A batch line maker for `kind`: its example item 0 with the given item_id and keys."""
    from annotate.kinds import get_kind

    return lambda item_id, **extra: {**get_kind(kind).example_item(0), "item_id": item_id, **extra}


def _samples():
    from annotate.kinds import KINDS

    return {kind: example_line(kind) for kind in KINDS}


SAMPLES = _samples()  # kind -> batch line maker, every registered kind


def jsonl(*objects):
    """The file bytes: one JSON object a line."""
    return ("\n".join(json.dumps(o) for o in objects) + "\n").encode("utf-8")


def write(tmp_path, *objects, name="batch.jsonl"):
    path = tmp_path / name
    path.write_bytes(jsonl(*objects))
    return path


def demo_answer(question, k, item_index):
    """A deterministic judgment value for demo question `question` by annotator k."""
    if "options" in question:
        options = [o for o in question["options"] if o != "tie"]
        return options[(k + item_index) % 3 == 0]
    lo, hi = question["scale"]
    return str(min(hi, lo + (k + 2 * item_index) % (hi - lo + 1)))


def judge_every_item(study, annotators=3):
    """Every question of every item of `study` answered by `annotators` annotators
    (demo-judge0, ...), with deterministic values (the demo studies' reports)."""
    from annotate.kinds import questions_for

    rows = []
    for index, item in enumerate(study.items.order_by("position")):
        for k in range(annotators):
            for q in questions_for(study.kind, {**study.config, "allow_tie": study.allow_tie}, item.data):
                rows.append(Judgment(study=study, item=item, annotator=get_annotator(f"demo-judge{k}"),
                                     question=q["id"], value=demo_answer(q, k, index),
                                     shown_order="|".join(q.get("options", [])), seconds=4.0))
    Judgment.objects.bulk_create(rows)


# Helpers only the tests use (issue 32 moved them out of the product).

def is_annotator(user):
    from annotate.roles import ANNOTATORS, has_role

    return has_role(user, ANNOTATORS)


def demo_slugs():
    """{kind: the slug of its demo study}, every registered kind."""
    from annotate.kinds import all_kinds

    return {kind.name: kind.demo_slug for kind in all_kinds()}
