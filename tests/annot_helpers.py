"""Small ORM factories for the annotator-experience tests (no dependency on the importer)."""
import pytest

from annotate.kinds import ASPECT_PAIRWISE, EXPLANATION_CHOICE, PAIRWISE_ALIGNMENT, SIMILARITY_SURVEY
from annotate.models import Item, Study


def explanation(tag):
    return {
        "score": 0.75, "precision": 0.5, "recall": 1.0,
        "variants": {"content": 1, "style": 0.5, "and": 0.5, "or": 1, "average": 0.75},
        "aspects_reference": [{"aspect": f"tone {tag}", "description": "A warm, chatty tone.",
                               "evidence": ["I loved every minute of it."]}],
        "aspects_generated": [{"aspect": f"plot {tag}", "description": "Summarises the plot.",
                               "evidence": ["The film follows a chef.", "She opens a bistro."]}],
        "matches": [{"side": "recall", "from": f"tone {tag}", "to": f"plot {tag}", "reason": "Both discuss the film.",
                     "content_match": True, "content_reason": "Same film.", "style_match": False,
                     "style_reason": "One is chatty, one is formal."}],
        "llm_calls": 7,
    }


def item_data(kind, i):
    """Display data of item number i for a kind (two candidates `m1`, `m2`)."""
    candidates = [{"id": "m1", "text": f"First response to request {i}."},
                  {"id": "m2", "text": f"Second response to request {i}."}]
    if kind == PAIRWISE_ALIGNMENT:
        return {"input": f"Write a review of film {i}.", "reference": f"My own review of film {i}.",
                "candidates": candidates, "metric_scores": {"rougeL": {"m1": 0.3, "m2": 0.2}}}
    if kind == EXPLANATION_CHOICE:
        return {"input": f"Write a review of film {i}.", "reference": f"My own review of film {i}.",
                "candidates": candidates, "explanations": {"m1": explanation("A"), "m2": explanation("B")}}
    if kind == SIMILARITY_SURVEY:
        pairs = [{"id": "ref", "source": "reference", "texts": [f"u1 summary {i}", f"u2 summary {i}"]}]
        pairs += [{"id": f"p{k}", "source": "model", "model": "smollm2", "prompt_style": "C-0-shot",
                   "texts": [f"model text {k} for u1", f"model text {k} for u2"]} for k in (1, 2, 3)]
        return {"document": {"id": f"doc{i}", "text": "A long news article."}, "users": ["u1", "u2"], "pairs": pairs}
    if kind == ASPECT_PAIRWISE:
        return {"premise": f"A lighthouse keeper finds a letter ({i}).",
                "candidates": [{"id": "plotA", "text": f"Plot one {i}."}, {"id": "plotB", "text": f"Plot two {i}."}]}
    raise ValueError(kind)


def make_study(kind=PAIRWISE_ALIGNMENT, slug=None, overlap=3, **fields):
    fields.setdefault("gold_rate", 0.0)
    return Study.objects.create(slug=slug or kind.replace("_", "-"), kind=kind, title=f"A {kind} study",
                                instructions="Read **carefully**.", annotations_per_item=overlap, **fields)


def make_items(study, n, start=0, gold=None):
    """n items item-0000... in import order; `gold` (a {question: value} dict) marks them gold."""
    prefix = "gold" if gold else "item"
    return [Item.objects.create(study=study, item_id=f"{prefix}-{i:04d}", position=i,
                                data=item_data(study.kind, i), gold=gold, is_gold=bool(gold),
                                content_hash=f"{prefix}{i}")
            for i in range(start, start + n)]


@pytest.fixture
def plain_http(settings):
    """The test client speaks http: no redirect to https. (Fast password hashing for
    every test is set in conftest.py.)"""
    settings.SECURE_SSL_REDIRECT = False


def ensure_roles():
    """Transactional tests flush the groups the migration made; put them back."""
    from django.contrib.auth.models import Group

    for name in ("admins", "researchers", "annotators"):
        Group.objects.get_or_create(name=name)


def make_person(username, role="annotators", password=None):
    """A user in `role` (None: no group); no password = unusable (no hashing cost)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create_user(username=username, password=password)
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture(scope="module")
def empty_tables_after_module(django_db_blocker):
    """After a module of transactional tests, leave the tables as empty as Django's flush
    means them to be. Something in these runs (post_migrate after a flush) re-creates
    content types and permissions, and a later `serialized_rollback` test then fails
    reloading its snapshot with duplicate keys; truncating them avoids that."""
    yield
    with django_db_blocker.unblock():
        from django.db import connection

        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("TRUNCATE django_content_type, auth_permission RESTART IDENTITY CASCADE")
            else:
                cursor.execute("DELETE FROM auth_permission")
                cursor.execute("DELETE FROM django_content_type")
