"""How a plan's generations become the items of each study kind a plan can build: one
entry per kind (a kind module adds its own with `register_plan_kind`).

A builder gets one question's record, every system's candidate (`{"id": system id,
"text"}`, in the plan's order) and the item meta, and returns the question's batch items,
or a string saying why the question is left out of the batch:

- pairwise kinds: one item per question carrying every system's candidate (2 to 8; the
  candidate ids are the system ids; annotators see two at a time). A question whose
  candidates are not all different is left out: two identical outputs make a comparison
  that says nothing.
- a per-output kind (PerSE's scalar rating, registered by models_runtime/judges/perse_scalar.py)
  returns one item per (question, system): `{"item_id": "<question>-<system>", "candidate":
  {...}, ...}`, so its builder is its own.
"""
from collections.abc import Callable
from dataclasses import dataclass

from evaluation.report.kinds import PAIRWISE_ALIGNMENT

Builder = Callable[[dict, list[dict], dict], "list[dict] | str"]


@dataclass(frozen=True)
class PlanKind:
    items: Builder
    instructions: str  # the study's instructions when the plan gives none
    min_systems: int = 2
    max_systems: int = 8


def pairwise_items(record: dict, candidates: list[dict], meta: dict) -> list[dict] | str:
    """One item with every system's candidate, or why the question is left out."""
    seen: dict[str, str] = {}
    for candidate in candidates:
        text = candidate["text"].strip()
        if text in seen:
            return f"identical candidates ({seen[text]}, {candidate['id']})"
        seen[text] = candidate["id"]
    return [{"item_id": str(record["id"]), "input": record["input"], "reference": record["output"],
             "candidates": [{"id": c["id"], "text": c["text"]} for c in candidates], "meta": meta}]


PLAN_KINDS: dict[str, PlanKind] = {
    PAIRWISE_ALIGNMENT: PlanKind(pairwise_items, "Read the request and the user's own expected output, then pick the "
                                                 "response that is closer to it in content and writing style."),
}


def register_plan_kind(kind: str, plan_kind: PlanKind) -> None:
    PLAN_KINDS[kind] = plan_kind
