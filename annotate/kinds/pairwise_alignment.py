"""pairwise_alignment: the ExPerT human alignment study (spec studies.md).

An item: the user's request (`input`), the user's own text (`reference`) and two
`candidates`; optional `metric_scores`. The annotator reads the request, the reference
and "Response A"/"Response B" (counterbalanced) and answers `choice`: the candidate id
closer to the reference in content and style (or `tie`). Report: evaluation.report.kinds.pairwise_alignment.
"""
from annotate.kinds.base import TEXT_SCHEMA
from annotate.kinds.two_candidate import CANDIDATES_SCHEMA, ReferenceChoiceKind

CHOICE_TEXT = "Which response is closer to the expected output in content and writing style?"


class PairwiseAlignment(ReferenceChoiceKind):
    name = "pairwise_alignment"
    order = 1
    choice_text = CHOICE_TEXT
    demo_slug = "demo-alignment"
    display_schema = {"input": {**TEXT_SCHEMA, "description": "The user's request."},
                      "reference": {**TEXT_SCHEMA, "description": "The user's own expected output."},
                      "candidates": CANDIDATES_SCHEMA}

    def display(self, item_data, shown_order):
        return {"input": item_data.get("input", ""), "reference": item_data.get("reference", ""),
                "candidates": self.display_candidates(item_data, shown_order)}

    def demo_batch(self):
        from annotate.studies.demo_data import pairwise_batch

        return pairwise_batch(self.demo_slug)


KIND = PairwiseAlignment()
