"""The test-retest pairs of a study for the report and the quality flags (statistics.md,
"Test-retest"): each repeat judgment (Judgment.repeat_of set) with the first answer it
repeats, in the study's terms (stored values are candidate ids and scale values, never
screen positions, so a swapped screen with the same system chosen is the same answer).

Every other reader of judgments leaves repeats out (annotate/reports/columns.py); this is
the one place that reads them. Skips (`_skip`) pair with nothing and are left out.
A question with options is compared at the nominal level, a rating at the interval level.
"""
from collections import defaultdict

from annotate.desk.retest import retest_setting
from annotate.kinds import get_kind, study_config
from annotate.models import Judgment
from evaluation.report.retest import INTERVAL, NOMINAL
from evaluation.screens.retest import MIN_REPEATS, answer_key
from evaluation.vocabulary import SKIP_QUESTION


def _rows(study):
    return list(Judgment.objects.filter(study=study, repeat_of__isnull=False).exclude(question=SKIP_QUESTION)
                .order_by("id").values_list("annotator__username", "item_id", "question", "repeat_of__value", "value",
                                            "item__data", "assignment__shown_order"))


def retest_pairs(study) -> dict[str, tuple[list, list, list]] | None:
    """{level: (annotators, first answers, repeat answers)} of the study's repeats; None
    when the study neither asks for repeats (header `retest`) nor has any."""
    rows = _rows(study)
    if not rows and retest_setting(study) is None:
        return None
    kind, config = get_kind(study.kind), study_config(study)
    levels: dict[tuple[int, str], str] = {}
    pairs: dict[str, tuple[list, list, list]] = defaultdict(lambda: ([], [], []))
    for name, item_pk, question, first, repeat, data, shown in rows:
        if (item_pk, question) not in levels:
            for q in kind.questions(config, kind.shown_item(data, shown or {})):
                levels[(item_pk, q["id"])] = NOMINAL if "options" in q else INTERVAL
        level = levels.get((item_pk, question), NOMINAL)
        who, firsts, repeats = pairs[level]
        who.append(name)
        firsts.append(first if level == NOMINAL else float(first))
        repeats.append(repeat if level == NOMINAL else float(repeat))
    return dict(pairs)


def flip_rates(study) -> dict[str, float]:
    """{username: flip rate} of the annotators with >= MIN_REPEATS repeated answers (every
    question pooled): the quality flag `quality.max_flip_rate` reads it."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name, _, _, first, repeat, _, _ in _rows(study):
        counts[name][0] += answer_key(first) != answer_key(repeat)
        counts[name][1] += 1
    return {name: flips / n for name, (flips, n) in counts.items() if n >= MIN_REPEATS}
