"""ORM factories for the report tests: a study with items, judgments and predictions,
written directly (no importer), so each test states its data in one table."""
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from annotate.models import Item, Judgment, Prediction, Study


def user(username, role="annotators"):
    account, created = get_user_model().objects.get_or_create(username=username)
    if created:
        account.set_unusable_password()
        account.save()
        account.groups.add(Group.objects.get(name=role))
    return account


def make_study(slug, kind, items, judgments=(), predictions=(), overlap=3, **fields):
    """items: [(item_id, data, gold-or-None)]; judgments: [(item_id, annotator, question,
    value, shown_order, seconds[, submitted_at])]; predictions: [(item_id, evaluator, annotator, question, value)]."""
    study = Study.objects.create(slug=slug, kind=kind, title=f"Study {slug}", annotations_per_item=overlap, **fields)
    by_id = {}
    for position, (item_id, data, gold) in enumerate(items):
        by_id[item_id] = Item.objects.create(study=study, item_id=item_id, position=position, data=data,
                                             gold=gold, is_gold=gold is not None, content_hash=item_id)
    Judgment.objects.bulk_create([
        Judgment(study=study, item=by_id[row[0]], annotator=user(row[1]), question=row[2], value=row[3],
                 shown_order=row[4], seconds=row[5], submitted_at=row[6] if len(row) > 6 else None)
        for row in judgments])
    Prediction.objects.bulk_create([
        Prediction(study=study, item=by_id[item_id], evaluator=evaluator, annotator=who, question=question, value=value)
        for item_id, evaluator, who, question, value in predictions])
    return study


def two(a="x", b="y"):
    return [{"id": a, "text": f"text of {a}"}, {"id": b, "text": f"text of {b}"}]
