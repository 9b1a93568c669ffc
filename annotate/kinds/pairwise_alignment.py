"""pairwise_alignment: the ExPerT human alignment study (spec studies.md).

An item: the user's request (`input`), the user's own text (`reference`) and two
`candidates`; optional `metric_scores`. The annotator reads the request, the reference
and "Response A"/"Response B" (counterbalanced) and answers `choice`: the candidate id
closer to the reference in content and style (or `tie`). Report: evaluation.report.kinds.pairwise_alignment.
"""
from evaluation.vocabulary import CHOICE_QUESTION, PAIRWISE_ALIGNMENT

from .base import TEXT_SCHEMA
from .two_candidate import CANDIDATES_SCHEMA, TwoCandidateKind

CHOICE_TEXT = "Which response is closer to the expected output in content and writing style?"


class PairwiseAlignment(TwoCandidateKind):
    name = PAIRWISE_ALIGNMENT
    item_keys = ("input", "reference", "candidates")
    optional_item_keys = ("metric_scores",)
    bare_gold_question = CHOICE_QUESTION
    choice_text = CHOICE_TEXT
    demo_slug = "demo-alignment"
    display_schema = {"input": {**TEXT_SCHEMA, "description": "The user's request."},
                      "reference": {**TEXT_SCHEMA, "description": "The user's own expected output."},
                      "candidates": CANDIDATES_SCHEMA}

    def check_item(self, obj, config, error):
        candidates_ok = self.check_candidates(obj, config, error)
        texts_ok = self.check_texts(obj, ("input", "reference"), error)  # reported even when the candidates are not
        if candidates_ok and texts_ok:
            self.check_metric_scores(obj, error)

    def gold_answers(self, gold, questions, error):
        return {CHOICE_QUESTION: gold}  # a bare gold value is the `choice`

    def questions(self, config, item_data):
        return [{"id": CHOICE_QUESTION, "text": self.choice_text, "options": self.choice_options(config, item_data)}]

    def display(self, item_data, shown_order):
        return {"input": item_data.get("input", ""), "reference": item_data.get("reference", ""),
                "candidates": self.display_candidates(item_data, shown_order)}

    def example_item(self, i):
        """Item i of the example study: candidates m1 and m2, ROUGE-L favouring m1 on even i."""
        return {"item_id": f"ex-{i}", "input": f"Write a review of film {i}.",
                "reference": f"My own review of film {i}.",
                "candidates": [{"id": "m1", "text": f"First response to request {i}."},
                               {"id": "m2", "text": f"Second response to request {i}."}],
                "metric_scores": {"rougeL": {"m1": 0.3, "m2": 0.2} if i % 2 == 0 else {"m1": 0.1, "m2": 0.4}}}

    def demo_batch(self):
        from annotate.demo_data import pairwise_batch

        return pairwise_batch(self.demo_slug)


KIND = PairwiseAlignment()
