"""Which items humans are offered: the study header keys (statistics.md, "Prediction-powered
estimates"; issue 35), validated here and kept in Study.config["human_items"]. Pure
Python: the draws themselves are annotate/studies/human_draw.py.

- `human_share` (0 < share <= 1): humans are offered a seeded random subset of that share of
  the real items; evaluators score them all (PPI).
- `allocation: "judge_uncertain"` with `uncertainty_evaluator` (the evaluator whose stored
  scores say how uncertain it is) and `human_budget` (0 < budget <= 1, the expected share
  of items humans are offered): each item is offered with a probability rising with the
  evaluator's uncertainty (evaluation/prediction_powered/judge_uncertainty.py), drawn once
  its scores are stored (active inference).
- `human_seed` (optional, an integer 0 <= seed < 2^63): the seed of the draws; by default
  derived from the slug (`slug_seed`), so the same slug draws the same items.

Stored as {"allocation": "human_share", "share", "seed"} or {"allocation":
"judge_uncertain", "evaluator", "budget", "seed"}. A later batch into the study may repeat
the keys (same values) or leave them out; it cannot change them.
"""
import hashlib
from typing import Any

from annotate.kinds.base import MAX_ID_CHARS, is_int, is_number, is_text
from annotate.studies.allocation import JUDGE_UNCERTAIN
from annotate.studies.answers import shown

CONFIG_KEY = "human_items"
HUMAN_SHARE = "human_share"
# The header keys this module owns; `allocation` itself is validated by annotate/studies/allocation.py.
HUMAN_ITEM_KEYS = ("human_share", "human_seed", "uncertainty_evaluator", "human_budget")
MAX_SEED = 2**63 - 1


def slug_seed(slug: str) -> int:
    """The default seed: the first 8 bytes of SHA-256(slug) as a big-endian integer, the top
    bit cleared (0 <= seed < 2^63, a PostgreSQL bigint and a numpy seed)."""
    return int.from_bytes(hashlib.sha256(slug.encode("utf-8")).digest()[:8], "big") & MAX_SEED


def _share(value) -> bool:
    return is_number(value) and 0 < value <= 1


def header_settings(study: dict, slug, error) -> dict | None:
    """The stored settings of a header's human-item keys (None when it has none); each
    problem goes to `error` as one sentence."""
    given = [key for key in HUMAN_ITEM_KEYS if key in study]
    if not given and study.get("allocation") != JUDGE_UNCERTAIN:
        return None
    share: Any = study.get("human_share")
    seed: Any = study.get("human_seed")
    allocation: Any = study.get("allocation")
    ok = True
    if "human_share" in study and not _share(share):
        error(f"'human_share' must be a number in (0, 1] (the share of items humans are offered), got {shown(share)}")
        ok = False
    if "human_seed" in study and not (is_int(seed) and 0 <= seed <= MAX_SEED):
        error(f"'human_seed' must be an integer from 0 to {MAX_SEED}, got {shown(seed)}")
        ok = False
    if allocation == JUDGE_UNCERTAIN:
        settings = _judge_uncertain(study, slug, seed, error)
        return settings if ok else None
    for key in ("uncertainty_evaluator", "human_budget"):
        if key in study:
            error(f"'{key}' applies only with \"allocation\": \"{JUDGE_UNCERTAIN}\"")
            ok = False
    if "human_share" not in study:
        if ok:
            error("'human_seed' needs 'human_share' or \"allocation\": \"judge_uncertain\"")
        return None
    if not ok:
        return None
    return {"allocation": HUMAN_SHARE, "share": float(share), "seed": _seed(seed, slug)}


def _judge_uncertain(study, slug, seed, error):
    evaluator, budget = study.get("uncertainty_evaluator"), study.get("human_budget")
    ok = True
    if "human_share" in study:
        error(f"'human_share' cannot be combined with \"allocation\": \"{JUDGE_UNCERTAIN}\" (its share of items is "
              "'human_budget')")
        ok = False
    if not (is_text(evaluator) and len(evaluator) <= MAX_ID_CHARS):
        error(f"\"allocation\": \"{JUDGE_UNCERTAIN}\" needs 'uncertainty_evaluator': the name of the evaluator "
              f"whose scores rank the items (a string of at most {MAX_ID_CHARS} characters)"
              + _got(study, "uncertainty_evaluator"))
        ok = False
    if not _share(budget):
        error(f"\"allocation\": \"{JUDGE_UNCERTAIN}\" needs 'human_budget': a number in (0, 1] (the expected share "
              "of items humans are offered)" + _got(study, "human_budget"))
        ok = False
    if not ok:
        return None
    return {"allocation": JUDGE_UNCERTAIN, "evaluator": evaluator, "budget": float(budget),
            "seed": _seed(seed, slug)}


def _got(study: dict, key: str) -> str:
    return f", got {shown(study[key])}" if key in study else ""


def _seed(seed, slug) -> int:
    return int(seed) if is_int(seed) else slug_seed(slug if isinstance(slug, str) else "")


def existing_flaw(given: dict | None, stored: dict | None, keys=frozenset()) -> str | None:
    """Why a later batch's human-item settings contradict the study's, or None (a batch
    without the keys takes the study's; its seed is compared only when it gives
    `human_seed`: `keys` are the header's keys)."""
    if given is None:
        return None
    if stored is not None and "human_seed" not in keys:
        given = dict(given, seed=stored.get("seed"))
    if given == stored:
        return None
    if stored is None:
        return ("the study was created without 'human_share' or 'allocation': which items humans are offered is "
                "decided when a study is created")
    return f"human-item settings {_describe(given)} differ from the existing study's {_describe(stored)}"


def _describe(settings: dict) -> str:
    order = ("allocation", "share", "evaluator", "budget", "seed")  # the stored JSON's key order is PostgreSQL's
    return "{" + ", ".join(f"{k}: {settings[k]}" for k in order if k in settings) + "}"


def settings_of(config: dict | None) -> dict | None:
    """A study's stored settings (Study.config), or None: every item offered."""
    return (config or {}).get(CONFIG_KEY)
