"""The `ip` section of a study plan: `manage.py probes ip PLAN.json`, and the plan judge
`ip` of `manage.py pipeline PLAN.json` (an extra pipeline step after `score`).

    {"systems": [{"id": "a", "model": "smollm2"}, ...],       (the models probed; or ip.models)
     "judges": ["ip"],                                         (the pipeline runs the probe)
     "ip": {"probes": "my_probes.jsonl",                      (default: the shipped set)
            "models": ["smollm2"], "samples": 3,
            "generation": {"max_tokens": 128, "temperature": 0.7, "top_p": 1.0, "seed": 0},
            "judge_model": "smollm2",                          (for metric-scored probes)
            "study": {"slug": "ip-us-uk", "title": "Which answer suits this user?"}}}  (optional human side)

The section's file name is resolved like the plan's input files (relative to the plan, or
an uploaded file's name). Every key is checked before anything runs.
"""
import difflib
from pathlib import Path

from evaluation.vocabulary import DEFAULT_MODEL

from ..job_support.kinds import JobParamsError
from ..plan_support.plan_checks import resolve_file
from ..plan_support.plan_judges import PlanJudge, register_plan_judge
from .job import validate_ip_params

PLAN_JUDGE = "ip"  # the plan judge that runs the probe in a pipeline
# A step of its own after `score` (pipeline.STEP_FUNCTIONS["ip"]), on any study kind.
register_plan_judge(PLAN_JUDGE, PlanJudge(kinds=None, uses_model=False, job="ip"))
SECTION_KEYS = ("probes", "models", "samples", "generation", "judge_model", "study")
# Top-level keys `probes ip` reads (ip, systems, judge_model, device, study) or passes over
# (the pipeline's own), so that one plan serves both commands.
PLAN_KEYS = ("study", "input", "systems", "generation", "metrics", "judges", "judge_model", "device", "ip")


def _unknown(keys, known, where) -> None:
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else f" (known: {', '.join(known)})"
            raise JobParamsError(f"{where}: unknown key `{key}`{hint}")


def plan_models(plan: dict) -> list[str]:
    """The distinct models of the plan's systems, in order (the embedded model without any)."""
    systems: list = plan["systems"] if isinstance(plan.get("systems"), list) else []
    models = [s["model"] for s in systems if isinstance(s, dict) and isinstance(s.get("model"), str) and s["model"]]
    return list(dict.fromkeys(models)) or [DEFAULT_MODEL]


def ip_params(plan: dict, files) -> dict:
    """The `ip` job's params from a plan. `files`: the plan's directory, or {uploaded name:
    path} (plans.resolve_file)."""
    if not isinstance(plan, dict):
        raise JobParamsError("a plan is a JSON object")
    section = plan.get("ip") if plan.get("ip") is not None else {}
    if not isinstance(section, dict):
        raise JobParamsError('"ip" must be an object')
    _unknown(section, SECTION_KEYS, "ip")
    study: dict = plan["study"] if isinstance(plan.get("study"), dict) else {}
    params = {key: section[key] for key in ("samples", "generation") if key in section}  # else the job's defaults
    params.update(models=section.get("models") or plan_models(plan), human_study=section.get("study"),
                  judge_model=section.get("judge_model") or plan.get("judge_model") or DEFAULT_MODEL,
                  device=plan.get("device") or None)
    if section.get("probes"):
        params["probes"] = resolve_file(section["probes"], files)
    if isinstance(study.get("slug"), str) and study["slug"] and not section.get("study"):
        params["study"] = study["slug"]  # the job is kept with the plan's study
    return validate_ip_params(params)


def probe_plan_params(plan: dict, plan_path: str) -> dict:
    """`probes ip PLAN.json`: the whole plan's keys checked, then its `ip` section."""
    if not isinstance(plan, dict):
        raise JobParamsError("a plan is a JSON object")
    _unknown(plan, PLAN_KEYS, "the plan")
    return ip_params(plan, Path(plan_path).resolve().parent)
