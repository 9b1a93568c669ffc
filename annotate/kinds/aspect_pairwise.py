"""aspect_pairwise: Per-DOC story aspects (spec studies.md).

An item: a `premise` and two `candidates` (story plots); optional `metric_scores`. The
annotator reads the premise and "Plot A"/"Plot B" (counterbalanced) and answers one
choice per aspect: question id = aspect key, value = candidate id (or `tie`). Header
`aspects` [{key, question}] replaces the Per-DOC five. Report: evaluation.report.kinds.aspect_pairwise
(which needs the judgments' submit order for the reviewer_prior baseline).
"""
from annotate.kinds.base import NEEDS_SUBMIT_TIMES, RESERVED_IDS, TEXT_SCHEMA, id_flaw, is_text
from annotate.kinds.two_candidate import CANDIDATES_SCHEMA, TwoCandidateKind
from annotate.studies.answers import shown
from evaluation.vocabulary import DEFAULT_ASPECTS


def study_aspects(config: dict) -> list[dict]:
    """The aspects of a study of this kind: header `aspects` or the Per-DOC five."""
    return list(config.get("aspects") or DEFAULT_ASPECTS)


def aspects_flaw(aspects) -> str | None:
    """Why header `aspects` is not a valid list of {key, question}, or None."""
    good = isinstance(aspects, list) and aspects and all(
        isinstance(a, dict) and set(a) == {"key", "question"} and is_text(a["key"]) and is_text(a["question"])
        for a in aspects)
    if not good:
        return "'aspects' must be a non-empty list of {\"key\", \"question\"} with non-empty strings"
    keys = [a["key"] for a in aspects]
    if len(set(keys)) != len(keys):
        return "'aspects' keys must be unique"
    if any(k in RESERVED_IDS or "|" in k for k in keys):
        return "aspect keys may not be 'tie', 'pair_order' or contain '|'"
    flawed = next((k for k in keys if id_flaw(k)), None)
    if flawed is not None:
        return f"aspect key {shown(flawed)} {id_flaw(flawed)}"
    return None


class AspectPairwise(TwoCandidateKind):
    takes_merged = False  # its per-aspect ranking (report/kinds/aspect_pairwise.py) reads shown ids only
    name = "aspect_pairwise"
    order = 4
    item_keys = ("premise", "candidates")
    optional_item_keys = ("metric_scores",)
    header_keys = ("aspects",)
    option_noun = "Plot"
    report_needs = frozenset({NEEDS_SUBMIT_TIMES})
    source_key = "premise"
    demo_slug = "demo-story-aspects"
    header_schema = {"aspects": {"type": "array", "description": "The questions asked, [{key, question}]; "
                                                                 "default the five Per-DOC aspects.",
                                 "items": {"type": "object", "properties": {
                                     "key": {"type": "string", "description": "The question id, e.g. `ending`."},
                                     "question": {"type": "string", "description": "The question shown."}}}}}
    display_schema = {"premise": {**TEXT_SCHEMA, "description": "The story premise."},
                      "candidates": CANDIDATES_SCHEMA}

    def header_config(self, study, error):
        if "aspects" not in study:
            return {}
        reason = aspects_flaw(study["aspects"])
        if reason:
            error(reason)
            return {}
        return {"aspects": study["aspects"]}

    def check_item(self, obj, config, error):
        candidates_ok = self.check_candidates(obj, config, error)
        texts_ok = self.check_texts(obj, ("premise",), error)  # reported even when the candidates are not
        if candidates_ok and texts_ok:
            self.check_metric_scores(obj, error)

    def gold_answers(self, gold, questions, error):
        return {qid: gold for qid in questions}  # a bare gold value answers every aspect

    def questions(self, config, item_data):
        options = self.choice_options(config, item_data)
        return [{"id": a["key"], "text": a["question"], "options": list(options)} for a in study_aspects(config)]

    def report_config(self, config):
        return dict(config, aspects=study_aspects(config))

    def display(self, item_data, shown_order):
        return {"premise": item_data.get("premise", ""), "candidates": self.display_candidates(item_data, shown_order)}

    def example_header(self):
        return {"aspects": [{"key": "fun", "question": "Which is more fun?"},
                            {"key": "end", "question": "Which ends better?"}]}

    def example_item(self, i):
        return {"item_id": f"ex-{i}", "premise": f"A lighthouse keeper finds a letter ({i}).",
                "candidates": [{"id": "plotA", "text": f"Plot one {i}."}, {"id": "plotB", "text": f"Plot two {i}."}]}

    def aspects(self, config):
        return study_aspects(config)

    def demo_batch(self):
        from annotate.studies.demo_data import story_batch

        return story_batch(self.demo_slug)


KIND = AspectPairwise()
