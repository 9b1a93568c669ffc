"""ExPerT (Salemi et al., 2025): explainable, reference-based evaluation of personalized
text, as four batched LLM steps over all items at once.

1. aspect extraction for every reference and output;
2. aspect matching: each aspect against the other side's list (one call per aspect);
3. content check and 4. style check of every match. As the official code does
   (github.com/alirezasalemi7/ExPerT, expert_score/matching/match.py), each matched aspect
   gets its own checks with its own aspect first: a recall match (reference aspect ->
   generated) asks about (reference, generated), a precision match about (generated,
   reference), so the two sides can disagree. `ExpertConfig(shared_checks=True)` instead
   checks each distinct (reference, generated) pair once for both sides, which saves calls;
   every explanation states which was used (`checks`: "separate" or "shared").
Malformed answers are retried with rising temperature (steps.RetryPolicy), then count as
unmatched. Scores come from evaluation.expert_score (statistics.md). Prompt wording is ours.
"""
from dataclasses import dataclass

from models_runtime.backends.base import SamplingParams

from .json_parsing import parse_aspects, parse_decision, parse_match
from .steps import RetryPolicy, run_step

SYSTEM = "You are a careful evaluator. Answer with JSON only, no other text."

EXTRACT = (
    "Split the text below into its atomic aspects: each distinct point, fact, opinion or "
    "stylistic trait it contains. For each aspect give a short title, a one-sentence "
    "description, and the sentences of the text that show it, copied exactly.\n"
    'Answer with a JSON list only. For the text "The hotel was quiet. Staff were rude." the answer is:\n'
    '[{{"aspect": "Noise", "description": "the hotel is quiet", "evidence": ["The hotel was quiet."]}}, '
    '{{"aspect": "Staff", "description": "the staff are rude", "evidence": ["Staff were rude."]}}]\n\n'
    "Request the text answers: {input}\n\nText: {text}"
)
MATCH = (
    "Is the aspect below also covered by one of the aspects in the list? "
    'Answer with a JSON object: {{"reason": "...", "is_matched": true or false, '
    '"matched_aspect": "the title from the list, or empty"}}\n\n'
    "Aspect: {title}: {description}\n\nList:\n{options}"
)
CONTENT = (
    "Do these two aspects say the same thing in content (the same facts, opinions and "
    "details)? Answer with a JSON object: "
    '{{"reason": "...", "is_matched": true or false}}\n\n'
    "Aspect 1: {a}\nEvidence 1: {ea}\n\nAspect 2: {b}\nEvidence 2: {eb}"
)
STYLE = (
    "Are these two pieces of evidence written in the same style (tone, formality, "
    "wording, sentence length, point of view)? Answer with a JSON object: "
    '{{"reason": "...", "is_matched": true or false}}\n\n'
    "Evidence 1: {ea}\n\nEvidence 2: {eb}"
)


@dataclass(frozen=True)
class ExpertConfig:
    extract_tokens: int = 384
    judge_tokens: int = 128
    policy: RetryPolicy = RetryPolicy()
    batched: bool = True
    seed: int = 0
    shared_checks: bool = False  # True: one content/style check per (reference, generated) pair

    @property
    def checks(self) -> str:
        return "shared" if self.shared_checks else "separate"


def _chat(text):
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]


def _evidence(aspect):
    return " ".join(aspect["evidence"]) or aspect["description"] or aspect["aspect"]


def extraction_prompt(request, text):
    return _chat(EXTRACT.format(input=request, text=text))


def matching_prompt(aspect, others):
    options = "\n".join(f"- {o['aspect']}: {o['description']}" for o in others)
    return _chat(MATCH.format(title=aspect["aspect"], description=aspect["description"], options=options))


def content_prompt(ref, gen):
    return _chat(CONTENT.format(a=f"{ref['aspect']}: {ref['description']}", ea=_evidence(ref),
                                b=f"{gen['aspect']}: {gen['description']}", eb=_evidence(gen)))


def style_prompt(ref, gen):
    return _chat(STYLE.format(ea=_evidence(ref), eb=_evidence(gen)))


def _progress(progress, label):
    if progress:
        progress(label)


def explain(records, backend, config=ExpertConfig(), progress=None):
    """ExPerT explanation objects (runtime.md) for records {"input", "output", "reference"}.

    `progress`, when given, is called with a step label after each step."""
    from evaluation.expert_score import expert_scores

    n = len(records)
    calls = [0] * n
    extract_params = SamplingParams(max_new_tokens=config.extract_tokens, seed=config.seed)
    judge_params = SamplingParams(max_new_tokens=config.judge_tokens, seed=config.seed)

    # Step 1: aspects of every reference (even slots) and output (odd slots).
    prompts = []
    for r in records:
        prompts += [extraction_prompt(r.get("input", ""), r["reference"]),
                    extraction_prompt(r.get("input", ""), r["output"])]
    found, attempts = run_step(backend, prompts, lambda i, t: parse_aspects(t), extract_params, config.policy,
                               config.batched)
    aspects = [(found[2 * k] or [], found[2 * k + 1] or []) for k in range(n)]
    for k in range(n):
        calls[k] += attempts[2 * k] + attempts[2 * k + 1]
    _progress(progress, "extraction")

    # Step 2: each aspect against the other side's list. A side with no aspects needs no call.
    jobs, prompts = [], []
    for k, (ref, gen) in enumerate(aspects):
        for side, own, other in (("recall", ref, gen), ("precision", gen, ref)):
            if not other:
                continue
            for aspect in own:
                jobs.append((k, side, aspect, [o["aspect"] for o in other]))
                prompts.append(matching_prompt(aspect, other))
    decided, attempts = run_step(backend, prompts, lambda i, t: parse_match(t, jobs[i][3]),
                                 judge_params, config.policy, config.batched)
    matches = [[] for _ in range(n)]
    for (k, side, aspect, _), decision, spent in zip(jobs, decided, attempts):
        calls[k] += spent
        if decision and decision[0]:
            matches[k].append({"side": side, "from": aspect["aspect"], "to": decision[0], "reason": decision[1]})
    _progress(progress, "matching")

    # Steps 3 and 4: content and style checks of every match (see the module docstring).
    pairs = _check_pairs(matches, aspects, config)
    keys = list(pairs)
    checks = {}
    for name, build in (("content", content_prompt), ("style", style_prompt)):
        prompts = [build(*pairs[key]) for key in keys]
        decided, attempts = run_step(backend, prompts, lambda i, t: parse_decision(t),
                                     judge_params, config.policy, config.batched)
        for key, decision, spent in zip(keys, decided, attempts):
            calls[key[0]] += spent
            checks[(name, key)] = decision or (False, "")
        _progress(progress, name)

    explanations = []
    for k in range(n):
        ref, gen = aspects[k]
        side_matches = {"recall": [], "precision": []}
        for m in matches[k]:
            key = _check_key(k, m, config)
            (c, c_reason), (s, s_reason) = checks[("content", key)], checks[("style", key)]
            m.update(content_match=c, content_reason=c_reason, style_match=s, style_reason=s_reason)
            side_matches[m["side"]].append((c, s))
        scores = expert_scores(len(ref), len(gen), side_matches["recall"], side_matches["precision"])
        explanations.append({
            "score": scores["score"], "precision": scores["precision"], "recall": scores["recall"],
            "variants": scores["variants"], "aspects_reference": ref, "aspects_generated": gen,
            "matches": matches[k], "llm_calls": calls[k], "checks": config.checks,
        })
    return explanations


def _check_pairs(matches, aspects, config):
    """{check key: (first aspect, second aspect)} of the content and style checks: each
    match's own aspect first (official), or (reference, generated) when shared."""
    pairs = {}
    for k, item_matches in enumerate(matches):
        reference = {a["aspect"]: a for a in aspects[k][0]}
        generated = {a["aspect"]: a for a in aspects[k][1]}
        for m in item_matches:
            if m["side"] == "recall":
                own, matched = reference[m["from"]], generated[m["to"]]
            else:
                own, matched = generated[m["from"]], reference[m["to"]]
            if config.shared_checks and m["side"] == "precision":
                own, matched = matched, own  # shared: always (reference, generated)
            pairs.setdefault(_check_key(k, m, config), (own, matched))
    return pairs


def _check_key(k, match, config):
    """Which check a match uses: its own (item, side, aspect), or with shared checks the
    item's (reference title, generated title) pair."""
    if not config.shared_checks:
        return (k, match["side"], match["from"])
    if match["side"] == "recall":
        return (k, match["from"], match["to"])
    return (k, match["to"], match["from"])


def corpus_result(explanations):
    """The `manage.py expert` document: corpus mean F, the items, total LLM calls, LLM calls
    per item, and which content/style checks were used."""
    from evaluation.expert_score import corpus_score

    total = sum(e["llm_calls"] for e in explanations)
    return {"score": corpus_score([e["score"] for e in explanations]) if explanations else None,
            "items": explanations, "llm_calls": total,
            "llm_calls_per_item": total / len(explanations) if explanations else None,
            "checks": explanations[0]["checks"] if explanations else None}
