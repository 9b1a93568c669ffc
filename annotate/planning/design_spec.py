"""The design file of `manage.py design` (interfaces.md, "Commands and exports added
2026-12-05"): read, checked whole, every problem named (unknown keys with "did you mean").
"""
import difflib
import math
import re
from dataclasses import dataclass, field
from typing import cast

from annotate.kinds import UnknownKind, all_kinds, get_kind
from annotate.kinds.base import check_scale
from annotate.kinds.two_candidate import ReferenceChoiceKind
from evaluation.report.kinds import SCALAR_RATING

KEYS = ("kind", "systems", "items", "annotations_per_item", "annotators", "item_sd", "annotator_sd",
        "position_bias", "pilot", "targets", "power", "simulations", "seed", "scale", "noise_sd", "stopping")
TESTS = ("win_rate", "rank_separation", "alpha_width", "scalar_difference")
SCALAR_TESTS = ("scalar_difference",)
TARGET_KEYS = {"win_rate": ("test", "system", "against"), "rank_separation": ("test", "a", "b"),
               "alpha_width": ("test", "width"), "scalar_difference": ("test", "a", "b")}
STOPPING_KEYS = ("target", "every")
SLUG = re.compile(r"^[-a-zA-Z0-9_]{1,100}$")  # a Study.slug
MAX_SYSTEMS = 8
DEFAULT_SCALE = tuple(get_kind(SCALAR_RATING).report_config({})["scale"])


class DesignInvalid(ValueError):
    """A design file that cannot be simulated: `errors` lists every problem."""

    def __init__(self, errors):
        super().__init__("; ".join(errors))
        self.errors = list(errors)


@dataclass
class Design:
    kind: str
    systems: dict[str, float]  # BT log strengths
    items: int
    annotations_per_item: int
    annotators: int
    item_sd: float = 0.0
    annotator_sd: float = 0.0
    position_bias: float = 0.0  # added to the log-odds of the option shown first
    targets: list[dict] = field(default_factory=list)
    power: float = 0.8
    simulations: int = 1000
    seed: int = 0
    pilot: str | None = None
    fitted: list[str] = field(default_factory=list)  # parameters taken from the pilot study
    scale: tuple[int, ...] = DEFAULT_SCALE  # scalar kinds: scores are rounded and clipped to it
    noise_sd: float = 1.0  # scalar kinds: sd of one rating around its item's and annotator's mean
    stopping: dict | None = None  # {"target": index, "every": judgments}: optional stopping simulated

    @property
    def scalar(self) -> bool:
        return self.kind in scalar_kinds()


def _unknown(key, allowed, where):
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(allowed)})"
    return f"{where}unknown key {key!r}{hint}"


def _number(obj, key, errors, minimum=None, integer=False, default=None):
    value = obj.get(key, default)
    ok = isinstance(value, int) if integer else isinstance(value, (int, float)) and math.isfinite(value)
    if isinstance(value, bool) or not ok:
        errors.append(f"{key!r} must be {'a whole number' if integer else 'a number'}, got {value!r}")
        return default
    if minimum is not None and value < minimum:
        errors.append(f"{key!r} must be at least {minimum}, got {value!r}")
    return value


def _targets(raw, systems, errors):
    if not isinstance(raw, list) or not raw:
        errors.append("'targets' must be a non-empty list of {\"test\": ...} objects")
        return []
    out = []
    for n, target in enumerate(raw):
        where = f"targets[{n}]: "
        if not isinstance(target, dict) or target.get("test") not in TESTS:
            test = target.get("test") if isinstance(target, dict) else target
            close = difflib.get_close_matches(str(test), TESTS, n=1)
            errors.append(f"{where}'test' must be one of {', '.join(TESTS)}, got {test!r}"
                          + (f" (did you mean {close[0]!r}?)" if close else ""))
            continue
        allowed = TARGET_KEYS[target["test"]]
        errors.extend(_unknown(k, allowed, where) for k in target if k not in allowed)
        for key in ("system", "against", "a", "b"):
            if key in target and (not isinstance(target[key], str) or target[key] not in systems):
                errors.append(f"{where}{key!r} names {target[key]!r}, which is not in 'systems'")
        if target["test"] in ("rank_separation", "scalar_difference") and ("a" not in target or "b" not in target or
                                                    target.get("a") == target.get("b")):
            errors.append(f"{where}{target['test']} needs two different systems 'a' and 'b'")
        out.append(dict(target))
    return out


def simulated_kinds() -> list[str]:
    """The kinds a design can simulate: a choice between two of an item's candidates
    (their items hold `input`, `reference` and `candidates`, as the simulation builds them),
    and a scalar rating of one output (scalar_kinds)."""
    return [k.name for k in all_kinds() if isinstance(k, ReferenceChoiceKind)] + scalar_kinds()


def scalar_kinds() -> list[str]:
    """The kinds whose judgment is a score on a scale (one system's output per item)."""
    scalar = type(get_kind(SCALAR_RATING))
    return [k.name for k in all_kinds() if isinstance(k, scalar)]


def _kind_targets(kind, targets, errors):
    """Scalar kinds take scalar targets only, the choice kinds the others."""
    scalar = kind in scalar_kinds()
    for n, target in enumerate(targets):
        if (target["test"] in SCALAR_TESTS) != scalar:
            fits = SCALAR_TESTS if scalar else tuple(t for t in TESTS if t not in SCALAR_TESTS)
            errors.append(f"targets[{n}]: test {target['test']!r} does not fit kind {kind!r} (it takes "
                          f"{', '.join(fits)})")


def _stopping(raw, targets, errors):
    """The optional stopping rule: look every `every` judgments, stop once targets[`target`] is met."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        errors.append("'stopping' must be an object {\"target\": index into 'targets', \"every\": judgments}")
        return None
    errors.extend(_unknown(k, STOPPING_KEYS, "stopping: ") for k in raw if k not in STOPPING_KEYS)
    every, target = raw.get("every"), raw.get("target", 0)
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        errors.append(f"stopping: 'every' must be a whole number of judgments >= 1, got {every!r}")
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < max(len(targets), 1):
        errors.append(f"stopping: 'target' must index 'targets' (0 to {max(len(targets) - 1, 0)}), got {target!r}")
    elif targets and isinstance(targets[target], dict) and targets[target].get("test") == "alpha_width":
        errors.append("stopping: target alpha_width tests no null hypothesis (it has no type-I error); name a "
                      "win_rate, rank_separation or scalar_difference target")
    return {"target": target, "every": every}


def parse_design(obj) -> Design:
    """A Design from the JSON object, or DesignInvalid naming every problem."""
    if not isinstance(obj, dict):
        raise DesignInvalid(["the design must be a JSON object"])
    errors = [_unknown(k, KEYS, "") for k in obj if k not in KEYS]
    kind = str(obj.get("kind"))
    simulated = simulated_kinds()
    try:
        get_kind(cast(str, obj.get("kind")))  # whatever the file holds: not a kind's name is UnknownKind
    except UnknownKind:
        errors.append(f"'kind' must name a study kind ({', '.join(simulated)}), got {obj.get('kind')!r}")
    else:
        if kind not in simulated:
            errors.append(f"'kind' {kind!r}: design simulates the kinds that compare candidates against a "
                          f"reference in pairs or rate one output on a scale ({', '.join(simulated)})")
    systems = obj.get("systems")
    pilot = obj.get("pilot")
    if pilot is not None and (not isinstance(pilot, str) or not SLUG.match(pilot)):
        errors.append(f"'pilot' must be a study's slug, got {pilot!r}")
    if (pilot is None or systems is not None) and (
            not isinstance(systems, dict) or not 2 <= len(systems) <= MAX_SYSTEMS
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                       for v in systems.values())):
        errors.append(f"'systems' must map 2 to {MAX_SYSTEMS} system ids to strengths (numbers), got {systems!r}")
        systems = {}
    systems = dict(systems or {})
    items = _number(obj, "items", errors, 1, integer=True, default=100)
    overlap = _number(obj, "annotations_per_item", errors, 1, integer=True, default=3)
    annotators = _number(obj, "annotators", errors, 1, integer=True, default=overlap)
    if isinstance(overlap, int) and isinstance(annotators, int) and overlap > annotators:
        errors.append(f"impossible design: 'annotations_per_item' ({overlap}) > 'annotators' ({annotators}): "
                      "each annotator sees an item at most once")
    design = Design(kind=kind, systems=systems, items=items, annotations_per_item=overlap, annotators=annotators,
                    item_sd=_number(obj, "item_sd", errors, 0, default=0.0),
                    annotator_sd=_number(obj, "annotator_sd", errors, 0, default=0.0),
                    position_bias=_number(obj, "position_bias", errors, default=0.0),
                    targets=_targets(obj.get("targets"), systems, errors) if systems or obj.get("pilot") is None
                    else list(obj.get("targets") or []),
                    power=_number(obj, "power", errors, 0, default=0.8),
                    simulations=_number(obj, "simulations", errors, 1, integer=True, default=1000),
                    seed=_number(obj, "seed", errors, 0, integer=True, default=0), pilot=obj.get("pilot"))
    if design.kind in scalar_kinds():
        if "position_bias" in obj:
            errors.append("'position_bias': a scalar rating shows one output, there is no position")
        if "scale" in obj:
            reason = check_scale(obj["scale"], "scale")
            if reason:
                errors.append(reason)
            else:
                design.scale = (int(obj["scale"][0]), int(obj["scale"][1]))
        design.noise_sd = _number(obj, "noise_sd", errors, 0, default=1.0)
    else:
        errors.extend(f"{key!r} is for scalar kinds ({', '.join(scalar_kinds())})" for key in ("scale", "noise_sd")
                      if key in obj)
    _kind_targets(kind, design.targets if all(isinstance(t, dict) and t.get("test") in TESTS
                                              for t in design.targets) else [], errors)
    design.stopping = _stopping(obj.get("stopping"), design.targets, errors)
    if isinstance(design.power, (int, float)) and not 0 < design.power < 1:
        errors.append(f"'power' must be between 0 and 1, got {design.power!r}")
    if errors:
        raise DesignInvalid(errors)
    return design
