"""The study header's allocation keys (statistics.md, "Adaptive allocation";
docs/adaptive-allocation.md): `allocation`, `min_per_pair` and the dashboard's stopping
target `stop_when`, validated in one place and kept in Study.config.

- `allocation`: how the engine picks the pair an item of more than two candidates shows:
  "balanced" (default: the pair least shown in the study) or "adaptive" (the pair that
  most reduces the summed variance of the Bradley-Terry strengths, annotate/desk/adaptive_pairs.py).
  Adaptive needs a kind whose items carry candidates and a `choice` question, and 3 or more
  systems (checked once the batch's items are in: `too_few_systems`).
- `min_per_pair`: the cold start of an adaptive study (default 10 per system pair).
- `stop_when`: "top_separated" (the top system's rank interval is [1, 1]) or
  {"separated": [system a, system b]} (the two systems' rank intervals do not overlap).
"""
from annotate.kinds.base import MAX_INT, is_int, is_text
from annotate.studies.answers import shown
from evaluation.allocation.adaptive import MIN_PER_PAIR
from evaluation.vocabulary import CHOICE_QUESTION

BALANCED, ADAPTIVE, JUDGE_UNCERTAIN = "balanced", "adaptive", "judge_uncertain"
# Allowed values of `allocation` -> what the engine does (one line each). judge_uncertain
# decides which items humans are offered (its keys: annotate/studies/human_items.py); pairs
# are then chosen as under balanced.
POLICIES = {BALANCED: "the pair least shown in the study", ADAPTIVE: "the Bradley-Terry variance-reduction rule",
            JUDGE_UNCERTAIN: "items offered to humans with a probability rising with a judge's uncertainty"}
TOP_SEPARATED, SEPARATED = "top_separated", "separated"
ALLOCATION_HEADER_KEYS = ("allocation", "min_per_pair", "stop_when")
MIN_SYSTEMS = 3


def policy_of(config) -> str:
    """The study's allocation policy ("balanced" when not set)."""
    return (config or {}).get("allocation") or BALANCED


def min_per_pair_of(config) -> int:
    value = (config or {}).get("min_per_pair")
    return value if isinstance(value, int) and is_int(value) and value >= 1 else MIN_PER_PAIR


def is_adaptive(config) -> bool:
    return policy_of(config) == ADAPTIVE


def allocation_text(config, n_systems: int) -> str:
    """The datasheet's words for the study's pair allocation."""
    if is_adaptive(config):
        return (f"adaptive (each pair first shown {min_per_pair_of(config)} times, then the pair that most reduces "
                "the summed variance of the Bradley-Terry strengths, with a 20% uniform share; each pair's "
                "probability recorded, win rates inverse-probability weighted, strengths unweighted)")
    return "balanced (least-shown pair first)" if n_systems > 2 else "fixed"


def _stop_when_flaw(value) -> str | None:
    if value == TOP_SEPARATED:
        return None
    if isinstance(value, dict) and set(value) == {SEPARATED}:
        pair = value[SEPARATED]
        if isinstance(pair, list) and len(pair) == 2 and all(is_text(s) for s in pair) and pair[0] != pair[1]:
            return None
    return (f"'stop_when' must be \"{TOP_SEPARATED}\" or {{\"{SEPARATED}\": [system, other system]}}, "
            f"got {shown(value)}")


def allocation_config(study: dict, kind, question_config: dict, error) -> dict:
    """The allocation keys present in the header object `study`, validated ({key: value}
    for Study.config); errors through `error` (the header's line)."""
    out: dict = {}
    if "allocation" in study:
        value = study["allocation"]
        if not isinstance(value, str) or value not in POLICIES:
            error(f"'allocation' must be one of {', '.join(POLICIES)}, got {shown(value)}")
        elif value == ADAPTIVE and kind is not None and not takes_adaptive(kind, question_config):
            error(f"'allocation': \"{ADAPTIVE}\" needs a study whose items hold candidates and a "
                  f"'{CHOICE_QUESTION}' question; {kind.name} has none")
        else:
            out["allocation"] = value
    if "min_per_pair" in study:
        value = study["min_per_pair"]
        if not (is_int(value) and 1 <= value <= MAX_INT):
            error(f"'min_per_pair' must be an integer from 1 to {MAX_INT}, got {shown(value)}")
        elif study.get("allocation", BALANCED) in set(POLICIES) - {ADAPTIVE}:  # (a bad one has its own error)
            error("'min_per_pair' applies to \"allocation\": \"adaptive\" only")
        else:
            out["min_per_pair"] = value
    if "stop_when" in study:
        flaw = _stop_when_flaw(study["stop_when"])
        if flaw:
            error(flaw)
        else:
            out["stop_when"] = study["stop_when"]
    return out


def takes_adaptive(kind, question_config: dict) -> bool:
    """Whether the kind's items show two of their candidates and ask `choice` (the answer
    the rule learns from)."""
    if kind.candidates_key != "candidates" or not hasattr(kind, "needs_study_pairs"):
        return False
    try:
        questions = kind.questions(question_config, {"candidates": []})
    except (KeyError, TypeError, ValueError):
        return False
    return any(q.get("id") == CHOICE_QUESTION for q in questions)


def allocation_clash(given: dict, stored: dict) -> list[str]:
    """Reasons a later batch's allocation keys contradict the existing study's."""
    out = []
    for key, default in (("allocation", BALANCED), ("min_per_pair", None), ("stop_when", None)):
        if key in given and given[key] != stored.get(key, default):
            before = shown(stored.get(key, default))
            out.append(f"'{key}' {shown(given[key])} differs from the existing study's {before}")
    return out


def too_few_systems(config, systems: set, study=None) -> str | None:
    """Why an adaptive study cannot run: 1 or 2 systems among the batch's real items
    (`systems`) and the existing study's; else None (also with no items yet: a study
    created empty is checked when its items come)."""
    from annotate.models import Item

    if not is_adaptive(config):
        return None
    systems = set(systems)
    if len(systems) < MIN_SYSTEMS and study is not None and study.pk:
        for candidates in Item.objects.filter(study=study, is_gold=False).values_list("data__candidates", flat=True):
            systems.update(c.get("id") for c in candidates or [] if isinstance(c, dict))
    if len(systems) >= MIN_SYSTEMS or not systems:  # no items yet (a study created empty): later batches
        return None
    return (f"'allocation': \"{ADAPTIVE}\" needs {MIN_SYSTEMS} or more systems; the study's items name "
            f"{len(systems)}")
