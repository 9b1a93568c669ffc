"""One LLM step over many prompts: one batched backend call, then retries of the failed
prompts with rising temperature, up to a limit.

Identical prompts within a step are sent once and share the answer. Every prompt records
how many attempts it needed, so callers can count LLM calls per item.
"""
import contextlib
import json
from dataclasses import dataclass, replace

from .json_parsing import ParseError


@dataclass(frozen=True)
class RetryPolicy:
    """Attempt k (0-based) samples at min(start + k * step, maximum); greedy first."""

    max_attempts: int = 3
    start_temperature: float = 0.0
    step: float = 0.5
    max_temperature: float = 1.0

    def temperature(self, attempt):
        return min(self.start_temperature + attempt * self.step, self.max_temperature)


def generate(backend, prompts, params, batched=True):
    """Texts (first sample) for `prompts`: one backend call, or one call per prompt when
    `batched` is False (the baseline of the benchmark)."""
    if not prompts:
        return []
    outputs = backend.generate(prompts, params) if batched else [backend.generate([p], params)[0] for p in prompts]
    return [gens[0].text if gens else "" for gens in outputs]


def _key(prompt):
    return json.dumps(prompt, sort_keys=True)


def run_step(backend, prompts, parse, params, policy=RetryPolicy(), batched=True):
    """-> (results, attempts): results[i] = parse(i, text) or None once every attempt
    failed with ParseError; attempts[i] = LLM calls spent on prompt i."""
    results = [None] * len(prompts)
    attempts = [0] * len(prompts)
    groups = {}
    for i, prompt in enumerate(prompts):
        groups.setdefault(_key(prompt), []).append(i)
    pending = [members[0] for members in groups.values()]
    for attempt in range(policy.max_attempts):
        if not pending:
            break
        step_params = replace(params, temperature=policy.temperature(attempt), seed=params.seed + attempt)
        texts = generate(backend, [prompts[i] for i in pending], step_params, batched)
        failed = []
        for i, text in zip(pending, texts):
            members = groups[_key(prompts[i])]
            value, ok = None, True
            try:
                value = parse(i, text)
            except ParseError:
                ok = False
            for j in members:
                attempts[j] += 1
                # Members share the prompt, but a parse may depend on the member (titles).
                if ok and j == i:
                    results[j] = value
                elif ok:
                    with contextlib.suppress(ParseError):
                        results[j] = parse(j, text)
            if not ok:
                failed.append(i)
        pending = failed
    return results, attempts
