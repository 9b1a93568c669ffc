"""pairwise_alignment: the ExPerT human alignment study (spec studies.md).

An item: the user's request (`input`), the user's own text (`reference`) and two
`candidates`; optional `metric_scores`. The annotator reads the request, the reference
and "Response A"/"Response B" (counterbalanced) and answers `choice`: the candidate id
closer to the reference in content and style (or `tie`). Report: evaluation.report.kinds.pairwise_alignment.
"""
from evaluation.vocabulary import CHOICE_QUESTION, PAIRWISE_ALIGNMENT

from .base import NEEDS_CANDIDATES, NEEDS_METRIC_SCORES
from .two_candidate import TwoCandidateKind

CHOICE_TEXT = "Which response is closer to the expected output in content and writing style?"


class PairwiseAlignment(TwoCandidateKind):
    name = PAIRWISE_ALIGNMENT
    item_keys = ("input", "reference", "candidates")
    optional_item_keys = ("metric_scores",)
    report_needs = frozenset({NEEDS_CANDIDATES, NEEDS_METRIC_SCORES})
    choice_text = CHOICE_TEXT

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


KIND = PairwiseAlignment()
