"""import_judgments: the answers of one screen (one annotator on one item) checked together.

A kind may refuse answers that are each valid but cannot stand together (best-worst scaling: best
and worst the same output; StudyKind.answers_error): the file's rows of one (item,
annotator) are checked with what is already stored for them. Rows that name the
candidates shown (an item of more candidates than one screen shows) must name the same
ones: one screen showed them all.
"""
from collections import defaultdict

from annotate.kinds import get_kind
from evaluation.vocabulary import SKIP_QUESTION, TIE


def picks_subset(question, item) -> bool:
    """A choice among the candidates of an item with more of them than one screen shows (the
    kind's `screen_size`: a pair of an item of 3+, a best-worst tuple): its shown order
    names the candidates the annotator saw."""
    return (question is not None and "options" in question and 0 < item.n_shown < len(item.candidates)
            and set(item.candidates) <= set(question["options"]))


def shown_subset(data: dict, shown_ids: list) -> dict:
    """The item's data as a screen showing `shown_ids` saw it."""
    if not shown_ids:
        return data
    return {**data, "candidates": [c for c in data.get("candidates") or [] if c.get("id") in shown_ids]}


def check_screens(rows, existing, errors):
    """Every (item, annotator) of the file: its rows and stored answers pass the kind's
    `answers_error`, and its rows name one set of shown candidates. Errors at the rows' lines."""
    groups = defaultdict(list)
    for row in rows:
        if row["question"] != SKIP_QUESTION:
            groups[(row["item"].pk, row["annotator"])].append(row)
    stored = defaultdict(dict)
    for (item_pk, annotator, question), value in existing.items():
        stored[(item_pk, annotator)][question] = value
    for key, group in groups.items():
        item = group[0]["item"]
        subsets = {tuple(sorted(o for o in r["order"] if o != TIE)) for r in group
                   if picks_subset(item.questions.get(r["question"]), item)}
        if len(subsets) > 1:
            for row in group:
                errors.add(row["line"], f"{row['annotator']}'s rows on {row['item_id']!r} name different shown "
                                        "candidates (one screen showed them: give them the same shown_order)")
            continue
        answers = {**stored[key], **{r["question"]: r["value"] for r in group}}
        data = shown_subset(item.data or {}, list(next(iter(subsets), ())))
        problems = get_kind(group[0]["study"].kind).answers_error(answers, item.questions, data)
        for qid, message in (problems or {}).items():
            lines = [r["line"] for r in group if r["question"] == qid] or [group[0]["line"]]
            errors.add(lines[0], f"{qid}: {message}")
