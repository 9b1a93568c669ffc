"""Test-retest repeats in a judgments file (interfaces.md: `1` in the optional last column
`repeat`): which rows are new, and storing them with `repeat_of` = the first answer they
repeat (annotate.studies.judgments_io calls both inside its one transaction)."""
from annotate.models import Judgment
from evaluation.vocabulary import SKIP_QUESTION

CHUNK = 5000
def new_repeats(every_row, firsts, existing, existing_repeats, errors):
    """(rows of new test-retest repeats (`repeat` = 1), how many were stored already). A
    repeat needs the first answer it repeats, stored or in the file (a skipped repeat: any
    first answer of the item); a stored repeat with another value is an error, as a first."""
    answered = {(pk, who) for pk, who, _ in existing} | {(r["item"].pk, r["annotator"]) for r in firsts}
    first_keys = set(existing) | {(r["item"].pk, r["annotator"], r["question"]) for r in firsts}
    new, skipped = [], 0
    for row in every_row:
        if not row["repeat"]:
            continue
        key = (row["item"].pk, row["annotator"], row["question"])
        has_first = (key[:2] in answered) if row["question"] == SKIP_QUESTION else key in first_keys
        stored = existing_repeats.get(key)
        if not has_first:
            errors.add(row["line"], f"a repeat needs the first answer of {row['annotator']} to {row['question']!r} "
                                    f"on {row['item_id']!r} (stored or in the file)")
        elif stored is None:
            new.append(row)
        elif stored == row["value"]:
            skipped += 1
        else:
            errors.add(row["line"], f"{row['annotator']} already repeated {row['question']!r} on "
                                    f"{row['item_id']!r} with {stored!r}, not {row['value']!r}")
    return new, skipped


def store_repeats(rows, users):
    """Stores test-retest repeats with `repeat_of` = the first answer (stored before them)."""
    if not rows:
        return
    firsts = {}
    for judgment in Judgment.objects.filter(item_id__in={r["item"].pk for r in rows}, repeat_of__isnull=True,
                                            annotator__in={users[r["annotator"]].pk for r in rows}).order_by("-id"):
        firsts[(judgment.item_id, judgment.annotator_id, judgment.question)] = judgment.pk
        firsts[(judgment.item_id, judgment.annotator_id, "")] = judgment.pk
    Judgment.objects.bulk_create([
        Judgment(study=row["study"], item_id=row["item"].pk, annotator=users[row["annotator"]],
                 question=row["question"], value=row["value"], shown_order="|".join(row["order"]),
                 seconds=row["seconds"], submitted_at=row["submitted_at"], comment=row["comment"],
                 repeat_of_id=firsts.get((row["item"].pk, users[row["annotator"]].pk, row["question"]),
                                         firsts.get((row["item"].pk, users[row["annotator"]].pk, ""))))
        for row in rows], batch_size=CHUNK)

