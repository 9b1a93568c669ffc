"""best_worst: best-worst scaling of several outputs on one screen (spec studies.md, "Several
outputs on one screen"; statistics.md, "Best-worst and listwise ranking").

An item: the user's request (`input`), optional `reference` (the user's own text), 3 to 8
`candidates` and optional `metric_scores`. The header's `tuple_size` (3-6, default 4) is the
most outputs one screen shows: an item with more is shown in tuples of that size, the tuples
of a balanced incomplete block design of its candidates (evaluation.screens.tuple_design),
the one the study has shown least next, so that every pair of systems co-occurs as evenly as
possible across the study; the tuple is recorded in `shown_order`. The annotator answers
`best` and `worst` (one shown output each, never the same: refused at every door with the
same message). Keys: 1-6 pick the best by position, q w e r t y the worst (as Potato).
Report: evaluation.report.kinds.best_worst.
"""
from collections import Counter
from functools import lru_cache

import numpy as np

from annotate.kinds.all_shown import AllShownKind
from annotate.kinds.base import TEXT_SCHEMA, is_text
from annotate.kinds.two_candidate import CANDIDATES_SCHEMA
from evaluation.screens.answer_checks import TUPLE_SIZES, InputError, check_tuple_size
from evaluation.screens.tuple_design import design_tuples

BEST, WORST = "best", "worst"
DEFAULT_TUPLE_SIZE = 4
BEST_KEYS, WORST_KEYS = "123456", "qwerty"
SAME_ANSWER = "best and worst must be two different outputs"
BEST_TEXT = "Which output is the best?"
WORST_TEXT = "Which output is the worst?"


@lru_cache(maxsize=64)
def _design(n_systems: int, tuple_size: int) -> tuple:
    """The tuples (candidate positions) of an item of `n_systems` candidates (seed 0: the
    same design on every machine and for every item of that many)."""
    return tuple(design_tuples(n_systems, tuple_size))


def next_tuple(ids: list, tuple_size: int, study_sets: Counter | None, rng) -> list:
    """The tuple of `ids` the next screen shows, in item order: of the design's tuples (of the
    ids sorted, so items with the same candidates share them), one the study has shown least
    (`study_sets`: {sorted ids: n}), then the one whose pairs co-occurred least, then a seeded draw."""
    ordered = sorted(ids)
    tuples = [tuple(ordered[k] for k in t) for t in _design(len(ids), tuple_size)]
    counts = study_sets or Counter()
    pairs: Counter = Counter()
    for shown, n in counts.items():
        for i, a in enumerate(shown):
            for b in shown[i + 1:]:
                pairs[(a, b)] += n

    def cost(t):
        return counts[t], sum(pairs[(a, b)] for i, a in enumerate(t) for b in t[i + 1:])

    fewest = min(map(cost, tuples))
    tied = [t for t in tuples if cost(t) == fewest]
    chosen = set(tied[rng.randrange(len(tied))] if rng is not None and len(tied) > 1 else tied[0])
    return [cid for cid in ids if cid in chosen]


class BestWorstKind(AllShownKind):
    name = "best_worst"
    order = 7
    item_keys = ("input", "candidates")
    optional_item_keys = ("reference", "metric_scores")
    header_keys = ("tuple_size",)
    demo_slug = "demo-best-worst"
    header_schema = {"tuple_size": {"type": "integer", "minimum": TUPLE_SIZES[0], "maximum": TUPLE_SIZES[-1],
                                    "default": DEFAULT_TUPLE_SIZE,
                                    "description": "The most outputs one screen shows; an item with more is "
                                                   "shown in balanced tuples of this size."}}
    display_schema = {"input": {**TEXT_SCHEMA, "description": "The user's request."},
                      "reference": {**TEXT_SCHEMA, "description": "The user's own text (\"\" when the item has none)."},
                      "candidates": CANDIDATES_SCHEMA}

    def header_config(self, study, error):
        if "tuple_size" not in study:
            return {}
        try:
            return {"tuple_size": check_tuple_size(study["tuple_size"])}
        except InputError as exc:
            error(str(exc))
            return {}

    def max_screen(self, config):
        return int((config or {}).get("tuple_size") or DEFAULT_TUPLE_SIZE)

    def report_config(self, config):
        return {"tuple_size": DEFAULT_TUPLE_SIZE, **config}

    def check_item(self, obj, config, error):
        candidates_ok = self.check_candidates(obj, config, error)
        texts_ok = self.check_texts(obj, ("input",), error)
        if "reference" in obj and not is_text(obj["reference"]):
            error("'reference' must be a non-empty string")
            texts_ok = False
        if candidates_ok and texts_ok:
            self.check_metric_scores(obj, error)

    def questions(self, config, item_data):
        ids = [c["id"] for c in item_data.get("candidates") or []]
        return [{"id": BEST, "text": BEST_TEXT, "options": list(ids)},
                {"id": WORST, "text": WORST_TEXT, "options": list(ids)}]

    def screen_candidates(self, ids, config, study_sets, rng):
        size = self.max_screen(config)
        return list(ids) if len(ids) <= size else next_tuple(ids, size, study_sets, rng)

    def answers_error(self, answers, questions, shown_item):
        best, worst = answers.get(BEST), answers.get(WORST)
        if best is not None and best == worst:
            return {WORST: SAME_ANSWER}
        return None

    def option_keys(self, question_id, position, option):
        keys = WORST_KEYS if question_id == WORST else BEST_KEYS
        return (keys[position],) if position < len(keys) else ()

    def key_help(self, config):
        return [("1 … 6", "pick the best output (by its place: 1 = Output A)"),
                ("Q W E R T Y", "pick the worst output (Q = Output A)")]

    def example_header(self):
        return {"tuple_size": DEFAULT_TUPLE_SIZE}

    # The demo: six systems in tuples of four, with simulated judgments ---------------------------

    def demo_batch(self):
        head = {"study": {"slug": self.demo_slug, "kind": self.name, "tuple_size": DEFAULT_TUPLE_SIZE,
                          "annotations_per_item": DEMO_ANNOTATORS + 3, "gold_rate": 0.0,
                          "title": "Best-worst scaling of six systems (demo; --simulated adds SIMULATED judgments)",
                          "instructions": DEMO_INSTRUCTIONS}}
        return [head] + self.demo_items("bw", DEMO_ITEMS, demo_texts,
                                        {BEST: "profile-rag", WORST: "generic-lm"})

    def demo_judgments(self) -> bytes:
        """A judgments CSV for the demo study (import_judgments): each item judged by
        DEMO_ANNOTATORS simulated annotators, on the design's tuples in turn (shown in a
        random order); best drawn with P ∝ exp(strength), worst among the rest with
        P ∝ exp(-strength) (the max-diff model), seeded."""
        rng = np.random.default_rng(DEMO_SEED)
        ids = list(DEMO_STRENGTHS)
        design = [[sorted(ids)[k] for k in t] for t in _design(len(ids), DEFAULT_TUPLE_SIZE)]
        rows, turn = ["study,item_id,annotator,question,value,shown_order,seconds,submitted_at"], 0
        for index in range(DEMO_ITEMS):
            for judge in rng.choice(DEMO_POOL, size=DEMO_ANNOTATORS, replace=False):
                shown = [str(s) for s in rng.permutation(design[turn % len(design)])]
                turn += 1
                strength = np.array([DEMO_STRENGTHS[s] for s in shown])
                best = shown[rng.choice(len(shown), p=np.exp(strength) / np.exp(strength).sum())]
                rest = [s for s in shown if s != best]
                weak = np.exp(-np.array([DEMO_STRENGTHS[s] for s in rest]))
                worst = rest[rng.choice(len(rest), p=weak / weak.sum())]
                seconds = round(float(rng.lognormal(np.log(30.0), 0.4)), 1)
                for question, value in ((BEST, best), (WORST, worst)):
                    when = f"2026-12-02T{9 + index // 4:02d}:{index % 4 * 15:02d}:00+00:00"
                    rows.append(f"{self.demo_slug},bw-{index + 1:02d},sim-bw-{judge + 1:02d},{question},{value},"
                                f"{'|'.join(shown)},{seconds},{when}")
        return ("\n".join(rows) + "\n").encode()


DEMO_ITEMS, DEMO_ANNOTATORS, DEMO_POOL, DEMO_SEED = 12, 6, 10, 20261206
DEMO_STRENGTHS = {"profile-rag": 1.2, "bm25-k2": 0.7, "recent-k4": 0.3, "no-profile": -0.4,
                  "random-profile": -0.8, "generic-lm": -1.0}
DEMO_INSTRUCTIONS = ("With `manage.py demo --simulated`: **simulated** judgments from `sim-bw-NN` accounts, so the "
                     "report shows its tables at once. Of the outputs shown, pick the one closest to the user's own "
                     "text as **best** and the one furthest from it as **worst**.")
DEMO_TOPICS = ["folding bike", "lentil soup", "trail shoes", "rain jacket", "espresso grinder", "night train"]


def demo_texts(index):
    """(request, the user's own text, {system: text}) of demo item `index`: the better the
    system, the more of the user's own words it keeps."""
    topic = DEMO_TOPICS[index % len(DEMO_TOPICS)]
    opinion = ["worth every cent", "a small letdown"][index % 2]
    own = f"My {topic}: {opinion}. Setup took an hour, and I would still buy it again."
    return f"Write a short review of my {topic}.", own, {
        "profile-rag": f"My {topic}: {opinion}. Setup took an hour; I would still buy it again.",
        "bm25-k2": f"The {topic} is {opinion}; setup took an hour.",
        "recent-k4": f"My {topic} was {opinion}, I would buy it again.",
        "no-profile": f"This {topic} offers a good balance of quality and value.",
        "random-profile": f"As a keen traveller I found the {topic} practical on long trips.",
        "generic-lm": "Here is a review of the product you asked about.",
    }


KIND = BestWorstKind()
