"""How a plan's generations become the items of each study kind a plan can build: one
entry per kind (a kind module adds its own with `register_plan_kind`).

A builder gets one question's record, every system's candidate (`{"id": system id,
"text"}`, in the plan's order) and the item meta, and returns the question's batch items,
or a string saying why the question is left out of the batch:

- pairwise kinds: one item per question carrying every system's candidate (2 to 8; the
  candidate ids are the system ids; annotators see two at a time). Systems whose outputs
  are identical (after stripping white space) share one candidate: it takes the id of the
  first of them in plan order and lists the others in `also_systems`, is shown once, and
  counts for each of them in the report (evaluation/report/merged.py). A question is left
  out only when fewer than two distinct outputs remain (nothing to compare).
- kinds that show every output on one screen (best-worst scaling, listwise orders): one item per question
  with every system's candidate (3 to 8; ids = system ids). Identical outputs are not
  merged (those kinds take no `also_systems`): each system is shown and judged as itself.
- a per-output kind (PerSE's scalar rating, registered by models_runtime/judges/perse_scalar.py)
  returns one item per (question, system): `{"item_id": "<question>-<system>", "candidate":
  {...}, ...}`, so its builder is its own.
"""
from collections.abc import Callable
from dataclasses import dataclass

from evaluation.report.kinds import BEST_WORST, PAIRWISE_ALIGNMENT, RANKING

# The kind of the batches the runtime writes (generation, LaMP rag, probes' human side, ExPerT's
# input): the one place the runtime names it; every other runtime module imports this.
ALIGNMENT_KIND = PAIRWISE_ALIGNMENT

Builder = Callable[[dict, list[dict], dict], "list[dict] | str"]


@dataclass(frozen=True)
class PlanKind:
    items: Builder
    instructions: str  # the study's instructions when the plan gives none
    min_systems: int = 2
    max_systems: int = 8


def merge_identical(candidates: list[dict]) -> list[dict]:
    """The distinct candidates, in plan order: a later system whose output equals an earlier
    one's (after strip) joins that candidate's `also_systems` instead of being shown twice."""
    by_text: dict[str, dict] = {}
    for candidate in candidates:
        text = candidate["text"].strip()
        if text in by_text:
            by_text[text].setdefault("also_systems", []).append(candidate["id"])
        else:
            by_text[text] = {"id": candidate["id"], "text": candidate["text"]}
    return list(by_text.values())


def pairwise_items(record: dict, candidates: list[dict], meta: dict) -> list[dict] | str:
    """One item with every distinct output as a candidate (merge_identical), or why the
    question is left out (all outputs identical)."""
    merged = merge_identical(candidates)
    if len(merged) < 2:
        return f"identical candidates ({', '.join(c['id'] for c in candidates)})"
    return [{"item_id": str(record["id"]), "input": record["input"], "reference": record["output"],
             "candidates": merged, "meta": meta}]


def screen_items(record: dict, candidates: list[dict], meta: dict) -> list[dict] | str:
    """One item with every system's output as a candidate, all of them shown on one screen
    (or in the study's tuples)."""
    return [{"item_id": str(record["id"]), "input": record["input"], "reference": record["output"],
             "candidates": [{"id": c["id"], "text": c["text"]} for c in candidates], "meta": meta}]


PLAN_KINDS: dict[str, PlanKind] = {
    PAIRWISE_ALIGNMENT: PlanKind(pairwise_items, "Read the request and the user's own expected output, then pick the "
                                                 "response that is closer to it in content and writing style."),
    BEST_WORST: PlanKind(screen_items, "Read the request and the user's own expected output, then pick the best "
                                       "output (closest to it in content and writing style) and the worst.",
                         min_systems=3),
    RANKING: PlanKind(screen_items, "Read the request and the user's own expected output, then rank the responses "
                                    "from the one closest to it in content and writing style to the furthest.",
                      min_systems=3),
}


def register_plan_kind(kind: str, plan_kind: PlanKind) -> None:
    PLAN_KINDS[kind] = plan_kind


def identical_outputs(items: list[dict]) -> dict:
    """What merge_identical did in a batch: questions with a merged candidate, system pairs
    with identical outputs in all, and per system pair ("a|b", plan order) how many
    questions gave them identical outputs."""
    per_pair: dict[str, int] = {}
    questions = 0
    for item in items:
        groups = [[c["id"], *c["also_systems"]] for c in item.get("candidates") or [] if c.get("also_systems")]
        questions += bool(groups)
        for group in groups:
            for n, a in enumerate(group):
                for b in group[n + 1:]:
                    per_pair[f"{a}|{b}"] = per_pair.get(f"{a}|{b}", 0) + 1
    return {"questions": questions, "pairs": sum(per_pair.values()), "per_pair": dict(sorted(per_pair.items()))}
