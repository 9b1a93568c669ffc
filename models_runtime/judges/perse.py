"""PerSE-style personalized pairwise evaluator for Per-DOC aspect studies (kind ASPECT_PAIRWISE).

For each annotator and aspect, K of the annotator's other judgments on that aspect (the
most recent earlier ones first, then later ones when too few came before) form the
profile: premise, both plots, and which one this reader chose. The LLM predicts the
reader's choice on the target item. Predictions are stored per annotator through
annotate.services (value = candidate id, "N/A", or "" when unparseable).
Prompt wording is ours.
"""
import re
from collections import Counter, defaultdict

from annotate import services
from evaluation.report.kinds import ASPECT_PAIRWISE
from models_runtime.backends.base import SamplingParams
from models_runtime.step import counting

from .steps import generate

NA = "N/A"
INTRO = ("Below are story plots one reader has compared, and which plot this reader preferred "
         "for the question \"{question}\". Learn this reader's taste, then predict the reader's "
         "choice for the new pair of plots.")
EXAMPLE = "Premise: {premise}\nPlot A: {a}\nPlot B: {b}\nThe reader chose: {choice}"
ASK = ("Which plot would this reader prefer for the question \"{question}\"? "
       "Answer with Plot A, Plot B, or N/A.\nThe reader chose:")
_ANSWER = re.compile(r"\b(?:plot\s+)?([AB])\b|(N/?A)\b", re.I)


def _clip(text, max_chars):
    return text if len(text) <= max_chars else text[:max_chars].rsplit(" ", 1)[0] + " ..."


def _shown_choice(item_data, value):
    ids = [c["id"] for c in item_data["candidates"]]
    if value in ids:
        return "Plot " + "AB"[ids.index(value)]
    return NA  # a tie (or an unknown value) is shown as no preference


def build_prompt(question, profile, target, max_chars=1500):
    """profile: [(item_data, chosen value)]; target: item_data."""
    def block(data, choice):
        a, b = (c["text"] for c in data["candidates"])
        return EXAMPLE.format(premise=_clip(data.get("premise", ""), max_chars), a=_clip(a, max_chars),
                              b=_clip(b, max_chars), choice=choice)

    parts = [INTRO.format(question=question)]
    parts += [f"Example {n}:\n" + block(data, _shown_choice(data, value)) for n, (data, value) in enumerate(profile, 1)]
    parts.append("New plots:\n" + block(target, "?").rsplit("\n", 1)[0])
    parts.append(ASK.format(question=question))
    return [{"role": "user", "content": "\n\n".join(parts)}]


def parse_answer(text, item_data):
    """Candidate id for "Plot A"/"Plot B", "N/A", or "" when unparseable or ambiguous."""
    found = set()
    for m in _ANSWER.finditer(text or ""):
        found.add(m.group(1).upper() if m.group(1) else NA)
    if len(found) != 1:
        return ""
    answer = found.pop()
    return NA if answer == NA else item_data["candidates"]["AB".index(answer)]["id"]


def profile_for(history, index, k):
    """K other judgments for history[index]: earlier ones (latest first), then later ones."""
    earlier = list(reversed(history[:index]))
    later = history[index + 1:]
    return (earlier + later)[:k]


def study_info(study):
    """The services.StudyInfo of a slug, or of anything with `.slug` (a Study, a StudyInfo)."""
    slug = study if isinstance(study, str) else study.slug
    info = services.get_study(slug)
    if info is None:
        raise ValueError(f"study {slug!r} does not exist")
    if info.kind != ASPECT_PAIRWISE:
        raise ValueError(f"study {info.slug} is {info.kind}, the PerSE evaluator needs {ASPECT_PAIRWISE}")
    return info


def predict(info, backend, *, k, evaluator, max_new_tokens=8, max_chars=1500, batched=True, annotators=None):
    """Predictions of every non-gold judgment of the study (of `annotators` usernames
    only, when given), in one batched backend call. -> (rows [services.PredictionRow],
    Counter of judgments skipped per annotator for want of a profile)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    aspects = {a["key"]: a["question"] for a in info.aspects}
    histories = defaultdict(list)
    for j in services.judgments_for_perse(info.slug, list(aspects), annotators):
        histories[(j.annotator, j.question)].append(j)
    targets, prompts, skipped = [], [], Counter()
    for (username, aspect), history in sorted(histories.items()):
        for index, target in enumerate(history):
            profile = profile_for(history, index, k)
            if not profile:
                skipped[username] += 1
                continue
            targets.append(target)
            prompts.append(build_prompt(aspects[aspect], [(p.item_data, p.value) for p in profile],
                                        target.item_data, max_chars))
    with counting(len(prompts), "predictions"):
        texts = generate(backend, prompts, SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0), batched)
    rows = [services.PredictionRow(item_key=t.item_key, evaluator=evaluator, annotator=t.annotator,
                                   question=t.question, value=parse_answer(text, t.item_data))
            for t, text in zip(targets, texts)]
    return rows, skipped


def store(slug, rows, skipped):
    """Upsert the rows -> the counts PerSE reports."""
    stored = services.upsert_predictions(slug, rows)
    values = [r.value for r in rows]
    return {"predictions": len(rows), "unparsed": values.count(""), "na": values.count(NA),
            "skipped": sum(skipped.values()), "created": stored.created, "updated": stored.updated}


def perse_predict(study, backend, *, k=1, evaluator="perse-smollm2", max_new_tokens=8, max_chars=1500, batched=True,
                  annotators=None):
    """Predict every non-gold judgment of `study` (a slug or a Study; of `annotators`
    usernames only, when given) and store the predictions (idempotent: re-running
    replaces this evaluator's values). Returns counts."""
    info = study_info(study)
    rows, skipped = predict(info, backend, k=k, evaluator=evaluator, max_new_tokens=max_new_tokens,
                            max_chars=max_chars, batched=batched, annotators=annotators)
    return {"study": info.slug, "evaluator": evaluator, **store(info.slug, rows, skipped)}
