"""The four study kinds of the spec (studies.md) and their questions.

One place that knows, per kind, which questions an item asks and what values they take,
so the validator, the assignment engine, the pages and the reports agree.
"""
PAIRWISE_ALIGNMENT = "pairwise_alignment"
EXPLANATION_CHOICE = "explanation_choice"
SIMILARITY_SURVEY = "similarity_survey"
ASPECT_PAIRWISE = "aspect_pairwise"
KINDS = (PAIRWISE_ALIGNMENT, EXPLANATION_CHOICE, SIMILARITY_SURVEY, ASPECT_PAIRWISE)
KIND_CHOICES = [(k, k) for k in KINDS]
PAIRWISE_KINDS = (PAIRWISE_ALIGNMENT, EXPLANATION_CHOICE)
TWO_CANDIDATE_KINDS = (PAIRWISE_ALIGNMENT, EXPLANATION_CHOICE, ASPECT_PAIRWISE)

TIE = "tie"
CHOICE_QUESTION = "choice"
USEFULNESS_QUESTION = "usefulness"
CHOICE_TEXT = "Which response is closer to the expected output in content and writing style?"
EXPLANATION_CHOICE_TEXT = "Judging from the explanations, which response is better?"
USEFULNESS_TEXT = "How useful were the explanations for deciding?"

DEFAULT_SCALE = (1, 6)
DEFAULT_USEFULNESS_SCALE = (1, 5)
DEFAULT_ASPECTS = (
    {"key": "interestingness", "question": "Which story plot is more interesting to you overall?"},
    {"key": "adaptability", "question": "Which of the plots could generate a more interesting book or movie when a full story is written based on it?"},
    {"key": "surprise", "question": "Which story plot created more suspense and surprise?"},
    {"key": "character", "question": "Which story's characters or events do you identify with or care for more?"},
    {"key": "ending", "question": "Which story has a better ending?"},
)


def study_aspects(config):
    """The aspects of an aspect_pairwise study: header `aspects` or the Per-DOC five."""
    return list(config.get("aspects") or DEFAULT_ASPECTS)


def study_scale(config, key="scale", default=DEFAULT_SCALE):
    scale = config.get(key) or default
    return int(scale[0]), int(scale[1])


def questions_for(kind, config, item_data):
    """Questions asked for one item: list of dicts with `id`, `text`, and either
    `options` (candidate ids, plus `tie` when allowed) or `scale` [min, max]."""
    if kind in PAIRWISE_KINDS:
        options = [c["id"] for c in item_data["candidates"]]
        if config.get("allow_tie"):
            options.append(TIE)
        text = CHOICE_TEXT if kind == PAIRWISE_ALIGNMENT else EXPLANATION_CHOICE_TEXT
        questions = [{"id": CHOICE_QUESTION, "text": text, "options": options}]
        if kind == EXPLANATION_CHOICE:
            lo, hi = study_scale(config, "usefulness_scale", DEFAULT_USEFULNESS_SCALE)
            questions.append({"id": USEFULNESS_QUESTION, "text": USEFULNESS_TEXT, "scale": [lo, hi]})
        return questions
    if kind == SIMILARITY_SURVEY:
        lo, hi = study_scale(config)
        return [{"id": pair["id"], "text": "How similar are Text 1 and Text 2?", "scale": [lo, hi]}
                for pair in item_data["pairs"]]
    if kind == ASPECT_PAIRWISE:
        options = [c["id"] for c in item_data["candidates"]]
        if config.get("allow_tie"):
            options.append(TIE)
        return [{"id": a["key"], "text": a["question"], "options": list(options)} for a in study_aspects(config)]
    raise ValueError(f"unknown study kind {kind!r}")
