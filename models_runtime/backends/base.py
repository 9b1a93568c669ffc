"""The one small interface every generation backend implements.

A prompt is either a plain string or a list of chat messages ({"role", "content"}).
`generate` takes a whole batch of prompts at once (backends batch or run them
concurrently) and returns, per prompt, `params.n` generations.
"""
import re
from dataclasses import dataclass, replace

Message = dict
Prompt = str | list


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 256
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    n: int = 1  # samples per prompt (G-Eval draws 20)
    seed: int = 0
    stop: tuple[str, ...] = ()  # the text is cut at the first of these strings
    postprocess: str = ""  # "", "first_line" or "title" (see POSTPROCESSORS)

    def key(self):
        """Stable description used in the generation cache key (stop and postprocess only
        when set, so the keys of earlier runs stay valid)."""
        key = {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature,
               "top_p": self.top_p, "n": self.n, "seed": self.seed}
        if self.stop:
            key["stop"] = list(self.stop)
        if self.postprocess:
            key["postprocess"] = self.postprocess
        return key


def cut_at_stop(text: str, stop) -> str:
    """`text` up to the earliest occurrence of any stop string."""
    ends = [text.find(s) for s in stop if s and s in text]
    return text[:min(ends)] if ends else text


def first_line(text: str) -> str:
    """The first non-empty line, stripped."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


_TITLE_LABEL = re.compile(r"^\**\s*(?:(?:the|a|new|suggested|possible|personali[sz]ed|generated)\s+)*"
                          r"(?:title|headline|subject)\s*\**\s*:\s*\**\s*", re.IGNORECASE)


def extract_title(text: str) -> str:
    """A title from a model's answer: its first line without `Title:` / `The Headline:`
    labels (repeated ones too), markdown bold, or surrounding quotes."""
    line = first_line(text)
    while (shorter := _TITLE_LABEL.sub("", line, count=1).strip()) != line:
        line = shorter
    line = line.strip("*").strip()
    if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'":
        line = line[1:-1].strip()
    return line


POSTPROCESSORS = {"": lambda text: text, "first_line": first_line, "title": extract_title}


def finish_text(text: str, params: "SamplingParams") -> str:
    """A raw answer after the stop strings and the postprocess of `params`."""
    return POSTPROCESSORS[params.postprocess](cut_at_stop(text, params.stop)).strip()


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
        """-> list (one per prompt) of lists of `params.n` Generation objects, their texts
        cut at `params.stop` and postprocessed (the same in every backend)."""
        if params.postprocess not in POSTPROCESSORS:
            raise ValueError(f"unknown postprocess {params.postprocess!r} (use first_line or title)")
        results = self._generate(list(prompts), params)
        if params.stop or params.postprocess:
            results = [[replace(g, text=finish_text(g.text, params)) for g in gens] for gens in results]
        for per_prompt in results:
            for gen in per_prompt:
                self.stats.add(gen)
        return results

    def _generate(self, prompts: list, params: SamplingParams) -> list:
        raise NotImplementedError
