"""The one door from `models_runtime` into `annotate`.

The runtime (metrics, judges, jobs) reads studies and writes predictions only through the
functions here, so the annotate tables can change without the runtime noticing. Items
travel as plain frozen records keyed by `key` (the item's primary key as text: stable,
unique, and what a job checkpoints), never as model instances.
"""
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import transaction

from annotate.access import may_read_results, may_read_study
from annotate.api.permissions import IsAdminRole
from annotate.api.serializers import DetailSerializer, IsoDateTimeField, json_as
from annotate.kinds import get_kind, study_config
from annotate.kinds.base import CANDIDATES_KEY, ScoreTarget
from annotate.models import Item, Judgment, Prediction, Study
from annotate.roles import is_admin, is_researcher
from annotate.studies.human_draw import draw_pending
from evaluation.vocabulary import TIE

__all__ = [
    "IsAdminRole", "is_admin", "is_researcher", "may_read_results", "may_read_study",
    "DetailSerializer", "IsoDateTimeField", "json_as",
    "StudyInfo", "StudyItem", "ScoringItem", "Candidate", "PerseJudgment", "PredictionRow", "UpsertCounts",
    "get_study", "study_item_keys", "study_items", "items_for_scoring", "judging_annotators", "judgments_for_perse",
    "upsert_predictions", "prediction_counts", "metric_coverage", "BatchRefused", "import_batch_file",
]


@dataclass(frozen=True)
class StudyInfo:
    """What the runtime needs to know about a study."""

    slug: str
    kind: str
    title: str
    n_items: int
    items_have_candidates: bool  # whether the first item has outputs a metric may score (StudyKind.score_targets)
    aspects: tuple[dict, ...]  # ({"key", "question"}, ...) of a kind with aspects (StudyKind.aspects); () otherwise
    config: dict = field(default_factory=dict)  # the kind's settings, defaults filled in (scale, question, ...)


@dataclass(frozen=True)
class StudyItem:
    """An item's texts as imported (EGISES and similarity need the whole `data`)."""

    key: str
    item_id: str
    data: dict
    meta: dict | None
    is_gold: bool


@dataclass(frozen=True)
class Candidate:
    id: str
    text: str


@dataclass(frozen=True)
class ScoringItem:
    """The inputs of a reference-based metric for one item, as its kind names them
    (`StudyKind.score_targets`): the text the outputs answer (`input`: a request, a story's
    premise), the reference, and the candidates to score."""

    key: str
    item_id: str
    input: str
    reference: str
    candidates: tuple[Candidate, ...]
    meta: dict | None


@dataclass(frozen=True)
class PerseJudgment:
    """One annotator's answer to one question of one item, with the item's texts and the
    annotator's comment on the item (a PerSE review)."""

    annotator: str
    question: str
    item_key: str
    item_data: dict
    value: str
    comment: str = ""


@dataclass(frozen=True)
class PredictionRow:
    """One automatic evaluator output. `annotator` "" = for every annotator; `value` "" =
    could not be computed or parsed."""

    item_key: str
    evaluator: str
    question: str
    value: str
    annotator: str = ""


@dataclass(frozen=True)
class UpsertCounts:
    created: int
    updated: int
    unchanged: int


def get_study(slug: str) -> StudyInfo | None:
    """The study with this slug, or None."""
    study = Study.objects.filter(slug=slug).first()
    if study is None:
        return None
    first = study.items.order_by("position", "pk").values_list("data", flat=True).first()
    kind = get_kind(study.kind)
    aspects = tuple(kind.aspects(study.config or {}))
    return StudyInfo(slug=study.slug, kind=study.kind, title=study.title, n_items=study.items.count(),
                     items_have_candidates=bool(kind.score_targets(first or {})), aspects=aspects,
                     config=kind.report_config(study_config(study)))


def study_item_keys(slug: str) -> list[str]:
    """Keys of the study's items (gold included), in import order."""
    return [str(pk) for pk in Item.objects.filter(study__slug=slug).order_by("position", "pk")
            .values_list("pk", flat=True)]


def study_items(slug: str) -> list[StudyItem]:
    """Every item of the study with its texts, in import order."""
    return [StudyItem(key=str(i.pk), item_id=i.item_id, data=i.data, meta=i.meta, is_gold=i.is_gold)
            for i in Item.objects.filter(study__slug=slug).order_by("position", "pk")]


def items_for_scoring(slug: str, keys: Sequence[str]) -> list[ScoringItem]:
    """The metric inputs of the items `keys` of study `slug`, in the order of `keys`.
    KeyError names a key that is not an item of this study."""
    found = {str(i.pk): i for i in Item.objects.filter(study__slug=slug, pk__in=[int(k) for k in keys])}
    missing = [k for k in keys if k not in found]
    if missing:
        raise KeyError(f"items {', '.join(missing)} are not in study {slug!r}")
    kind = get_kind(Study.objects.get(slug=slug).kind) if found else None
    out = []
    for key in keys:
        assert kind is not None  # every key was found
        targets = kind.score_targets(found[key].data)
        first = targets[0] if targets else ScoreTarget("", "")
        out.append(ScoringItem(key=key, item_id=found[key].item_id, input=first.source, reference=first.reference,
                               meta=found[key].meta,
                               candidates=tuple(Candidate(id=t.candidate, text=t.text) for t in targets)))
    return out


def judging_annotators(slug: str) -> list[str]:
    """Usernames of everyone with a judgment in the study, sorted."""
    return sorted(set(Judgment.objects.filter(study__slug=slug).values_list("annotator__username", flat=True)))


def judgments_for_perse(slug: str, questions: Iterable[str], annotators: Iterable[str] | None = None
                        ) -> list[PerseJudgment]:
    """Non-gold judgments of `questions` (of `annotators` only, when given), oldest first
    (submission time, then storage order): the order PerSE builds profiles in. `item_data`
    is the item as its annotator saw it: of an item of more than two candidates, the pair
    the judgment's shown_order names."""
    rows = (Judgment.objects.filter(study__slug=slug, item__is_gold=False, question__in=list(questions),
                                    repeat_of__isnull=True)  # test-retest repeats: no second profile entry
            .select_related("item", "annotator", "study").order_by("submitted_at", "id"))
    if annotators is not None:
        rows = rows.filter(annotator__username__in=list(annotators))
    return [PerseJudgment(annotator=j.annotator.username, question=j.question, item_key=str(j.item_id),
                          item_data=_as_judged(j), value=j.value, comment=j.comment) for j in rows]


def _as_judged(judgment) -> dict:
    """The judgment's item data as its annotator saw it (StudyKind.shown_item, with the
    candidates its shown_order names)."""
    pair = [o for o in judgment.shown_order.split("|") if o and o != TIE]
    return get_kind(judgment.study.kind).shown_item(judgment.item.data, {CANDIDATES_KEY: pair})


def upsert_predictions(slug: str, rows: Iterable[PredictionRow]) -> UpsertCounts:
    """Store predictions of study `slug`: one row per (item, evaluator, annotator,
    question), a repeat replaces the value. The only writer of predictions for the
    runtime. ValueError when a row's item is not in the study or a key repeats."""
    rows = list(rows)
    keys = [(int(r.item_key), r.evaluator, r.annotator, r.question) for r in rows]
    repeated = [k for k, n in Counter(keys).items() if n > 1]
    if repeated:
        raise ValueError(f"prediction rows repeat (item, evaluator, annotator, question): {repeated[:3]}")
    item_pks = {k[0] for k in keys}
    study_of = dict(Item.objects.filter(pk__in=item_pks, study__slug=slug).values_list("pk", "study_id"))
    if len(study_of) != len(item_pks):
        raise ValueError(f"items {sorted(item_pks - set(study_of))} are not in study {slug!r}")
    with transaction.atomic():
        existing = {(p.item_id, p.evaluator, p.annotator, p.question): p for p in Prediction.objects.filter(
            item_id__in=item_pks, evaluator__in={r.evaluator for r in rows})}
        create, update = [], []
        for key, row in zip(keys, rows):
            old = existing.get(key)
            if old is None:
                create.append(Prediction(study_id=study_of[key[0]], item_id=key[0], evaluator=row.evaluator,
                                         annotator=row.annotator, question=row.question, value=row.value))
            elif old.value != row.value:
                old.value = row.value
                update.append(old)
        # update_conflicts: a concurrent writer of the same rows (a redelivered job) wins
        # nothing and loses nothing.
        Prediction.objects.bulk_create(create, update_conflicts=True, update_fields=["value"],
                                       unique_fields=["item", "evaluator", "annotator", "question"])
        Prediction.objects.bulk_update(update, ["value"])  # in-place changes: the report triggers (0010)
        if study_of:  # allocation judge_uncertain: the draw waits for its evaluator's scores
            draw_pending(Study.objects.get(pk=next(iter(study_of.values()))))
    return UpsertCounts(created=len(create), updated=len(update), unchanged=len(rows) - len(create) - len(update))


def metric_coverage(slug: str, evaluators: Iterable[str]) -> dict[str, dict[str, int]]:
    """{evaluator: {"n_items", "n_scored", "n_unparsed"}} over the study's real (non-gold)
    items, from its non-personalized predictions: scored = every prediction of the item has
    a value, unparsed = at least one is empty (the score job stores an unparsable judge
    answer empty). The report computes the same from its own input (evaluation/report/coverage.py)."""
    evaluators = list(evaluators)
    n_items = Item.objects.filter(study__slug=slug, is_gold=False).count()
    rows = Prediction.objects.filter(study__slug=slug, evaluator__in=evaluators, annotator="", item__is_gold=False)
    has: dict[str, set[int]] = {e: set() for e in evaluators}
    empty: dict[str, set[int]] = {e: set() for e in evaluators}
    for evaluator, item, value in rows.values_list("evaluator", "item_id", "value"):
        (empty if value == "" else has)[evaluator].add(item)
    return {e: {"n_items": n_items, "n_scored": len(has[e] - empty[e]), "n_unparsed": len(empty[e])}
            for e in evaluators}


def prediction_counts(slug: str, evaluators: Iterable[str]) -> dict:
    """{"total", "empty", "empty_by_evaluator"}: stored non-personalized predictions of
    `evaluators` in the study, how many of them have no value (unparsed), and that per
    evaluator."""
    rows = Prediction.objects.filter(study__slug=slug, evaluator__in=list(evaluators), annotator="")
    empty = Counter(rows.filter(value="").values_list("evaluator", flat=True))
    return {"total": rows.count(), "empty": sum(empty.values()), "empty_by_evaluator": dict(empty)}


class BatchRefused(ValueError):
    """A batch file the importer refused; `errors` are its `line N: why` messages."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors[:5]) + (f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""))
        self.errors = errors


def batch_errors(lines: list[dict]) -> list[str]:
    """Why the importer would refuse a batch made of these JSON lines (header first), as
    `line N: ...`, writing nothing: the runtime checks the batch it will write before it
    generates anything. [] = it would load."""
    import io
    import json

    from annotate.studies.importing import batch_errors as check

    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")
    return check(io.BytesIO(data))


def batch_header_keys() -> tuple[str, ...]:
    """The keys a batch header's `study` object may hold."""
    from annotate.studies.batch_format import HEADER_KEYS

    return tuple(HEADER_KEYS)


def import_batch_file(path: str, *, expected_slug: str | None = None) -> dict:
    """Import a batch file written by the runtime (all or nothing; items already in the
    study with the same content are skipped, so a re-run imports nothing twice).
    -> {"study", "created", "skipped"}; BatchRefused with the importer's errors."""
    from annotate.studies.batch_format import BatchInvalid
    from annotate.studies.importing import import_batch_path

    try:
        return import_batch_path(path, source=f"runtime:{path}", expected_slug=expected_slug,
                                 allow_empty=False).as_json()
    except BatchInvalid as refused:
        raise BatchRefused(list(refused.errors)) from refused
