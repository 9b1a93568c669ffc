"""Studies, batches, items, assignments, judgments, predictions and the audit log."""
from django.conf import settings
from django.db import models

from annotate.access_rules import StudyQuerySet
from annotate.kinds import kind_choices
from annotate.querysets import AssignmentQuerySet, ItemQuerySet

DRAFT, OPEN, PAUSED, CLOSED = "draft", "open", "paused", "closed"
RETURNED, SCREENED_OUT, TIMED_OUT = "returned", "screened_out", "timed_out"  # Participant.ended
ENDINGS = (RETURNED, SCREENED_OUT, TIMED_OUT)
STUDY_STATUSES = [(DRAFT, "draft"), (OPEN, "open"), (PAUSED, "paused"), (CLOSED, "closed")]


class Study(models.Model):
    """A study: one kind of question asked of many items with a fixed overlap."""

    slug = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=32, choices=kind_choices)
    title = models.CharField(max_length=300)
    instructions = models.TextField(blank=True)  # Markdown
    annotations_per_item = models.PositiveIntegerField(default=3)
    randomize_order = models.BooleanField(default=True)
    allow_tie = models.BooleanField(default=False)
    # Kind-specific header keys kept as given: aspects, scale, usefulness_scale.
    config = models.JSONField(default=dict, blank=True)
    # Who may annotate / read results (annotate/access.py): empty = every member of the
    # `annotators` / `researchers` group.
    annotators = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="listed_studies")
    researchers = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="researched_studies")
    gold_rate = models.FloatField(default=0.1, help_text="Share of served items drawn from gold items.")
    min_seconds = models.FloatField(null=True, blank=True, help_text="Warn annotators who submit faster.")
    assignment_timeout_minutes = models.PositiveIntegerField(default=settings.HUMEVAL_ASSIGNMENT_TIMEOUT_MINUTES)
    created_at = models.DateTimeField(auto_now_add=True)
    # Participants from recruiting platforms (docs/running-a-study.md). Defaults: an open
    # study with no consent, code, quota, questions or quality thresholds (as before).
    status = models.CharField(max_length=8, choices=STUDY_STATUSES, default=OPEN,
                              help_text="Only open studies hand out items; closing keeps everything.")
    consent = models.TextField(blank=True, help_text="Markdown; when set, participants must accept it first.")
    completion_code = models.CharField(max_length=100, blank=True)
    completion_url = models.CharField(max_length=500, blank=True,
                                      help_text="Participants are sent to <completion_url>?cc=<completion_code>.")
    max_items_per_participant = models.PositiveIntegerField(null=True, blank=True)
    pre_questions = models.JSONField(default=list, blank=True)  # [{key, question, type, options?}]
    post_questions = models.JSONField(default=list, blank=True)
    quality = models.JSONField(default=dict, blank=True)  # {"min_gold_accuracy", "min_median_seconds"}
    # Items with "practice": true: [{"item_id", "data", "gold", "feedback"}]; never Item rows.
    practice_items = models.JSONField(default=list, blank=True)
    # A comprehension check after the instructions (annotate/comprehension.py):
    # [{"key", "question", "options", "answer"}]; two attempts, then the screen-out.
    comprehension = models.JSONField(default=list, blank=True)
    # Bumped by database triggers (migration 0010) when the study's judgments, predictions or
    # items are updated in place or deleted, or an annotator renamed (new rows change the
    # counts instead): part of the report version (annotate/reports/cache.py).
    report_revision = models.PositiveBigIntegerField(default=0, editable=False)
    # Launch-safe recruitment (annotate/participants/recruitment.py): {"platform", "places"?,
    # "screenout_code"?} when participant links are on (None: they answer 404); the
    # unguessable key of the link; how many places participants hold now.
    recruitment = models.JSONField(null=True, blank=True)
    entry_key = models.CharField(max_length=64, blank=True, editable=False)
    places_taken = models.PositiveIntegerField(default=0, editable=False)

    objects = StudyQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]
        verbose_name_plural = "studies"

    def __str__(self):
        return self.slug


class Batch(models.Model):
    """One imported batch file: who loaded what, and how many items it added."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="batches")
    source = models.CharField(max_length=500, blank=True)  # file name or "api"
    sha256 = models.CharField(max_length=64, blank=True)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]


class Item(models.Model):
    """One unit to judge. `data` holds the kind's display fields exactly as imported
    (input/reference/candidates/explanations, document/users/pairs, premise/candidates)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    batch = models.ForeignKey(Batch, null=True, blank=True, on_delete=models.SET_NULL, related_name="items")
    item_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField(default=0)  # import order within the study
    data = models.JSONField()
    meta = models.JSONField(null=True, blank=True)
    gold = models.JSONField(null=True, blank=True)  # expected answer: {question: value} or a value
    is_gold = models.BooleanField(default=False)
    content_hash = models.CharField(max_length=64)  # of the canonical item line: identical re-import = skip
    # Completed + open (unexpired) assignments; kept in step by the assignment engine.
    n_assigned = models.PositiveIntegerField(default=0)
    n_completed = models.PositiveIntegerField(default=0)
    # Whether humans are offered the item at all (`human_share`, `allocation:
    # "judge_uncertain"`: the others are scored by evaluators alone), and the probability
    # with which it was drawn for humans (None: not drawn at random, every item offered).
    offered = models.BooleanField(default=True)
    offer_probability = models.FloatField(null=True, blank=True)

    objects = ItemQuerySet.as_manager()

    class Meta:
        ordering = ["study_id", "position"]
        constraints = [models.UniqueConstraint(fields=["study", "item_id"], name="item_unique_in_study")]
        # The assignment engine's scan: fullest free items first, then import order.
        indexes = [models.Index(fields=["study", "is_gold", "-n_assigned", "position", "id"], name="item_pool_idx"),
                   models.Index(fields=["study", "id"], name="item_version_idx")]  # report version

    def __str__(self):
        return f"{self.study_id}:{self.item_id}"


class Assignment(models.Model):
    """An item handed to an annotator: the order options were shown in, and when."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    # {question id: [option ids in shown order]}; similarity pairs: {"pair_order": [...], pair id: ["0","1"]}
    shown_order = models.JSONField(default=dict)
    # The annotator's opaque tokens (annotate/desk/blinding.py): {"item": handle, "options":
    # {token: candidate id}, "questions": {token: pair id}}; made once, when handed out.
    blind = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)
    # "I can't judge this": closed (completed_at set) without counting as completed; the
    # slot went back to the pool and this annotator is not given the item again.
    skipped = models.BooleanField(default=False)
    extensions = models.PositiveSmallIntegerField(default=0)  # times the owner extended expires_at
    # The probability with which the study's allocation chose what this assignment shows
    # (`allocation: "adaptive"`: its pair); None under the balanced rule.
    probability = models.FloatField(null=True, blank=True)
    # A test-retest repeat (header `retest`) of this annotator's earlier assignment of the
    # item; None for a first showing. Repeats are never paid for and excluded from statistics.
    repeat_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="repeats")

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], condition=models.Q(repeat_of__isnull=True),
                                    name="assignment_once_per_annotator"),
            models.UniqueConstraint(fields=["item", "annotator"], condition=models.Q(repeat_of__isnull=False),
                                    name="assignment_repeat_once"),
        ]
        indexes = [
            models.Index(fields=["study", "annotator", "completed_at"], name="assignment_open_idx"),
            models.Index(fields=["study", "completed_at", "expires_at"], name="assignment_expiry_idx"),
        ]


class Judgment(models.Model):
    """One answer: (item, annotator, question) -> value, stored once."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judgments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judgments")
    assignment = models.ForeignKey(Assignment, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="judgments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="judgments")
    question = models.CharField(max_length=200)
    value = models.CharField(max_length=200)
    shown_order = models.CharField(max_length=500, blank=True)  # option ids joined with "|"
    seconds = models.FloatField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    comment = models.TextField(blank=True, max_length=2000)  # the annotator's optional note on the item
    # What the page saw on its free-text fields (comment, explanation): pastes into them and
    # times the page lost focus while one was being written. A flag for the researcher,
    # never a rejection; None: not reported (an API client, an older page).
    pastes = models.PositiveIntegerField(null=True, blank=True)
    focus_losses = models.PositiveIntegerField(null=True, blank=True)
    # The judgment this one repeats (test-retest, header `retest`); None for a first answer.
    repeat_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="repeats")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator", "question"],
                                    condition=models.Q(repeat_of__isnull=True), name="judgment_once"),
            models.UniqueConstraint(fields=["item", "annotator", "question"],
                                    condition=models.Q(repeat_of__isnull=False), name="judgment_repeat_once"),
        ]
        indexes = [models.Index(fields=["study", "question"], name="judgment_report_idx"),
                   models.Index(fields=["study", "id"], name="judgment_version_idx")]  # report version


class Prediction(models.Model):
    """An automatic evaluator's output: a metric score for a candidate, or a predicted
    choice (optionally for one annotator, for personalized evaluators)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="predictions")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="predictions")
    evaluator = models.CharField(max_length=200)
    annotator = models.CharField(max_length=150, blank=True)  # "" = for every annotator
    question = models.CharField(max_length=200)
    value = models.CharField(max_length=200, blank=True)  # "" = could not be parsed

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "evaluator", "annotator", "question"], name="prediction_once"),
        ]
        indexes = [models.Index(fields=["study", "evaluator"], name="prediction_report_idx"),
                   models.Index(fields=["study", "id"], name="prediction_version_idx")]  # report version


class AuditLog(models.Model):
    """Who changed what: judgment edits, batch imports, study changes."""

    study = models.ForeignKey(Study, null=True, blank=True, on_delete=models.CASCADE, related_name="audit")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=64, blank=True)
    object_id = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["study", "created_at"], name="audit_study_idx")]


class Participant(models.Model):
    """Someone sent by a recruiting platform (Prolific, MTurk, a generic link) into one
    study: their user `<platform>:<id>`, the platform's ids, where they are in the study
    flow (annotate/participants/participation.py) and their answers to the pre/post questions."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participations")
    platform = models.CharField(max_length=16)  # prolific | mturk | pid
    external_id = models.CharField(max_length=64)  # PROLIFIC_PID / workerId / pid
    platform_study_id = models.CharField(max_length=64, blank=True)  # STUDY_ID / hitId
    platform_session_id = models.CharField(max_length=64, blank=True)  # SESSION_ID / assignmentId
    seed = models.BigIntegerField(default=0)  # this participant's item order (annotate/desk/ordering.py)
    started_at = models.DateTimeField(auto_now_add=True)
    consented_at = models.DateTimeField(null=True, blank=True)
    declined_at = models.DateTimeField(null=True, blank=True)
    instructions_seen_at = models.DateTimeField(null=True, blank=True)
    practice_done = models.PositiveIntegerField(default=0)  # practice items answered
    pre_answers = models.JSONField(null=True, blank=True)
    post_answers = models.JSONField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The browser a `link` participant entered with (a hash of its signed cookie's token).
    browser_key = models.CharField(max_length=64, blank=True)
    # A place (Study.places_taken) is held from the first item on, until the participant
    # returns, times out or is screened out (`ended`); completing keeps it.
    place_taken_at = models.DateTimeField(null=True, blank=True)
    ended = models.CharField(max_length=16, blank=True, choices=[(e, e) for e in ENDINGS])
    ended_at = models.DateTimeField(null=True, blank=True)
    # The address the participant entered from, as a keyed hash (annotate/entry_limits.py).
    entry_address = models.CharField(max_length=64, blank=True)
    comprehension_attempts = models.PositiveIntegerField(default=0)
    comprehension_passed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="participant_once_per_study")]

    def __str__(self):
        return f"{self.study_id}:{self.platform}:{self.external_id}"

    @property
    def status(self) -> str:
        """participants.csv's status: completed | returned (declined consent, or stopped) |
        screened_out | timed_out | in_progress."""
        if self.finished_at:
            return "completed"
        if self.declined_at:
            return RETURNED
        return self.ended or "in_progress"


class EntryAddress(models.Model):
    """New participants from one address in one study (annotate/entry_limits.py): the
    current rate-limit window and what was admitted and refused, for the Recruitment
    panel's bursts. `address` is a keyed hash, never the address itself."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="entry_addresses")
    address = models.CharField(max_length=64)
    window_start = models.DateTimeField()
    in_window = models.PositiveIntegerField(default=0)  # admitted since window_start
    admitted = models.PositiveIntegerField(default=0)
    refused = models.PositiveIntegerField(default=0)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "address"], name="entry_address_once")]


class ReportCache(models.Model):
    """The built report of a study for one parameter set (docs/reports.md, "Cache"): the
    JSON and the dashboard fragment with its figures, and the data version they were built
    from. `building_since` marks a refresh in flight, so a second one is not queued."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="report_caches")
    params = models.CharField(max_length=200)  # canonical JSON of the report parameters
    version = models.CharField(max_length=200, blank=True)  # "" = never built
    report_json = models.TextField(blank=True)  # text, not JSON: keeps the report's key order
    fragment = models.TextField(blank=True)
    csv = models.TextField(blank=True)  # the CSV report of the same version; "" = not built yet
    built_at = models.DateTimeField(null=True, blank=True)
    build_seconds = models.FloatField(null=True, blank=True)
    building_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "params"], name="report_cache_once")]
