"""Judgments and predictions in and out of the database (formats in annotate.studies.judgments_csv).

Imports are all or nothing (one transaction, every bad row reported as `line N: reason`)
and idempotent: a row already stored with the same value is skipped. A judgment stored
with a different value is an error (human answers are never overwritten silently); a
prediction with a different value is replaced (evaluators are re-run).
A `_skip` row ("I can't judge this", value = a skip reason) closes its (item, annotator)
as skipped: it cannot be mixed with answers of the same annotator on the same item.
"""
from collections import Counter, defaultdict
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotate.kinds import get_kind, questions_for, study_config
from annotate.kinds.base import CANDIDATES_KEY, MAX_SHOWN_ORDER_CHARS
from annotate.models import Assignment, AuditLog, Item, Judgment, Prediction, Study
from annotate.participants.participation import PARTICIPANT_USERNAME
from annotate.studies.answers import SKIP, InvalidAnswer, answer_value
from annotate.studies.batch_format import BatchInvalid, ErrorList
from annotate.studies.human_draw import draw_pending
from annotate.studies.json_lines import unstorable_text
from annotate.studies.judgment_repeats import new_repeats, store_repeats
from annotate.studies.judgment_screens import check_screens, picks_subset
from annotate.studies.judgments_csv import (
    JUDGMENT_COLUMNS,
    JUDGMENT_OPTIONAL_COLUMNS,
    PLATFORM_COLUMNS,
    PREDICTION_COLUMNS,
    REPEAT_COLUMN,
    REQUIRED_JUDGMENT_CELLS,
    REQUIRED_PREDICTION_CELLS,
    JudgmentRows,
    parse_seconds,
    parse_timestamp,
    read_rows,
)
from evaluation.vocabulary import SKIP_QUESTION, TIE

CHUNK = 5000
NOT_AVAILABLE = "N/A"


@dataclass
class ItemInfo:
    """What row validation needs to know about one item."""

    pk: int
    questions: dict  # question id -> {"options": [...]} or {"scale": [lo, hi]}
    candidates: list  # candidate ids ([] for a kind without candidates)
    n_shown: int = 0  # how many of them one screen shows (StudyKind.screen_size)
    data: dict | None = None  # the item's data (the kind's check across one screen's answers)


class _Targets:
    """Loads studies (locked) and the referenced items once, for row validation."""

    def __init__(self):
        self.studies, self.items = {}, {}

    def load(self, parsed):
        wanted = defaultdict(set)
        for _line, row in parsed:
            wanted[row["study"]].add(row["item_id"])
        for study in Study.objects.select_for_update().filter(slug__in=list(wanted)):
            self.studies[study.slug] = study
            config = study_config(study)
            ids = list(wanted[study.slug])
            for start in range(0, len(ids), CHUNK):
                query = Item.objects.filter(study=study, item_id__in=ids[start:start + CHUNK])
                for pk, item_id, data in query.values_list("pk", "item_id", "data"):
                    questions = {q["id"]: q for q in questions_for(study.kind, config, data)}
                    kind = get_kind(study.kind)
                    self.items[(study.slug, item_id)] = ItemInfo(pk, questions, kind.candidate_ids(data),
                                                                 kind.screen_size(config, data), data)

    def find(self, row, errors, line):
        """(Study, ItemInfo) or None after recording why not."""
        study = self.studies.get(row["study"])
        if study is None:
            errors.add(line, f"unknown study {row['study']!r}")
            return None
        item = self.items.get((row["study"], row["item_id"]))
        if item is None:
            errors.add(line, f"unknown item_id {row['item_id']!r} in study {row['study']!r}")
            return None
        return study, item


def _parse(binary_file, columns, required, errors):
    """Rows with stripped cells; empty required cells are errors."""
    parsed = []
    optional = (*JUDGMENT_OPTIONAL_COLUMNS, REPEAT_COLUMN) if columns == JUDGMENT_COLUMNS else ()
    for line, row in read_rows(binary_file, columns, optional):
        if isinstance(row, str):
            errors.add(line, row)
            continue
        row = {k: v.strip() for k, v in row.items()}
        unstorable = next(((c, r) for c, r in ((c, unstorable_text(v)) for c, v in row.items()) if r), None)
        if unstorable:
            errors.add(line, f"{unstorable[0]}: {unstorable[1]}")
            continue
        empty = [c for c in required if not row[c]]
        if empty:
            errors.add(line, f"empty {', '.join(empty)}")
            continue
        parsed.append((line, row))
    return parsed


# --- judgments ---------------------------------------------------------------------------

def judgment_value(question, value):
    """The stored answer (annotate.studies.answers), or ValueError with the reason."""
    try:
        return answer_value(question, value)
    except InvalidAnswer as exc:
        raise ValueError(f"value for {question['id']!r} {exc.reason}") from None


def check_shown_order(question, item, cell, value):
    """'' or option ids joined by '|': a permutation of the question's options (with `tie`,
    as the task page records it) or of the candidates alone (choices), or of 0|1
    (similarity pairs). A choice on an item of more candidates than one screen shows names
    the ones shown (`_shown_subset`). Returns the list, or raises ValueError."""
    picks_candidate = picks_subset(question, item)
    if not cell and not picks_candidate:
        return []
    if len(cell) > MAX_SHOWN_ORDER_CHARS:
        raise ValueError(f"shown_order must be at most {MAX_SHOWN_ORDER_CHARS} characters")
    order = cell.split("|") if cell else []
    if picks_candidate:
        return _shown_subset(question, item, order, value)
    if "options" in question:
        allowed = [item.candidates, list(question["options"])]
    elif not item.candidates:  # similarity pair: text order
        allowed = [["0", "1"]]
    else:
        return order  # rating questions of pairwise kinds: kept as given
    if not any(sorted(order) == sorted(expected) for expected in allowed):
        raise ValueError(f"shown_order must order {'|'.join(allowed[0])}, got {cell!r}")
    return order


def _shown_subset(question, item, order, value):
    """The shown order of a choice on an item with more candidates than a screen shows: that
    many distinct candidates, then `tie` where the question offers it; the value is one of
    them (the report reads what was compared from it)."""
    shown_ids = [o for o in order if o != TIE]
    ties = len(order) - len(shown_ids)
    if (len(shown_ids) != item.n_shown or len(set(shown_ids)) != len(shown_ids)
            or not set(shown_ids) <= set(item.candidates)
            or ties > (TIE in question["options"]) or (ties and order[-1] != TIE)):
        raise ValueError(f"shown_order must name the {item.n_shown} candidates shown (of {'|'.join(item.candidates)}; "
                         f"then 'tie' where the study allows it), got {'|'.join(order)!r}")
    if value not in shown_ids and value != TIE:
        raise ValueError(f"value {value!r} is not one of the candidates shown ({'|'.join(shown_ids)})")
    return order


def import_judgments(binary_file, *, user=None, source=""):
    """Load a judgments CSV/JSONL. Returns {"studies", "created", "skipped", "annotators_created"}."""
    errors = ErrorList()
    parsed = _parse(binary_file, JUDGMENT_COLUMNS, REQUIRED_JUDGMENT_CELLS, errors)
    with transaction.atomic():
        targets = _Targets()
        targets.load(parsed)
        every_row = _validate_judgments(parsed, targets, errors)
        rows = [row for row in every_row if not row["repeat"]]
        existing, existing_repeats = _existing_judgments(every_row)
        new_rows, skipped = [], 0
        repeats, repeats_skipped = new_repeats(every_row, rows, existing, existing_repeats, errors)
        skipped += repeats_skipped
        for row in rows:
            stored = existing.get((row["item"].pk, row["annotator"], row["question"]))
            if stored is None:
                new_rows.append(row)
            elif stored == row["value"]:
                skipped += 1
            else:
                errors.add(row["line"], f"{row['annotator']} already answered {row['question']!r} on "
                                        f"{row['item_id']!r} with {stored!r}, not {row['value']!r}")
        _check_new_usernames(rows, errors)
        _check_skips(rows, existing, errors)
        check_screens(rows, existing, errors)
        if errors:
            raise BatchInvalid(errors.final())
        users, n_new_users = _annotator_users({r["annotator"] for r in every_row})
        assignments = _complete_assignments(new_rows, users)
        Judgment.objects.bulk_create([
            Judgment(study=row["study"], item_id=row["item"].pk, annotator=users[row["annotator"]],
                     assignment=assignments[(row["item"].pk, row["annotator"])], question=row["question"],
                     value=row["value"], shown_order="|".join(row["order"]), seconds=row["seconds"],
                     submitted_at=row["submitted_at"], comment=row["comment"])
            for row in new_rows], batch_size=CHUNK)
        store_repeats(repeats, users)
        refresh_item_counters({row["item"].pk for row in new_rows})
        created = Counter(row["study"].slug for row in new_rows + repeats)
        studies = {row["study"].slug: row["study"] for row in every_row}
        for slug, study in studies.items():
            AuditLog.objects.create(study=study, user=user, action="import_judgments", object_type="study",
                                    object_id=slug, after={"source": source, "created": created[slug]})
    return {"studies": sorted(studies), "created": len(new_rows) + len(repeats), "skipped": skipped,
            "annotators_created": n_new_users}


def _validate_judgments(parsed, targets, errors):
    rows, first_line = [], {}
    for line, row in parsed:
        found = targets.find(row, errors, line)
        if found is None:
            continue
        study, item = found
        question = SKIP if row["question"] == SKIP_QUESTION else item.questions.get(row["question"])
        if question is None:
            errors.add(line, f"unknown question {row['question']!r} for this {study.kind} item "
                             f"(questions: {', '.join(item.questions)})")
            continue
        if len(row["annotator"]) > 150:
            errors.add(line, "annotator must be at most 150 characters")
            continue
        try:
            value = judgment_value(question, row["value"])
            order = check_shown_order(question, item, row["shown_order"], value)
            seconds = parse_seconds(row["seconds"])
            submitted_at = parse_timestamp(row["submitted_at"])
            if len(row["comment"]) > 2000:
                raise ValueError("comment must be at most 2000 characters")
        except ValueError as exc:
            errors.add(line, str(exc))
            continue
        if row.get(REPEAT_COLUMN, "") not in ("", "0", "1"):
            errors.add(line, f"repeat must be 1 (a test-retest repeat) or empty, got {row[REPEAT_COLUMN]!r}")
            continue
        repeat = row.get(REPEAT_COLUMN) == "1"
        key = (item.pk, row["annotator"], row["question"], repeat)
        if key in first_line:
            errors.add(line, f"duplicate of line {first_line[key]} (same item, annotator and question)")
            continue
        first_line[key] = line
        rows.append({"line": line, "study": study, "item": item, "item_id": row["item_id"],
                     "annotator": row["annotator"], "question": row["question"], "value": value,
                     "order": order, "seconds": seconds, "submitted_at": submitted_at,
                     "comment": row["comment"], "repeat": repeat})
    return rows


def _check_skips(rows, existing, errors):
    """An (item, annotator) is either skipped or answered: `_skip` rows may not sit next
    to answers, in the file or in the database."""
    questions = defaultdict(set)
    for (item_pk, annotator, question) in existing:
        questions[(item_pk, annotator)].add(question)
    for row in rows:
        questions[(row["item"].pk, row["annotator"])].add(row["question"])
    for row in rows:
        seen = questions[(row["item"].pk, row["annotator"])]
        if SKIP_QUESTION in seen and len(seen) > 1:
            errors.add(row["line"], f"{row['annotator']} both skipped and answered {row['item_id']!r}")


def _existing_judgments(rows):
    """({(item pk, username, question): value} of first answers, the same of test-retest
    repeats) for the items the file touches."""
    item_pks = sorted({row["item"].pk for row in rows})
    stored, repeats = {}, {}
    for start in range(0, len(item_pks), CHUNK):
        query = Judgment.objects.filter(item_id__in=item_pks[start:start + CHUNK])
        rows = query.values_list("item_id", "annotator__username", "question", "value", "repeat_of_id")
        for item_pk, username, question, value, repeat_of in rows:
            (stored if repeat_of is None else repeats)[(item_pk, username, question)] = value
    return stored, repeats


def username_problem(name):
    """Why Django would refuse `name` as a new username, or None. The import must not
    create accounts the admin could not: zero-width characters (U+200B...) and other
    invisible or unnormalized text make look-alikes of real annotators ("alice\u200b")."""
    User = get_user_model()
    normalized = User.normalize_username(name)
    if normalized != name:
        return (f"annotator {name!r} is not in Unicode normal form (NFKC: {normalized!r}); "
                "Django stores usernames normalized")
    if PARTICIPANT_USERNAME.match(name):  # <platform>:<id>, made by participant links
        return None
    try:
        User.username_validator(name)
    except ValidationError:
        return f"annotator {name!r} is not a valid username: letters, digits and @ . + - _ only"
    return None


def _check_new_usernames(rows, errors):
    """Annotators the file would create must be usernames Django accepts; existing
    accounts are matched as they are."""
    names = {row["annotator"] for row in rows}
    existing = set(get_user_model().objects.filter(username__in=names).values_list("username", flat=True))
    problems = {name: username_problem(name) for name in names - existing}
    for row in rows:
        if problems.get(row["annotator"]):
            errors.add(row["line"], problems[row["annotator"]])


def _annotator_users(usernames):
    """{username: User}; unknown annotators are created with an unusable password and no role."""
    User = get_user_model()
    users = {u.username: u for u in User.objects.filter(username__in=usernames)}
    missing = sorted(usernames - set(users))
    if missing:
        User.objects.bulk_create([User(username=name, password=make_password(None)) for name in missing])
        users.update({u.username: u for u in User.objects.filter(username__in=missing)})
    return users, len(missing)


def _complete_assignments(rows, users):
    """One completed Assignment per (item, annotator) of the new judgments; an open one is
    completed. Returns {(item pk, username): Assignment}."""
    groups = defaultdict(list)
    for row in rows:
        groups[(row["item"].pk, row["annotator"])].append(row)
    found = {}
    item_pks = sorted({pk for pk, _ in groups})
    for start in range(0, len(item_pks), CHUNK):
        query = Assignment.objects.filter(item_id__in=item_pks[start:start + CHUNK], repeat_of__isnull=True,
                                          annotator__in=[users[n] for n in {a for _, a in groups}])
        for assignment in query.select_related("annotator"):
            found[(assignment.item_id, assignment.annotator.username)] = assignment
    now, to_create, to_update = timezone.now(), [], []
    for key, group in groups.items():
        times = [r["submitted_at"] for r in group if r["submitted_at"]]
        seconds = next((r["seconds"] for r in group if r["seconds"] is not None), None)
        orders = {r["question"]: r["order"] for r in group if r["order"]}
        pair = next(([o for o in r["order"] if o != TIE] for r in group
                     if picks_subset(r["item"].questions.get(r["question"]), r["item"])), None)
        if pair:  # the candidates compared count in the study's pairs (tuples), as the engine's do
            orders[CANDIDATES_KEY] = pair
        skipped = any(r["question"] == SKIP_QUESTION for r in group)
        assignment = found.get(key)
        if assignment is None:
            found[key] = Assignment(study=group[0]["study"], item_id=key[0], annotator=users[key[1]],
                                    shown_order=orders, completed_at=max(times, default=now), seconds=seconds,
                                    skipped=skipped)
            to_create.append(found[key])
        else:
            assignment.shown_order = {**orders, **(assignment.shown_order or {})}
            if assignment.completed_at is None:
                assignment.completed_at = max(times, default=now)
                assignment.seconds = assignment.seconds if assignment.seconds is not None else seconds
                assignment.skipped = skipped
            to_update.append(assignment)
    Assignment.objects.bulk_create(to_create, batch_size=CHUNK)
    Assignment.objects.bulk_update(to_update, ["shown_order", "completed_at", "seconds", "skipped"], batch_size=CHUNK)
    return found


def refresh_item_counters(item_pks):
    """Recount n_assigned (completed + open unexpired) and n_completed from Assignment
    (skipped assignments hold no slot)."""
    now, pks = timezone.now(), sorted(item_pks)
    completed = Q(completed_at__isnull=False, skipped=False)
    live = completed | (Q(completed_at__isnull=True) & (Q(expires_at__isnull=True) | Q(expires_at__gt=now)))

    def count(condition):
        sub = (Assignment.objects.filter(condition, item_id=OuterRef("pk"), repeat_of__isnull=True).order_by()
               .values("item_id").annotate(n=Count("pk")).values("n"))
        return Coalesce(Subquery(sub), 0)

    for start in range(0, len(pks), CHUNK):
        Item.objects.filter(pk__in=pks[start:start + CHUNK]).update(n_assigned=count(live),
                                                                    n_completed=count(completed))


def export_judgment_rows(study):
    """The study's judgments as typed dicts (JUDGMENT_COLUMNS, then the PLATFORM_COLUMNS
    of participants from recruiting platforms), item order then annotator; test-retest
    repeats included, marked `repeat` (JudgmentRows: the file then has the column)."""
    repeats = Judgment.objects.filter(study=study, repeat_of__isnull=False).exists()
    return JudgmentRows(_judgment_rows(study), repeat_column=repeats)


def _judgment_rows(study):
    platform_ids = {user_id: dict(zip(PLATFORM_COLUMNS, ids)) for user_id, *ids in study.participants.values_list(
        "user_id", "platform", "platform_study_id", "platform_session_id")}
    query = (Judgment.objects.filter(study=study).order_by("item__position", "annotator__username", "id")
             .values_list("item__item_id", "annotator__username", "question", "value", "shown_order",
                          "seconds", "submitted_at", "comment", "annotator_id", "repeat_of_id"))
    for item_id, annotator, question, value, shown_order, seconds, submitted_at, comment, user_id, repeat_of in (
            query.iterator(chunk_size=CHUNK)):
        yield {"study": study.slug, "item_id": item_id, "annotator": annotator, "question": question,
               "value": value, "shown_order": shown_order, "seconds": seconds, "submitted_at": submitted_at,
               "comment": comment, **platform_ids.get(user_id, {}), REPEAT_COLUMN: repeat_of is not None}


# --- predictions -------------------------------------------------------------------------

def check_prediction_value(study, item, question_id, value):
    """'' (unparsed), 'N/A', a candidate id or option, or a number, by question."""
    if value in ("", NOT_AVAILABLE):
        return value
    question = item.questions.get(question_id)
    if question is not None and "options" in question:
        try:
            return answer_value(question, value)
        except InvalidAnswer:
            raise ValueError(f"value for {question_id!r} must be one of {question['options']}, N/A or empty") from None
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"value for {question_id!r} must be a number, N/A or empty, got {value!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"value for {question_id!r} must be a finite number")
    return value


def import_predictions(binary_file, *, user=None, source="", only_study=None):
    """Load a predictions CSV. Returns {"studies", "created", "updated", "skipped"}.
    `only_study` (the API's study) refuses rows of other studies."""
    errors = ErrorList()
    parsed = _parse(binary_file, PREDICTION_COLUMNS, REQUIRED_PREDICTION_CELLS, errors)
    with transaction.atomic():
        targets = _Targets()
        targets.load(parsed)
        rows, first = {}, {}
        for line, row in parsed:
            if only_study is not None and row["study"] != only_study:
                errors.add(line, f"study {row['study']!r} is not {only_study!r}")
                continue
            found = targets.find(row, errors, line)
            if found is None:
                continue
            study, item = found
            qid = row["question"]
            if qid not in item.questions and qid not in item.candidates:
                errors.add(line, f"unknown question {qid!r}: a question id or a candidate id of the item")
                continue
            if len(row["evaluator"]) > 200 or len(row["annotator"]) > 150 or len(row["value"]) > 200:
                errors.add(line, "evaluator, annotator or value too long")
                continue
            try:
                value = check_prediction_value(study, item, qid, row["value"])
            except ValueError as exc:
                errors.add(line, str(exc))
                continue
            key = (item.pk, row["evaluator"], row["annotator"], qid)
            if key in rows and rows[key][1] != value:
                errors.add(line, f"conflicts with line {first[key]} (same item, evaluator, annotator, question)")
                continue
            first.setdefault(key, line)
            rows[key] = (study, value)
        if errors:
            raise BatchInvalid(errors.final())
        created, updated, skipped = _upsert_predictions(rows)
        for study in {s for s, _ in rows.values()}:
            draw_pending(study)  # allocation judge_uncertain: the draw waits for its evaluator's scores
            AuditLog.objects.create(study=study, user=user, action="import_predictions", object_type="study",
                                    object_id=study.slug, after={"source": source})
    studies = sorted({s.slug for s, _ in rows.values()})
    return {"studies": studies, "created": created, "updated": updated, "skipped": skipped}


def _upsert_predictions(rows):
    keys = list(rows)
    existing = {}
    item_pks = sorted({k[0] for k in keys})
    for start in range(0, len(item_pks), CHUNK):
        for pred in Prediction.objects.filter(item_id__in=item_pks[start:start + CHUNK]):
            existing[(pred.item_id, pred.evaluator, pred.annotator, pred.question)] = pred
    to_create, to_update, skipped = [], [], 0
    for key in keys:
        study, value = rows[key]
        pred = existing.get(key)
        if pred is None:
            to_create.append(Prediction(study=study, item_id=key[0], evaluator=key[1], annotator=key[2],
                                        question=key[3], value=value))
        elif pred.value == value:
            skipped += 1
        else:
            pred.value = value
            to_update.append(pred)
    Prediction.objects.bulk_create(to_create, batch_size=CHUNK)
    Prediction.objects.bulk_update(to_update, ["value"], batch_size=CHUNK)  # the report version: triggers
    return len(to_create), len(to_update), skipped
