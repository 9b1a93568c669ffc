"""The one small interface every generation backend implements.

A prompt is either a plain string or a list of chat messages ({"role", "content"}).
`generate` takes a whole batch of prompts at once (backends batch or run them
concurrently) and returns, per prompt, `params.n` generations.
"""
from dataclasses import dataclass

Message = dict
Prompt = str | list


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 256
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    n: int = 1  # samples per prompt (G-Eval draws 20)
    seed: int = 0

    def key(self):
        """Stable description used in the generation cache key."""
        return {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature,
                "top_p": self.top_p, "n": self.n, "seed": self.seed}


@dataclass
class Generation:
    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    cached: bool = False


@dataclass
class BackendStats:
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    cache_hits: int = 0

    def add(self, gen: Generation):
        self.calls += 1
        self.tokens_in += gen.tokens_in
        self.tokens_out += gen.tokens_out
        self.seconds += gen.seconds
        self.cache_hits += int(gen.cached)


class Backend:
    """Base class: subclasses implement `_generate`; `generate` adds accounting."""

    name: str = "backend"

    def __init__(self):
        self.stats = BackendStats()

    def generate(self, prompts: list, params: SamplingParams = SamplingParams()) -> list:
        """-> list (one per prompt) of lists of `params.n` Generation objects."""
        results = self._generate(list(prompts), params)
        for per_prompt in results:
            for gen in per_prompt:
                self.stats.add(gen)
        return results

    def _generate(self, prompts: list, params: SamplingParams) -> list:
        raise NotImplementedError
