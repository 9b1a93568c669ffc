"""scalar_rating: PerSE's scalar rating (Per-MPST; spec studies.md).

One output is rated on its own, by each annotator for themself: a reviewer scores a movie
plot 1-10 and writes a review. An item: optional `input` (the request, premise or context
shown first), `candidate` {id, text} (the rated output and its system id, never shown),
optional `reference` (what reference-based metrics score the output against, e.g. the
user's own text in a LaMP plan; never shown) and optional `metric_scores` {metric: number}.
Header keys: `scale` (default [1, 10]), `question` (the rating question), `comment`
(`optional`, `required` or `off`: the free-text review next to the score). Questions:
`score` and, unless off, the comment: the review is the judgment's comment (one per item,
stored with its score, exported in the judgments CSV's `comment` column and read back by
import_judgments). An annotator's earlier ratings are their profile for the personalized
evaluators (models_runtime/judges/perse_scalar.py, which also holds the kind's plan builder).
Report: evaluation.report.kinds.scalar_rating.
"""
from annotate.kinds.base import (
    MAX_ID_CHARS,
    SCALE_SCHEMA,
    TEXT_SCHEMA,
    StudyKind,
    check_scale,
    id_flaw,
    is_number,
    is_text,
    metric_name_flaw,
    scale_of,
)

NAME = "scalar_rating"
SCORE = "score"
DEFAULT_SCALE = (1, 10)
DEFAULT_QUESTION = "How much would you enjoy this? 1 = not at all, 10 = very much."
COMMENT_MODES = ("optional", "required", "off")
MAX_QUESTION_CHARS = 1000


class ScalarRating(StudyKind):
    name = NAME
    order = 5
    item_keys = ("candidate",)
    optional_item_keys = ("input", "reference", "metric_scores")
    header_keys = ("scale", "question", "comment")
    candidates_key = "candidate"
    bare_gold_question = SCORE
    scale_words = ("not at all", "very much")
    demo_slug = "demo-scalar-rating"
    header_schema = {
        "scale": {**SCALE_SCHEMA, "description": "The score's scale [min, max], default [1, 10]."},
        "question": {**TEXT_SCHEMA, "description": f"The rating question, default \"{DEFAULT_QUESTION}\"."},
        "comment": {"type": "string", "enum": list(COMMENT_MODES),
                    "description": "The free-text review next to the score (the answers' `comment`): optional "
                                   "(the default), required, or off (none taken)."}}
    display_schema = {
        "input": {**TEXT_SCHEMA, "description": "The request, premise or context shown first (may be empty)."},
        "text": {**TEXT_SCHEMA, "description": "The output to rate (its system is not shown)."}}

    def header_config(self, study, error):
        config = {}
        if "scale" in study:
            reason = check_scale(study["scale"], "scale")
            if reason:
                error(reason)
            else:
                config["scale"] = list(study["scale"])
        if "question" in study:
            if not is_text(study["question"]) or len(study["question"]) > MAX_QUESTION_CHARS:
                error(f"'question' must be a non-empty string of at most {MAX_QUESTION_CHARS} characters")
            else:
                config["question"] = study["question"]
        if "comment" in study:
            if study["comment"] not in COMMENT_MODES:
                error(f"'comment' must be one of {', '.join(COMMENT_MODES)}")
            else:
                config["comment"] = study["comment"]
        return config

    def report_config(self, config):
        return dict(config, scale=list(scale_of(config, "scale", DEFAULT_SCALE)),
                    question=config.get("question") or DEFAULT_QUESTION, comment=self.comment_mode(config))

    def check_item(self, obj, config, error):
        candidate = obj["candidate"]
        if not (isinstance(candidate, dict) and set(candidate) <= {"id", "text"} and is_text(candidate.get("text"))):
            error("'candidate' must be an object {\"id\", \"text\"} with a non-empty 'text'")
            return
        flaw = id_flaw(candidate.get("id"))
        if flaw:
            error(f"'candidate.id' {flaw}")
            return
        for key in ("input", "reference"):
            if key in obj and not isinstance(obj[key], str):
                error(f"'{key}' must be a string")
        self.check_metric_scores(obj, error)

    def check_metric_scores(self, obj, error):
        """Optional `metric_scores` {metric: number}: the one candidate's score per metric."""
        scores = obj.get("metric_scores")
        if "metric_scores" not in obj:
            return
        if not isinstance(scores, dict) or not scores:
            error("'metric_scores' must be an object {metric: number}")
            return
        for metric, score in scores.items():
            if metric_name_flaw(metric, error):
                continue
            if not is_number(score):
                error(f"metric_scores[{metric!r}] must be a finite number (this kind scores its one candidate)")
            elif len(str(score)) > MAX_ID_CHARS:
                error(f"metric_scores[{metric!r}] must be written in at most {MAX_ID_CHARS} characters")

    def metric_score_rows(self, metric_scores, item_data):
        return [(metric, item_data["candidate"]["id"], str(score)) for metric, score in (metric_scores or {}).items()]

    def gold_answers(self, gold, questions, error):
        return {SCORE: gold}  # a bare gold value is the score

    def questions(self, config, item_data):
        lo, hi = scale_of(config, "scale", DEFAULT_SCALE)
        return [{"id": SCORE, "text": config.get("question") or DEFAULT_QUESTION, "scale": [lo, hi]}]

    def shown_order(self, item_data, config, randomize, rng, previous_orders):
        return {}  # one output: nothing to order

    def display(self, item_data, shown_order):
        return {"input": item_data.get("input") or "", "text": item_data["candidate"]["text"]}

    def comment_mode(self, config):
        return config.get("comment") or "optional"

    def comment_label(self, config):
        return {"required": "Your review (required)"}.get(self.comment_mode(config), "Your review (optional)")

    def example_header(self):
        return {"scale": [1, 10], "comment": "optional"}

    def example_item(self, i):
        """Item i: the plot of system plot-a (even i) or plot-b, with a ROUGE-L score."""
        system = "plot-a" if i % 2 == 0 else "plot-b"
        return {"item_id": f"ex-{i}", "input": f"A retired lighthouse keeper gets a letter ({i}).",
                "candidate": {"id": system, "text": f"Plot {i}: she answers it, and the letters start answering back."},
                "metric_scores": {"rougeL": round(0.2 + 0.1 * i, 4)}}

    def demo_batch(self):
        head = {"study": {"slug": self.demo_slug, "kind": NAME, "title": "How much would you enjoy this story?",
                          "instructions": "Read each plot and rate how much **you** would enjoy the film it "
                                          "describes, from 1 (not at all) to 10 (very much). Then say why in a "
                                          "sentence or two: your reviews are what a personalized evaluator learns "
                                          "your taste from. There are no right answers.",
                          "annotations_per_item": 3, "comment": "optional"}}
        items = [{"item_id": item_id, "input": premise, "candidate": {"id": system, "text": plot},
                  "metric_scores": {"length_words": len(plot.split())}, "meta": {"demo": True}}
                 for item_id, premise, system, plot in DEMO_PLOTS]
        items.append({"item_id": "gold-scalar", "input": "Attention check.",
                      "candidate": {"id": "plot-check", "text": "Attention check: give this item the score 1."},
                      "gold": 1, "meta": {"demo": True}})
        return [head, *items]


# (item_id, premise, system, plot): written for humeval's demo.
DEMO_PLOTS = [
    ("plot-heist", "A crew plans one last job.", "plot-writer-a",
     "Four retired safecrackers rob a museum to return a painting to the village it was stolen from, and the "
     "only alarm they cannot beat is their own arthritis."),
    ("plot-heist-2", "A crew plans one last job.", "plot-writer-b",
     "A team of thieves plans an elaborate robbery of a casino vault, facing betrayal and a final twist."),
    ("plot-island", "A scientist is stranded on an island.", "plot-writer-a",
     "A botanist marooned on a volcanic island catalogues plants that bloom only when someone sings to them, "
     "and slowly learns the island's language."),
    ("plot-island-2", "A scientist is stranded on an island.", "plot-writer-b",
     "A scientist survives alone on an island, builds a raft, and must decide whether to share her discovery."),
    ("plot-diner", "Two strangers meet in a diner.", "plot-writer-a",
     "A night-shift cook and a lost tourist spend one snowed-in night swapping recipes that each turn out to "
     "be a confession."),
    ("plot-diner-2", "Two strangers meet in a diner.", "plot-writer-b",
     "Two strangers meet at a diner during a storm and discover they share a mysterious past."),
]

KIND = ScalarRating()
