"""ranking: listwise ranking of several outputs on one screen (spec studies.md, "Several
outputs on one screen" / "`ranking`"; statistics.md, "Best-worst and listwise ranking").

An item: the user's request (`input`), optional `reference` (the user's own text), 3 to 8
`candidates` and optional `metric_scores`. Every screen shows all of them in a recorded,
balanced permutation (AllShownKind). One question, `rank`: the full order, best first
(`"order": true`; the one answer rule, annotate.studies.answers, takes text `a>b=c>d` or a
JSON list, ties as lists inside it, and stores the text). The header's `ties` (false by
default) lets an annotator put outputs in one rank. A partial or repeated order, or one
naming tokens of another screen, is refused at every door (page, API, import, gold).
Stored answers must fit Judgment.value (200 characters): a batch is refused when an item's
candidate ids, joined, would not fit, or when an id holds ">" or "=".
The page: templates/annotate/_ranking.html with static/js/order_question.js (tap, drag, arrow
keys). Report: evaluation.report.kinds.ranking (Plackett-Luce, Kendall's W).
"""
import numpy as np

from annotate.kinds.all_shown import AllShownKind
from annotate.kinds.base import MAX_ID_CHARS, TEXT_SCHEMA, is_text
from annotate.kinds.two_candidate import CANDIDATES_SCHEMA
from evaluation.screens.answer_checks import RANK_SEP, TIE_SEP, order_text

RANK = "rank"
RANK_TEXT = "Rank the outputs from best to worst."
DEMO_ITEMS, DEMO_ANNOTATORS, DEMO_POOL, DEMO_SEED = 12, 5, 8, 20261207
# True Plackett-Luce strengths (log scale) of the demo's simulated systems.
DEMO_STRENGTHS = {"profile-rag": 1.0, "bm25-k2": 0.5, "recent-k4": 0.1, "no-profile": -0.5, "generic-lm": -1.1}


class RankingKind(AllShownKind):
    name = "ranking"
    order = 8
    item_keys = ("input", "candidates")
    optional_item_keys = ("reference", "metric_scores")
    header_keys = ("ties",)
    bare_gold_question = RANK
    inline_questions = True  # the template draws the ranking widget in the item
    demo_slug = "demo-ranking"
    header_schema = {"ties": {"type": "boolean", "default": False,
                              "description": "Whether an annotator may put several outputs in one rank."}}
    display_schema = {"input": {**TEXT_SCHEMA, "description": "The user's request."},
                      "reference": {**TEXT_SCHEMA, "description": "The user's own text (\"\" when the item has none)."},
                      "candidates": CANDIDATES_SCHEMA}

    def header_config(self, study, error):
        if "ties" not in study:
            return {}
        if not isinstance(study["ties"], bool):
            error(f"'ties' must be true or false, got {study['ties']!r}")
            return {}
        return {"ties": study["ties"]}

    def report_config(self, config):
        return {"ties": False, **config}

    def check_item(self, obj, config, error):
        candidates_ok = self.check_candidates(obj, config, error)
        texts_ok = self.check_texts(obj, ("input",), error)
        if "reference" in obj and not is_text(obj["reference"]):
            error("'reference' must be a non-empty string")
            texts_ok = False
        if candidates_ok:
            ids = [c["id"] for c in obj["candidates"]]
            marked = [cid for cid in ids if RANK_SEP in cid or TIE_SEP in cid]
            if marked:
                error(f"candidate id {marked[0]!r} contains '{RANK_SEP}' or '{TIE_SEP}', which a stored ranking "
                      "uses between ids")
                candidates_ok = False
            elif len(order_text([ids])) > MAX_ID_CHARS:
                error(f"the candidate ids joined into a ranking ({len(order_text([ids]))} characters) exceed the "
                      f"{MAX_ID_CHARS} characters a stored answer may have: use shorter ids")
                candidates_ok = False
        if candidates_ok and texts_ok:
            self.check_metric_scores(obj, error)

    def gold_answers(self, gold, questions, error):
        return {RANK: gold}  # a bare gold value is the order

    def questions(self, config, item_data):
        ids = [c["id"] for c in item_data.get("candidates") or []]
        return [{"id": RANK, "text": RANK_TEXT, "options": ids, "order": True, "ties": bool(config.get("ties"))}]

    def example_answers(self, questions, pick=0):
        """The options rotated by `pick`, best first: a full order of the shown outputs."""
        out = {}
        for q in questions:
            if q.get("options"):
                options = list(q["options"])
                k = pick % len(options)
                out[q["id"]] = RANK_SEP.join(options[k:] + options[:k])
        return out

    def option_keys(self, question_id, position, option):
        return ()  # no key picks an output: the arrow keys move the focused one (static/js/order_question.js)

    def key_help(self, config):
        lines = [("Tab", "go to an output"), ("Enter / Space", "put a not-yet-ranked output next in the ranking"),
                 ("↑ ↓", "move the focused output up or down (Home / End: to the top / bottom)"),
                 ("Delete", "take the focused output out of the ranking")]
        if config.get("ties"):
            lines.append(("=", "put the focused output in the same rank as the one above (again: undo)"))
        return lines

    def example_header(self):
        return {}

    # The demo: five systems ranked by simulated annotators ---------------------------------------

    def demo_batch(self):
        head = {"study": {"slug": self.demo_slug, "kind": self.name, "ties": True,
                          "annotations_per_item": DEMO_ANNOTATORS + 3, "gold_rate": 0.0,
                          "title": "Listwise ranking of five systems (demo; --simulated adds SIMULATED judgments)",
                          "instructions": ("With `manage.py demo --simulated`: **simulated** rankings from "
                                           "`sim-rank-NN` accounts, so the report shows its tables at once. Rank the "
                                           "outputs from the one closest to the user's own text to the one furthest "
                                           "from it: tap them in order, drag them, or move the focused one with the "
                                           "arrow keys. Two outputs that are equally good may share a rank.")}}
        return [head] + self.demo_items("rank", DEMO_ITEMS, demo_texts,
                                        "profile-rag>bm25-k2>no-profile>generic-lm")

    def demo_judgments(self) -> bytes:
        """A judgments CSV for the demo study (import_judgments): each item ranked by
        DEMO_ANNOTATORS simulated annotators, shown in a random order; each order drawn from
        Plackett-Luce with DEMO_STRENGTHS (Gumbel noise), seeded; no ties."""
        rng = np.random.default_rng(DEMO_SEED)
        ids = list(DEMO_STRENGTHS)
        strength = np.array([DEMO_STRENGTHS[s] for s in ids])
        rows = ["study,item_id,annotator,question,value,shown_order,seconds,submitted_at"]
        for index in range(DEMO_ITEMS):
            for judge in rng.choice(DEMO_POOL, size=DEMO_ANNOTATORS, replace=False):
                shown = [ids[k] for k in rng.permutation(len(ids))]
                order = [ids[k] for k in np.argsort(-(strength + rng.gumbel(size=len(ids))))]
                seconds = round(float(rng.lognormal(np.log(45.0), 0.4)), 1)
                rows.append(f"{self.demo_slug},rank-{index + 1:02d},sim-rank-{judge + 1:02d},{RANK},"
                            f"{RANK_SEP.join(order)},{'|'.join(shown)},{seconds},")
        return ("\n".join(rows) + "\n").encode()


DEMO_TOPICS = ["night train", "pottery class", "library app", "bass guitar", "tent for two", "garden hose"]


def demo_texts(index):
    """(request, the user's own text, {system: text}) of demo item `index`: the better the
    system, the more of the user's own words it keeps."""
    topic = DEMO_TOPICS[index % len(DEMO_TOPICS)]
    opinion = ["better than I hoped", "fine but overpriced"][index % 2]
    own = f"My {topic}: {opinion}. My partner disagrees, but I would choose it again."
    return f"Write a short review of my {topic}.", own, {
        "profile-rag": f"My {topic}: {opinion}. My partner disagrees; I would choose it again.",
        "bm25-k2": f"The {topic} is {opinion}, and I would choose it again.",
        "recent-k4": f"My {topic} was {opinion}.",
        "no-profile": f"This {topic} offers a good balance of quality and value.",
        "generic-lm": "Here is a review of the product you asked about.",
    }


KIND = RankingKind()
