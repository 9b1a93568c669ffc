"""The words humeval's parts must spell the same way: question ids, the
`tie` answer, the Per-DOC aspects, the iCOPERNICUS prompt styles and the default model.

Defined once here, with no Django import, so that evaluation/ (reports, statistics),
annotate/ (batches, pages, API) and models_runtime/ (judges, generation) share them.
A value stored in the database or written to a file by one part and read by another
belongs here; a word used by one module only does not.
"""

# Answers and question ids.
TIE = "tie"  # the answer "neither is better" when a study allows ties
CHOICE_QUESTION = "choice"  # which candidate is better (the pairwise kinds)
USEFULNESS_QUESTION = "usefulness"  # how useful the explanations were (the ExPerT explanation kind)

# Report keys read outside the report: the systems' strengths, ranks and their intervals
# (statistics.md, the Bradley–Terry section; the same key for every kind that orders systems).
RANKED = "ranking"

# Per-DOC story aspects: the questions of a Per-DOC aspects study without header `aspects`.
DEFAULT_ASPECTS = (
    {"key": "interestingness", "question": "Which story plot is more interesting to you overall?"},
    {"key": "adaptability", "question": "Which of the plots could generate a more interesting book or movie when a "
                                        "full story is written based on it?"},
    {"key": "surprise", "question": "Which story plot created more suspense and surprise?"},
    {"key": "character", "question": "Which story's characters or events do you identify with or care for more?"},
    {"key": "ending", "question": "Which story has a better ending?"},
)
DEFAULT_ASPECT_KEYS = tuple(a["key"] for a in DEFAULT_ASPECTS)

# iCOPERNICUS prompt styles (Patel et al., 2024): three plain, then three contrastive.
PROMPT_STYLES = ("0-shot", "2-shot w/o hist", "2-shot w/ hist", "C-0-shot", "C-2-shot w/o hist", "C-2-shot w/ hist")
CONTRASTIVE_STYLES = PROMPT_STYLES[3:]

# The model every runtime command uses when none is named (embedded, always available).
DEFAULT_MODEL = "smollm2"

# "I can't judge this": stored as a judgment with this question id and one of these
# reasons as its value; left out of every statistic and counted apart in reports.
SKIP_QUESTION = "_skip"
SKIP_REASONS = (
    ("not_understood", "I don't understand the texts"),
    ("unsafe", "Offensive or unsafe content"),
    ("technical", "Technical problem (texts missing or broken)"),
    ("other", "Other reason"),
)
SKIP_REASON_IDS = tuple(key for key, _ in SKIP_REASONS)

# Metric scores where a lower value is the better output (LaMP-3's errors): the report's
# metric picks, alignment and correlations read them negated; the per-system table shows
# them as they are. Scores of ROOT_OF_MEAN metrics are squared errors: the per-system
# table shows the root of their mean (RMSE) and of its interval's ends.
LOWER_IS_BETTER = frozenset({"lamp_mae", "lamp_rmse"})
ROOT_OF_MEAN = frozenset({"lamp_rmse"})
# The scales of judge scores whose range is fixed (models_runtime/judges: gemba.py, geval.py):
# the per-system table clips a metric's interval to its scale.
METRIC_SCALES = {"gemba": (0, 100), "geval": (1, 5)}
# Implicit-personalization probes (runtime.md): the items of a probe's human study carry
# prediction rows of this evaluator, one per fact (question id = the fact's name), so the
# alignment study's report can put the probe's Delta beside the human preference rate.
IP_PROBE_EVALUATOR = "ip_probe"
IP_PROBE_FACTS = ("model", "cues", "score", "question_id", "user_cue", "delta", "ci_low", "ci_high", "p_value",
                  "n_questions", "n_samples")
