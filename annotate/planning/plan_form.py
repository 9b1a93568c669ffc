"""The Plan page's form: a design file built from form fields, its defaults read from the
study (its kind, its systems, its items, overlap and annotators), and the saved shape of
Study.config["power"] (what the datasheet prints: annotate/reports/datasheet.py)."""
import json
import time

from django.db import transaction

from annotate.kinds import get_kind
from annotate.models import Study

from .design_spec import scalar_kinds

NUMBERS = (("items", int), ("annotations_per_item", int), ("annotators", int), ("simulations", int), ("seed", int),
           ("item_sd", float), ("annotator_sd", float), ("noise_sd", float), ("power", float))
STRENGTH = "strength:"
DEFAULT_SIMULATIONS = 500


def study_systems(study: Study) -> list[str]:
    """The system ids of the study's items (candidates), in first-seen order, at most 8."""
    kind, seen = get_kind(study.kind), dict[str, None]()
    for data in study.items.filter(is_gold=False).values_list("data", flat=True)[:500]:
        for candidate in kind.candidates(data) if kind.candidates_key else []:
            if isinstance(candidate, dict) and isinstance(candidate.get("id"), str):
                seen.setdefault(candidate["id"], None)
    return list(seen)[:8]


def default_targets(kind: str, systems: list[str]) -> list[dict]:
    if len(systems) < 2:
        return []
    if kind in scalar_kinds():
        return [{"test": "scalar_difference", "a": systems[0], "b": systems[1]}]
    return [{"test": "rank_separation", "a": systems[0], "b": systems[-1]}]


def initial(study: Study) -> dict:
    """The form's first values: the study as it is, every system equally strong."""
    systems = study_systems(study)
    scalar = study.kind in scalar_kinds()
    middle = sum(get_kind(study.kind).report_config(study.config or {}).get("scale", [0, 0])) / 2 if scalar else 0.0
    items = study.items.filter(is_gold=False).count()
    if scalar and systems:  # a scalar study's items are inputs x systems; the design counts inputs
        items //= len(systems)
    return {"systems": {s: middle for s in systems}, "items": max(items, 2), "scalar": scalar,
            "annotations_per_item": study.annotations_per_item, "annotators": max(study.annotations_per_item, 3),
            "simulations": DEFAULT_SIMULATIONS, "seed": 0, "item_sd": 0.0, "annotator_sd": 0.0, "noise_sd": 1.0,
            "power": 0.8, "fit": False, "stopping_every": "",
            "targets": json.dumps(default_targets(study.kind, systems))}


def form_from_design(form: dict, study: Study, design: dict) -> dict:
    """The form as the design file `design` (a run's) fills it: the page shows what ran."""
    out = {**form, **{name: design[name] for name, _ in NUMBERS if name in design}}
    if isinstance(design.get("systems"), dict) and design["systems"]:
        out["systems"] = dict(design["systems"])
    out["fit"] = design.get("pilot") == study.slug
    out["targets"] = json.dumps(design.get("targets") or [])
    out["stopping_every"] = (design.get("stopping") or {}).get("every", "")
    return out


def design_from_form(study: Study, post) -> tuple[dict, list[str]]:
    """(the design file, problems with the form's fields): numbers that are not numbers,
    targets that are not JSON. The design itself is checked by parse_design afterwards."""
    errors: list[str] = []
    scalar = study.kind in scalar_kinds()
    raw: dict = {"kind": study.kind}
    for name, cast in NUMBERS:
        text = (post.get(name) or "").strip()
        if not text or (name == "noise_sd" and not scalar):
            continue
        try:
            raw[name] = cast(text)
        except ValueError:
            errors.append(f"{name!r} must be {'a whole number' if cast is int else 'a number'}, got {text[:40]!r}")
    if post.get("fit"):
        raw["pilot"] = study.slug
    else:
        systems = {}
        for key in post:
            if key.startswith(STRENGTH):
                try:
                    systems[key[len(STRENGTH):]] = float(post[key])
                except ValueError:
                    errors.append(f"strength of {key[len(STRENGTH):]!r} must be a number, got {post[key][:40]!r}")
        raw["systems"] = systems
    if scalar and (study.config or {}).get("scale"):
        raw["scale"] = list(study.config["scale"])
    try:
        raw["targets"] = json.loads(post.get("targets") or "[]")
    except ValueError as exc:
        errors.append(f"'targets' is not JSON: {exc}")
    every = (post.get("stopping_every") or "").strip()
    if every:
        try:
            raw["stopping"] = {"every": int(every), "target": 0}
        except ValueError:
            errors.append(f"'stopping every' must be a whole number of judgments, got {every[:40]!r}")
    return raw, errors


def save_power(study: Study, run: dict, user) -> dict:
    """Study.config["power"] = {"design", "result", "run", "saved_by", "saved_at"} (the
    design file and the JSON of manage.py design), written under the study's row lock."""
    saved = {"design": run["design"], "result": run["result"], "run": run["id"], "saved_by": user.get_username(),
             "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with transaction.atomic():
        locked = Study.objects.select_for_update().get(pk=study.pk)
        locked.config = {**(locked.config or {}), "power": saved}
        locked.save(update_fields=["config"])
    return saved
