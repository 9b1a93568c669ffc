"""Backend base that answers from the generation cache first and generates only misses."""
from ..step import advance
from .base import Backend, Generation, SamplingParams
from .cache import cache_key


class CachingBackend(Backend):
    """Subclasses set `model_id` (what the cache key names) and implement
    `_generate_uncached(prompts, params) -> [[Generation] * n]`."""

    model_id = "model"

    def __init__(self, cache=None):
        super().__init__()
        self.cache = cache

    def _generate(self, prompts: list, params: SamplingParams) -> list:
        if self.cache is None:
            return self._generate_uncached(prompts, params)
        keys = [cache_key(self.model_id, p, params.key()) for p in prompts]
        hits = self.cache.get_many(keys)
        results: list[list[Generation] | None] = [None] * len(prompts)
        missing = []
        for i, key in enumerate(keys):
            if key in hits:
                texts, tokens_in, tokens_out, _seconds = hits[key]
                results[i] = [Generation(text=t, tokens_in=tokens_in, tokens_out=o, seconds=0.0, cached=True)
                              for t, o in zip(texts, tokens_out)]
            else:
                missing.append(i)
        # Identical prompts in one batch are generated once.
        unique = list(dict.fromkeys(keys[i] for i in missing))
        first_index: dict[str, int] = {}
        for i in missing:
            first_index.setdefault(keys[i], i)
        advance(len(prompts) - len(unique))  # cache hits and repeats cost nothing
        if unique:
            fresh = self._generate_uncached([prompts[first_index[k]] for k in unique], params)
            by_key = dict(zip(unique, fresh))
            self.cache.put_many(  # never an empty answer: a re-run asks again (a server's hiccup is not kept)
                (k, self.model_id, [g.text for g in gens], gens[0].tokens_in if gens else 0,
                 [g.tokens_out for g in gens], [g.seconds for g in gens], prompts[first_index[k]])
                for k, gens in by_key.items() if gens and all(g.text.strip() for g in gens))
            for i in missing:
                gens = by_key[keys[i]]
                if i == first_index[keys[i]]:
                    results[i] = gens
                else:
                    results[i] = [Generation(g.text, g.tokens_in, g.tokens_out, 0.0, True) for g in gens]
        return results

    def _generate_uncached(self, prompts: list, params: SamplingParams) -> list:
        raise NotImplementedError
