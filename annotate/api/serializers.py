"""The request and response bodies of the REST API (interfaces.md), as DRF serializers,
so /api/schema/ documents every field with its type, enum and an example.

Responses are produced through these serializers, so a body cannot grow a key the
schema does not name. Free-form parts (item display fields, a study's kind settings, a
job's params and result) pass through unfiltered and are described by the serializer
named in `json_as`. The report JSON is the one exception: it is returned as
evaluation/report builds it, and ReportSerializer documents its keys.

Requests keep their single validator where one exists (the batch header validator for
studies, the answer validator for judgments): the request serializers here describe
those bodies, they do not validate them a second time.
"""
import hashlib

from django.conf import settings
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import OpenApiExample, extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from annotate.kinds import all_kinds
from annotate.models import Study
from annotate.studies.allocation import BALANCED, POLICIES
from evaluation.report.kinds import REPORT_MODULES
from evaluation.vocabulary import SKIP_REASONS

KIND_CHOICES = Study._meta.get_field("kind").choices
REPORT_FORMATS = ("json", "csv", "html")
EXPORT_FORMATS = ("csv", "jsonl")


def json_as(documented: serializers.Field, **kwargs) -> serializers.JSONField:
    """A JSON value returned exactly as given, documented in the schema as `documented`
    (a serializer or field instance)."""
    field_class = type("DocumentedJSON", (serializers.JSONField,), {})
    return extend_schema_field(documented)(field_class)(**kwargs)


class IsoDateTimeField(serializers.DateTimeField):
    """ISO 8601 exactly as Python writes it ("+00:00", not DRF's "Z"), as the API always has."""

    def to_representation(self, value):
        return value.isoformat() if hasattr(value, "isoformat") else value


@extend_schema_field({"type": "string", "enum": [k for k, _ in KIND_CHOICES],
                      "description": "The study kind (studies.md)."}, component_name="StudyKind")
class StudyKindField(serializers.ChoiceField):
    """A study kind; a named schema component, apart from the job kinds' enum."""

    def __init__(self, **kwargs):
        super().__init__(choices=KIND_CHOICES, **kwargs)


def scale_field(**kwargs) -> serializers.ListField:
    return serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2, **kwargs)


def schema_field(schema: dict, **kwargs) -> serializers.JSONField:
    """A JSON value passed through as given, documented with `schema` (JSON Schema)."""
    return extend_schema_field(schema)(type("SchemaJSON", (serializers.JSONField,), {}))(**kwargs)


# --- errors ------------------------------------------------------------------------------------

class DetailSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Why the request was refused.")


@extend_schema_serializer(examples=[OpenApiExample(
    "A refused file", value={"errors": ["line 3: 'candidates' must be a list of 2 to 8, got 0"]},
    response_only=True)])
class LineErrorsSerializer(serializers.Serializer):
    errors = serializers.ListField(child=serializers.CharField(),
                                   help_text="Every problem as `line N: reason`; nothing was written.")


@extend_schema_serializer(examples=[OpenApiExample(
    "A missing answer", value={"errors": {"choice": "this question needs an answer"}}, response_only=True)])
class AnswerErrorsSerializer(serializers.Serializer):
    errors = serializers.DictField(child=serializers.CharField(),
                                   help_text="{question id, `seconds` or `answers`: reason}; nothing was stored.")


# --- studies -----------------------------------------------------------------------------------

def kind_fields(attribute: str) -> dict[str, serializers.Field]:
    """{key: documented JSON field} of every registered kind's `attribute` (its
    `header_schema` or `display_schema`, JSON Schema per key); a key several kinds share
    names each kind in its description."""
    owners: dict[str, list[tuple[str, dict]]] = {}
    for kind in all_kinds():
        for key, schema in getattr(kind, attribute).items():
            owners.setdefault(key, []).append((kind.name, schema))
    fields = {}
    for key, entries in owners.items():
        schema = {**entries[0][1], "description": "; ".join(f"{name}: {schema.get('description', '')}".rstrip(": ")
                                                          for name, schema in entries)}
        fields[key] = schema_field(schema, required=False)
    return fields


StudyConfigSerializer = type("StudyConfigSerializer", (serializers.Serializer,), {
    "__doc__": "Kind-specific settings from the batch header (each kind's `header_schema`).",
    **kind_fields("header_schema")})


RESEARCH_FIELDS = ("annotations_per_item", "randomize_order", "annotators", "researchers", "n_items",
                   "n_gold_items", "n_judgments", "created_at")


@extend_schema_serializer(examples=[OpenApiExample(f"A {kind.name} study as a researcher sees it", response_only=True,
                                                   value={
    "slug": f"example-{kind.name.replace('_', '-')}", "kind": kind.name, "title": f"An example {kind.name} study",
    "instructions": "Read the texts, then answer.", "annotations_per_item": 3,
    "randomize_order": True, "allow_tie": False, "config": kind.example_header(), "annotators": [],
    "researchers": ["rita"], "n_items": 120, "n_gold_items": 12, "n_judgments": 0,
    "created_at": "2026-11-23T10:00:00+00:00"}) for kind in all_kinds()])
class StudySerializer(serializers.Serializer):
    """A study. Its annotators get the first six fields only; the fields marked
    "Researchers only" (who else works on the study, counts, gold) go to those who may
    read the study's results."""

    # Context: `readable`, the set of study pks the requesting user may read.

    slug = serializers.SlugField()
    kind = StudyKindField()
    title = serializers.CharField()
    instructions = serializers.CharField(allow_blank=True, help_text="Markdown shown before the first item.")
    allow_tie = serializers.BooleanField(help_text="Pairwise kinds: `tie` is an allowed answer.")
    config = json_as(StudyConfigSerializer())
    annotations_per_item = serializers.IntegerField(required=False, min_value=1,
                                                    help_text="Researchers only. The overlap.")
    randomize_order = serializers.BooleanField(required=False, help_text="Researchers only.")
    annotators = serializers.ListField(child=serializers.CharField(), required=False,
                                       help_text="Researchers only. Listed annotators; [] = the annotators group.")
    researchers = serializers.ListField(child=serializers.CharField(), required=False,
                                        help_text="Researchers only. Listed researchers; [] = the researchers group.")
    n_items = serializers.IntegerField(required=False, help_text="Researchers only. Items, gold included.")
    n_gold_items = serializers.IntegerField(required=False, help_text="Researchers only.")
    n_judgments = serializers.IntegerField(required=False, help_text="Researchers only.")
    created_at = IsoDateTimeField(required=False, help_text="Researchers only.")

    def to_representation(self, study):
        values = {name: getattr(study, name) for name in ("slug", "kind", "title", "instructions", "allow_tie",
                                                          "config")}
        if study.pk in self.context.get("readable", ()):
            values.update(
                annotations_per_item=study.annotations_per_item, randomize_order=study.randomize_order,
                annotators=sorted(study.annotators.values_list("username", flat=True)),
                researchers=sorted(study.researchers.values_list("username", flat=True)),
                n_items=study.items.count(), n_gold_items=study.items.filter(is_gold=True).count(),
                n_judgments=study.judgments.filter(repeat_of__isnull=True).count(),  # as the report: no repeats
                created_at=study.created_at)
        return super().to_representation(values)


@extend_schema_serializer(examples=[OpenApiExample(f"A new {kind.name} study", request_only=True, value={
    "slug": f"example-{kind.name.replace('_', '-')}", "kind": kind.name, "title": f"An example {kind.name} study",
    "annotations_per_item": 3, "researchers": ["rita"], **kind.example_header()}) for kind in all_kinds()])
class StudyCreateSerializer(serializers.Serializer):
    """The batch header's study object (studies.md), checked by the batch header validator."""

    slug = serializers.SlugField(max_length=100)
    kind = StudyKindField()
    title = serializers.CharField(max_length=300)
    instructions = serializers.CharField(required=False, allow_blank=True)
    annotations_per_item = serializers.IntegerField(required=False, min_value=1, default=3)
    randomize_order = serializers.BooleanField(required=False, default=True)
    allow_tie = serializers.BooleanField(required=False, default=False)
    locals().update(kind_fields("header_schema"))  # each kind's own header keys
    annotators = serializers.ListField(child=serializers.CharField(), required=False,
                                       help_text="Usernames; absent or [] = every member of `annotators`.")
    researchers = serializers.ListField(child=serializers.CharField(), required=False,
                                        help_text="Usernames; absent or [] = every member of `researchers`.")
    gold_rate = serializers.FloatField(required=False, min_value=0, max_value=1, default=0.1)
    min_seconds = serializers.FloatField(required=False, allow_null=True)
    assignment_timeout_minutes = serializers.IntegerField(
        required=False, min_value=1, default=settings.HUMEVAL_ASSIGNMENT_TIMEOUT_MINUTES)
    min_votes = serializers.IntegerField(required=False, min_value=1, default=2,
                                         help_text="Non-gold judgments an item needs for a majority label.")
    retest = serializers.DictField(required=False,
                                   help_text='Test-retest repeats: {"share": number in (0, 0.5], "after": int >= 0 '
                                             '(default 5)}: that share of each annotator\'s judged items shown again, '
                                             'order reversed, after at least `after` other items')
    # Pair allocation (docs/adaptive-allocation.md); validated by annotate/studies/allocation.py.
    allocation = serializers.ChoiceField(list(POLICIES), required=False, default=BALANCED,
                                         help_text="balanced | adaptive: how an item of 3+ candidates picks its "
                                                   "pair; judge_uncertain: each item offered to humans with a "
                                                   "probability rising with `uncertainty_evaluator`'s uncertainty, "
                                                   "mean `human_budget`.")
    min_per_pair = serializers.IntegerField(required=False, min_value=1,
                                            help_text="Adaptive only: judgments per pair before the rule "
                                                      "(default 10).")
    stop_when = serializers.JSONField(required=False, help_text='"top_separated" or {"separated": [a, b]}.')
    # Participants from recruiting platforms (docs/running-a-study.md).
    status = serializers.ChoiceField(["draft", "open", "paused", "closed"], required=False, default="open",
                                     help_text="Only open studies hand out items.")
    consent = serializers.CharField(required=False, allow_blank=True, help_text="Markdown accepted before anything.")
    completion_code = serializers.CharField(required=False, max_length=100)
    completion_url = serializers.URLField(required=False, max_length=500,
                                          help_text="Participants end at <completion_url>?cc=<completion_code>.")
    max_items_per_participant = serializers.IntegerField(required=False, min_value=1)
    pre_questions = serializers.ListField(child=serializers.DictField(), required=False,
                                          help_text="[{key, question, type: text|choice|number, options?}]")
    post_questions = serializers.ListField(child=serializers.DictField(), required=False,
                                           help_text="[{key, question, type: text|choice|number, options?}]")
    quality = serializers.DictField(child=serializers.FloatField(), required=False,
                                    help_text='{"min_gold_accuracy", "min_median_seconds", "fast_seconds", '
                                              '"max_fast_submits", "max_flip_rate"}: numbers, all optional')
    recruitment = serializers.DictField(required=False,
                                        help_text='{"platform": "prolific" | "mturk" | "link", "places"?: int, '
                                                  '"screenout_code"?: str, "per_address"?: int, "hold_minutes"?: '
                                                  'int, "quality_gate"?: bool}: participant links work only with it')
    comprehension = serializers.ListField(child=serializers.DictField(), required=False,
                                          help_text="[{key, question, options, answer}]: a check after the "
                                                    "instructions; two attempts, then the screen-out code")
    # Which items humans are offered (annotate/studies/human_items.py; docs/statistics.md).
    human_share = serializers.FloatField(required=False, min_value=0, max_value=1,
                                         help_text="0 < share <= 1: humans are offered a seeded random subset of "
                                                   "this share of the items; evaluators score them all.")
    human_seed = serializers.IntegerField(required=False, min_value=0,
                                          help_text="The seed of the draws (default: from the slug).")
    uncertainty_evaluator = serializers.CharField(required=False, max_length=200)
    human_budget = serializers.FloatField(required=False, min_value=0, max_value=1,
                                          help_text="0 < budget <= 1: the expected share of items humans are offered.")


class BatchResultSerializer(serializers.Serializer):
    study = serializers.SlugField()
    created = serializers.IntegerField(help_text="New items.")
    skipped = serializers.IntegerField(help_text="Items already in the study with identical content.")


class PredictionsResultSerializer(serializers.Serializer):
    studies = serializers.ListField(child=serializers.SlugField())
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="Rows identical to the stored ones.")


# --- assignments and judgments -------------------------------------------------------------------

ItemDisplaySerializer = type("ItemDisplaySerializer", (serializers.Serializer,), {
    "__doc__": "What the annotator is shown; which fields depend on the study kind (its `display_schema`).",
    **kind_fields("display_schema")})


class QuestionSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The key to answer under (similarity pairs: an opaque token).")
    text = serializers.CharField()
    options = serializers.ListField(child=serializers.CharField(), required=False,
                                    help_text="Choice questions: allowed values (opaque tokens, or `tie`), in "
                                              "the order shown.")
    scale = scale_field(required=False, help_text="Rating questions: [min, max], integers.")
    order = serializers.BooleanField(required=False, help_text="True: the answer is a full order of the options, "
                                                               "best first: a list of tokens (or the text "
                                                               "`t1>t2>t3`), every option once.")
    ties = serializers.BooleanField(required=False, help_text="With `order`: whether several options may share a "
                                                              "rank (a list of tokens inside the list, or `t1=t2`).")


def example_token(role: str, real) -> str:
    """A made-up token in the blinding's form (the real ones are per assignment, from SECRET_KEY)."""
    return role + hashlib.sha256(f"example:{role}:{real}".encode()).hexdigest()[:12]


def next_assignment_example(kind) -> dict:
    """The next-assignment body of the kind's first example item, as an annotator sees it
    (option and pair tokens made up, as the real ones are, per assignment)."""
    from annotate.desk.blinding import ITEM, OPTION, QUESTION, Blinding

    item = {k: v for k, v in kind.example_items()[0].items() if k not in ("item_id", "meta", "gold")}
    config = {**kind.example_header(), "allow_tie": False}
    questions = kind.questions(config, item)
    shown = kind.shown_order(item, config, False, None, [])
    options = {str(o) for q in questions for o in q.get("options", ())}
    blinding = Blinding({"item": example_token(ITEM, "example"),
                         "options": {example_token(OPTION, o): o for o in options},
                         "questions": {example_token(QUESTION, q["id"]): q["id"] for q in questions}
                         if kind.blind_question_ids else {}})
    asked = [{"id": q["id"], "text": q["text"], **({"options": shown.get(q["id"]) or q["options"]}
                                                    if "options" in q else {"scale": q["scale"]}),
              **{k: q[k] for k in ("order", "ties") if k in q}} for q in questions]
    return {"assignment": 42, "item_id": blinding.item, "item": blinding.display(kind, kind.display(item, shown)),
            "questions": blinding.shown_questions(kind.order_questions(asked, shown))}


@extend_schema_serializer(examples=[OpenApiExample(kind.name, response_only=True, value=next_assignment_example(kind))
                                    for kind in all_kinds()])
class NextAssignmentSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(help_text="Post the answers to /api/assignments/{assignment}/judgments/.")
    item_id = serializers.CharField(help_text="An opaque handle of the item for this assignment (annotators "
                                              "never see the researchers' item ids).")
    item = json_as(ItemDisplaySerializer())
    questions = QuestionSerializer(many=True)


def answers_example(kind) -> dict:
    """Answers to the kind's next-assignment example: the first option of each choice, the
    bottom of each scale."""
    questions = next_assignment_example(kind)["questions"]
    def first(q):
        if q.get("order"):
            return list(q["options"])  # a full order: every option, best first
        return q["options"][0] if "options" in q else q["scale"][0]
    return {**{q["id"]: first(q) for q in questions}, "seconds": 12.5}


@extend_schema_serializer(examples=[OpenApiExample(kind.name, request_only=True, value=answers_example(kind))
                                    for kind in all_kinds()])
class AnswersSerializer(serializers.Serializer):
    """One value per question key (a choice question's option token or `tie`, an integer
    rating, or a full order of tokens for an `order` question), plus the control keys
    below. A real candidate id is refused."""

    seconds = serializers.FloatField(required=False, min_value=0,
                                     help_text="Time spent; default: since the item was handed out.")
    edit = serializers.BooleanField(required=False, default=False,
                                    help_text="Replace earlier answers (while the item is not complete).")
    comment = serializers.CharField(required=False, allow_blank=True, max_length=2000,
                                    help_text="Optional note on the item, stored with each of its judgments.")
    pastes = serializers.IntegerField(required=False, min_value=0, max_value=10000,
                                      help_text="Pastes into the item's free-text fields (a flag, never a rejection).")
    focus_losses = serializers.IntegerField(required=False, min_value=0, max_value=10000,
                                            help_text="Times the page lost focus while a free-text field was "
                                                      "being written.")


class AnswersSchema(OpenApiSerializerExtension):
    """Answers are keyed by question id: documented as additional properties."""

    target_class = AnswersSerializer

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target_class, direction, bypass_extensions=True)
        rank = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
        order = {"type": "array", "items": rank,
                 "description": "a full order (a question with `order`): option tokens best first; with `ties`, "
                                "a list of tokens inside it is one rank"}
        schema["additionalProperties"] = {"oneOf": [{"type": "string"}, {"type": "integer"}, order],
                                          "description": "question id -> option id, integer rating, or a full "
                                                         "order (a list, or the text `t1>t2>t3`)"}
        return schema


class JudgmentSerializer(serializers.Serializer):
    question = serializers.CharField()
    value = serializers.CharField()
    shown_order = serializers.CharField(allow_blank=True, help_text="Option ids as shown, joined with `|`.")
    seconds = serializers.FloatField(allow_null=True)
    submitted_at = IsoDateTimeField(allow_null=True)
    comment = serializers.CharField(allow_blank=True, help_text="The annotator's optional note on the item.")


class SubmitResultSerializer(serializers.Serializer):
    assignment = serializers.IntegerField()
    created = serializers.BooleanField(help_text="False when this repeats a stored submit (nothing changed).")
    judgments = JudgmentSerializer(many=True, help_text="The stored judgments of the assignment.")


@extend_schema_serializer(examples=[OpenApiExample("Can't judge", request_only=True,
                                                   value={"reason": "not_understood", "comment": "Too technical."})])
class SkipSerializer(serializers.Serializer):
    """"I can't judge this": the reason (one of the listed ids) and an optional comment."""

    reason = serializers.ChoiceField(choices=list(SKIP_REASONS),
                                     help_text="; ".join(f"`{k}`: {label}" for k, label in SKIP_REASONS))
    comment = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    seconds = serializers.FloatField(required=False, min_value=0,
                                     help_text="Time spent; default: since the item was handed out.")


class SkipResultSerializer(serializers.Serializer):
    assignment = serializers.IntegerField()
    created = serializers.BooleanField(help_text="False when this repeats a stored skip (nothing changed).")
    judgment = JudgmentSerializer(help_text="The stored skip: question `_skip`, value = the reason.")


class ExtendResultSerializer(serializers.Serializer):
    assignment = serializers.IntegerField()
    expires_at = IsoDateTimeField(help_text="The assignment's expiry after this request.")
    extended = serializers.BooleanField(help_text="False when the one extension was already used (nothing changed).")


# --- reports -----------------------------------------------------------------------------------

class AgreementSerializer(serializers.Serializer):
    krippendorff_alpha = serializers.FloatField(allow_null=True)
    level = serializers.ChoiceField(choices=["nominal", "ordinal", "interval", "ratio"])
    krippendorff_alpha_ci95 = serializers.ListField(child=serializers.FloatField(), allow_null=True, required=False)
    fleiss_kappa = serializers.FloatField(allow_null=True)
    fleiss_n_units = serializers.IntegerField()
    percent_agreement = serializers.FloatField(allow_null=True)
    n_units = serializers.IntegerField()
    n_values = serializers.IntegerField(required=False)
    krippendorff_alpha_ordinal = serializers.FloatField(allow_null=True, required=False,
                                                        help_text="Rating questions: alpha at the ordinal level.")
    alpha_reason = serializers.CharField(required=False, help_text="Why alpha is null, when it is.")
    ci_method = serializers.CharField(required=False, help_text="What alpha's interval resamples (items).")
    n_clusters = serializers.IntegerField(required=False, help_text="Items resampled.")
    dropped_resamples = serializers.IntegerField(required=False, help_text="Resamples where alpha was undefined.")
    ci_reason = serializers.CharField(required=False, help_text="Why there is no interval, when there is none.")


class PositionBiasSerializer(serializers.Serializer):
    first_shown_rate = serializers.FloatField(allow_null=True, help_text="Pooled share of all votes (screens) for "
                                              "the option shown first.")
    annotator_mean_rate = serializers.FloatField(
        allow_null=True, required=False, help_text="Mean share of the tested annotators (what the t-test tests).")
    n = serializers.IntegerField(help_text="Annotators in the test (>= min_screens voting screens).")
    p_value = serializers.FloatField(allow_null=True, help_text="One-sample t-test over annotators against 0.5.")
    ci95 = serializers.ListField(child=serializers.FloatField(), allow_null=True, required=False)
    ci_method = serializers.CharField(required=False)
    n_clusters = serializers.IntegerField(required=False)
    unit = serializers.CharField(required=False, help_text="What one vote is: `screen`.")
    test_unit = serializers.CharField(required=False, help_text="The unit of the test: `annotator`.")
    n_screens = serializers.IntegerField(required=False)
    n_screens_all = serializers.IntegerField(required=False)
    per_question = serializers.DictField(required=False)


class AnnotatorStatsSerializer(serializers.Serializer):
    judgments = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True)
    gold_accuracy = serializers.FloatField(allow_null=True)
    first_shown_rate = serializers.FloatField(allow_null=True)
    first_shown_p = serializers.FloatField(allow_null=True, required=False,
                                           help_text="Exact binomial p, Holm-adjusted over the annotators.")
    first_shown_p_raw = serializers.FloatField(allow_null=True, required=False)
    n_screens = serializers.IntegerField(required=False)
    n_timed_items = serializers.IntegerField(required=False)
    n_gold_answers = serializers.IntegerField(required=False)
    loo = serializers.DictField(child=serializers.FloatField(allow_null=True), required=False,
                                help_text="Per question: agreement without this annotator.")
    loo_n = serializers.DictField(child=serializers.IntegerField(), required=False, help_text="Units of each loo.")


def report_fields() -> dict[str, serializers.Field]:
    """{report key: documented JSON field} of every kind's report keys; a key several
    kinds' reports share names each kind in its description."""
    owners: dict[str, list[tuple[str, dict]]] = {}
    for kind, module in REPORT_MODULES.items():
        for key, schema in getattr(module, "REPORT_SCHEMA", {}).items():
            owners.setdefault(key, []).append((kind, schema))
    return {key: schema_field({**entries[0][1], "description": ", ".join(k for k, _ in entries) + ": "
                               + entries[0][1].get("description", "")}, required=False)
            for key, entries in sorted(owners.items())}


class ReportSerializer(serializers.Serializer):
    """The report JSON (interfaces.md; definitions in statistics.md). The keys after
    `annotators` appear for the kinds named in their description."""

    study = serializers.SlugField()
    kind = StudyKindField()
    n_items = serializers.IntegerField(help_text="Gold included.")
    n_gold_items = serializers.IntegerField()
    n_judgments = serializers.IntegerField()
    n_annotators = serializers.IntegerField()
    complete_items = serializers.IntegerField(help_text="Real (non-gold) items with `annotations_per_item` "
                                                        "completed assignments.")
    excluded_annotators = serializers.DictField(child=serializers.CharField(), required=False,
                                                help_text="Annotators left out (below the study's quality "
                                                          "thresholds) and why; {} with include_flagged.")
    agreement = serializers.DictField(child=AgreementSerializer(), help_text="Per question id.")
    position_bias = PositionBiasSerializer()
    annotators = serializers.DictField(child=AnnotatorStatsSerializer(), help_text="Per annotator username.")
    correlations = serializers.DictField(child=serializers.DictField(), required=False,
                                         help_text="Per metric: n, pearson, spearman, kendall.")
    locals().update(report_fields())  # each kind's own report keys (its report module's REPORT_SCHEMA)
    skipped = serializers.DictField(required=False, help_text="\"I can't judge this\" answers, left out of every "
                                                              "statistic: {n, by_reason: {reason: n}}.")


# --- tokens ------------------------------------------------------------------------------------

class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="Send as `Authorization: Token <token>`.")
    expires_at = IsoDateTimeField(allow_null=True, help_text="null: tokens do not expire (HUMEVAL_TOKEN_TTL_DAYS=0).")
