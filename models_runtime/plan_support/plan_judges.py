"""The judges a plan may name in `judges`: one entry per judge, checked with the rest of
the plan before anything runs (a module that adds a judge registers it here with
`register_plan_judge`).

An entry says which study kinds the judge applies to, whether it uses the plan's
`judge_model` (kinds None: any kind), and how the pipeline's score step runs it: as a metric of the `score` job
(the default), or as a job of its own (`job`, with `params(pipeline params)` giving that
job's params).
"""
from collections.abc import Callable
from dataclasses import dataclass

from models_runtime.plan_support.plan_kinds import ALIGNMENT_KIND


@dataclass(frozen=True)
class PlanJudge:
    kinds: tuple[str, ...] | None  # None: any study kind
    uses_model: bool = True
    job: str = "score"
    params: Callable[[dict], dict] | None = None


PLAN_JUDGES: dict[str, PlanJudge] = {
    "gemba": PlanJudge(kinds=(ALIGNMENT_KIND,)),
    "geval": PlanJudge(kinds=(ALIGNMENT_KIND,)),
    "geval_prob": PlanJudge(kinds=(ALIGNMENT_KIND,)),
    "expert": PlanJudge(kinds=(ALIGNMENT_KIND,)),
}


def register_plan_judge(name: str, judge: PlanJudge) -> None:
    PLAN_JUDGES[name] = judge
