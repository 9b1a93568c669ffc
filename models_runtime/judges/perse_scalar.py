"""PerSE's scalar evaluator (Per-MPST) for scalar rating studies (kind SCALAR_RATING): the `score` job's study
judge `perse_scalar` (`manage.py score SLUG --metrics perse_scalar`, once the ratings are in).

For every annotator and every item they rated, K (default 3) of their *other* rated items
form the profile, each with its text, the annotator's score and their review (the item's
comment): the most recent earlier ones first, then later ones when too few came before
(the aspect evaluator's order, perse.profile_for). The LLM reads the profile and the new
text, writes the review this reader would write and ends with their score on the study's
scale. The score is read with the judges' one rule (score_text.parse_score: a restated
scale is not the score); an answer without one is stored empty and counted, never a guess.
Predictions are per annotator (question `score`), so the report correlates each
annotator's predicted score with their own. Sampling as in PerSE's paper: temperature 0.8,
up to 600 new tokens (both options, as K is). Prompt wording is ours.

The kind's plan builder is registered here too (models_runtime/plan_support/plan_kinds.py; this module is
loaded with the runtime's judges): a study plan of kind SCALAR_RATING makes one item per
(question, system), the system's output as the rated `candidate`, the question's input
shown first and the user's own output as the (never shown) `reference` of the plan's
metrics. The judge itself is not a plan judge: the plan's score step runs before anyone
has rated, so no annotator has a profile yet.
"""
from collections import Counter, defaultdict
from dataclasses import dataclass

from annotate import services
from evaluation.report.kinds import SCALAR_RATING
from models_runtime.backends.base import SamplingParams
from models_runtime.metrics.registry import register_metric
from models_runtime.plan_support.plan_kinds import PlanKind, register_plan_kind
from models_runtime.step import counting

from .json_parsing import ParseError
from .perse import profile_for
from .score_text import parse_score
from .steps import generate

KIND = SCALAR_RATING
NAME = "perse_scalar"
PLAN_INSTRUCTIONS = ("Read the request and the response written for this user, then rate how good the response is "
                     "for you, from 1 to 10, and say why in a sentence or two.")
QUESTION = "score"
INTRO = ("Below are texts one reader has read, each with the reader's own review and score from {lo} to {hi}. "
         "Learn this reader's taste from them.")
EXAMPLE = "{context}Text: {text}\nThe reader's review: {review}\nThe reader's score: {score}"
ASK = ("Write the review this reader would write about the new text, then give the score this reader would give, "
       "on the last line as \"Score: N\" with N from {lo} to {hi}.\nThe reader's review:")
NO_REVIEW = "(no review)"


@dataclass(frozen=True)
class Options:
    """The evaluator's settings: K profile items, PerSE's sampling (temperature 0.8, 600
    new tokens), the texts' clip length, the seed, and the evaluator name stored."""

    k: int = 3
    temperature: float = 0.8
    max_new_tokens: int = 600
    max_chars: int = 1500
    seed: int = 0
    evaluator: str = NAME

    @classmethod
    def of(cls, values):
        """Options from a dict (a job's options); unknown keys are an error naming them."""
        values = dict(values or {})
        unknown = sorted(set(values) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"unknown {NAME} options {unknown} (known: {', '.join(cls.__dataclass_fields__)})")
        options = cls(**values)
        if options.k < 1 or options.max_new_tokens < 1 or options.temperature < 0:
            raise ValueError(f"{NAME} needs k >= 1, max_new_tokens >= 1 and temperature >= 0")
        return options


def _clip(text, max_chars):
    return text if len(text) <= max_chars else text[:max_chars].rsplit(" ", 1)[0] + " ..."


def _block(item_data, max_chars, review, score):
    context = item_data.get("input") or ""
    return EXAMPLE.format(context=f"Context: {_clip(context, max_chars)}\n" if context else "",
                          text=_clip(item_data["candidate"]["text"], max_chars), review=review, score=score)


def build_prompt(scale, profile, target, max_chars=1500):
    """Chat messages for one prediction. `profile`: [(item data, score, review)], `target`:
    the item data to predict."""
    lo, hi = scale
    parts = [INTRO.format(lo=lo, hi=hi)]
    parts += [f"Example {n}:\n" + _block(data, max_chars, _clip(review, max_chars) if review else NO_REVIEW, score)
              for n, (data, score, review) in enumerate(profile, 1)]
    new = _block(target, max_chars, "", "").split("\nThe reader's review:")[0]
    parts.append("New text:\n" + new)
    parts.append(ASK.format(lo=lo, hi=hi))
    return [{"role": "user", "content": "\n\n".join(parts)}]


def parse_answer(text, scale):
    """The predicted score as stored text ("7", "7.5"), or "" when the answer has none."""
    try:
        return format(parse_score(text, float(scale[0]), float(scale[1])), "g")
    except ParseError:
        return ""


def refusal(info):
    """Why this judge cannot score the study `info` (services.StudyInfo), or None."""
    return None if info.kind == KIND else f"study {info.slug} is {info.kind}; {NAME} scores {KIND} studies"


def study_info(slug):
    info = services.get_study(slug)
    if info is None:
        raise ValueError(f"study {slug!r} does not exist")
    if refusal(info):
        raise ValueError(refusal(info))
    return info


def predict(info, backend, options=Options(), batched=True, annotators=None):
    """Predictions for every non-gold score of the study (of `annotators` usernames only,
    when given), in one batched backend call. -> (rows [services.PredictionRow], Counter of
    ratings skipped per annotator for want of a profile)."""
    scale = info.config["scale"]
    histories = defaultdict(list)
    for j in services.judgments_for_perse(info.slug, [QUESTION], annotators):
        histories[j.annotator].append(j)
    targets, prompts, skipped = [], [], Counter()
    for username, history in sorted(histories.items()):
        for index, target in enumerate(history):
            profile = profile_for(history, index, options.k)
            if not profile:
                skipped[username] += 1
                continue
            targets.append(target)
            prompts.append(build_prompt(scale, [(p.item_data, p.value, p.comment) for p in profile],
                                        target.item_data, options.max_chars))
    params = SamplingParams(max_new_tokens=options.max_new_tokens, temperature=options.temperature,
                            seed=options.seed)
    with counting(len(prompts), "predictions"):
        texts = generate(backend, prompts, params, batched)
    rows = [services.PredictionRow(item_key=t.item_key, evaluator=options.evaluator, annotator=t.annotator,
                                   question=QUESTION, value=parse_answer(text, scale))
            for t, text in zip(targets, texts)]
    return rows, skipped


def perse_scalar(slug, backend, options=Options(), batched=True, annotators=None):
    """Predict and store (idempotent: a re-run replaces this evaluator's values) -> counts."""
    info = study_info(slug)
    rows, skipped = predict(info, backend, options, batched, annotators)
    stored = services.upsert_predictions(slug, rows)
    values = [r.value for r in rows]
    return {"study": slug, "evaluator": options.evaluator, "predictions": len(rows), "unparsed": values.count(""),
            "skipped": sum(skipped.values()), "created": stored.created, "updated": stored.updated,
            "k": options.k, "temperature": options.temperature, "max_new_tokens": options.max_new_tokens}


@register_metric(NAME, scope="study")
def perse_scalar_metric(slug, *, model=None, device=None, options=None):
    """The `score` job's entry: the embedded model unless `model`. Not a plan judge: a plan's
    score step runs before anyone has rated, so no annotator has a profile yet."""
    from evaluation.vocabulary import DEFAULT_MODEL
    from models_runtime.backends.registry import get_backend

    return perse_scalar(slug, get_backend(model or DEFAULT_MODEL, device=device), Options.of(options))


perse_scalar_metric.refuses = refusal  # checked when a score job is made (scoring.validate_score_params)


def plan_items(record, candidates, meta):
    """A plan's batch items of one question (plan_kinds.Builder): one per system's output;
    outputs are rated on their own, so equal outputs of two systems are both kept."""
    return [{"item_id": f"{record['id']}-{c['id']}", "input": record["input"], "reference": record["output"],
             "candidate": {"id": c["id"], "text": c["text"]}, "meta": meta} for c in candidates]


register_plan_kind(KIND, PlanKind(plan_items, PLAN_INSTRUCTIONS))
