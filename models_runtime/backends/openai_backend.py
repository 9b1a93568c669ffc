"""Any OpenAI-compatible HTTP server (vLLM, TGI, llama.cpp server, a hosted API).

Prompts of a batch are sent concurrently (a thread pool of `max_concurrency`); transient
failures (connection errors, timeouts, 408/409/429/5xx) are retried with exponential
backoff, honouring Retry-After. Chat prompts go to /chat/completions; with
`"endpoint": "completions"` plain strings go to /completions.
"""
import contextlib
import os
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from ..step import advance
from .base import Generation, SamplingParams
from .cached import CachingBackend
from .config import ModelNotAvailable

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIError(ModelNotAvailable):
    """The server refused a request for a reason retrying will not fix (a job fails with
    this message, no traceback: it is the server's or the configuration's, not a bug), or
    retries ran out (then `transient` is True: the job runner retries the chunk later,
    job_support.kinds.is_transient, and a re-run resumes)."""

    def __init__(self, message, transient=False):
        super().__init__(message)
        self.transient = transient


class OpenAIBackend(CachingBackend):
    def __init__(self, name, spec, cache=None, transport=None):
        super().__init__(cache=cache)
        self.name = name
        self.base_url = (spec.get("base_url") or "").rstrip("/")
        self.model = spec.get("model") or name
        if not self.base_url:
            raise ModelNotAvailable(f"model {name!r} has no base_url: set HUMEVAL_MODELS[{name!r}]['base_url']")
        self.model_id = f"openai:{self.base_url}:{self.model}"
        self.endpoint = spec.get("endpoint", "chat")
        self.max_concurrency = int(spec.get("max_concurrency", 8))
        self.max_retries = int(spec.get("max_retries", 5))
        self.backoff = float(spec.get("backoff_seconds", 0.5))
        self.sample_requests = spec.get("max_sample_requests")  # requests to fill n samples (default n)
        key = os.environ.get(spec["api_key_env"], "") if spec.get("api_key_env") else spec.get("api_key", "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.Client(base_url=self.base_url, headers=headers, transport=transport,
                                   timeout=httpx.Timeout(float(spec.get("timeout_seconds", 120)), connect=10.0))

    def _generate_uncached(self, prompts: list, params: SamplingParams) -> list:
        results = []
        if len(prompts) <= 1 or self.max_concurrency <= 1:
            for p in prompts:
                results.append(self._one(p, params))
                advance()
            return results
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(prompts))) as pool:
            for gens in pool.map(lambda p: self._one(p, params), prompts):  # in order, as they come back
                results.append(gens)
                advance()
        return results

    def _payload(self, prompt, params):
        body = {"model": self.model, "max_tokens": params.max_new_tokens, "temperature": params.temperature,
                "top_p": params.top_p, "n": params.n, "seed": params.seed}
        if params.stop:  # the server stops early too (OpenAI takes at most 4; Backend.generate cuts at all)
            body["stop"] = list(params.stop)[:4]
        if self.endpoint == "completions" and isinstance(prompt, str):
            return "/completions", dict(body, prompt=prompt)
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        return "/chat/completions", dict(body, messages=messages)

    def _one(self, prompt, params):
        """The n samples of one prompt. A server may return fewer choices than `n` (some
        ignore it and answer one): the rest are asked for again (seed moved on by the
        samples already had, so a seeded server does not repeat them), at most
        `max_sample_requests` requests (default n); short of n after that, an error, never
        fewer samples (G-Eval must not average 1 of 20 and call it 20)."""
        texts, tokens_in, tokens_out, requests = [], 0, 0, 0
        limit = int(self.sample_requests or params.n)
        started = time.perf_counter()
        while len(texts) < params.n:
            if requests == limit:
                raise OpenAIError(f"{self.name}: asked for {params.n} samples, the server returned {len(texts)} in "
                                  f"{requests} requests (does it ignore `n`? raise max_sample_requests)")
            wanted = params.n - len(texts)
            path, body = self._payload(prompt, params)
            body.update(n=wanted, seed=params.seed + len(texts))
            data = self._post(path, body)
            requests += 1
            usage = data.get("usage") or {}
            choices = sorted(data.get("choices") or [], key=lambda c: c.get("index", 0))[:wanted]
            if not choices:
                raise OpenAIError(f"model {self.name}: {self.base_url}{path} answered without choices: is it an "
                                  "OpenAI-compatible server? (HUMEVAL_MODELS base_url)")
            texts += [(c.get("message") or {}).get("content") if "message" in c else c.get("text") for c in choices]
            tokens_in = int(usage.get("prompt_tokens", 0))
            tokens_out += int(usage.get("completion_tokens", 0))
        seconds = (time.perf_counter() - started) / max(1, params.n)
        return [Generation(text=(t or "").strip(), tokens_in=tokens_in, tokens_out=tokens_out // len(texts),
                           seconds=seconds) for t in texts]

    def _post(self, path, body):
        last = None
        for attempt in range(self.max_retries + 1):
            wait = self.backoff * (2 ** attempt)
            try:
                response = self.client.post(path, json=body)
            except httpx.TransportError as exc:  # connection refused, reset, timeouts
                last = f"{exc.__class__.__name__}: {exc}"
            else:
                if response.status_code < 400:
                    return self._json(response, path)
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in RETRY_STATUS:
                    raise OpenAIError(f"model {self.name}: {self.base_url}{path} answered {last}")
                retry_after = response.headers.get("retry-after")
                if retry_after:
                    with contextlib.suppress(ValueError):
                        wait = max(wait, float(retry_after))
            if attempt < self.max_retries:
                time.sleep(min(wait, 30.0))
        raise OpenAIError(f"model {self.name}: {self.base_url}{path} gave up after {self.max_retries + 1} attempts "
                          f"({last}); is the server up? (HUMEVAL_MODELS base_url)", transient=True)

    def _json(self, response, path):
        """The answer's JSON, or an error naming the model, the URL and what came back (an
        HTML page from a proxy or a wrong base_url, not a JSON decode error)."""
        try:
            data = response.json()
        except ValueError:
            kind = response.headers.get("content-type", "no content type").split(";")[0]
            start = " ".join(response.text[:80].split())
            raise OpenAIError(f"model {self.name}: {self.base_url}{path} answered HTTP {response.status_code} with "
                              f"{kind}, not JSON ({start!r}...): does base_url point at the server's OpenAI API "
                              "(usually ending in /v1)? Fix HUMEVAL_MODELS") from None
        if not isinstance(data, dict):
            raise OpenAIError(f"model {self.name}: {self.base_url}{path} answered JSON that is not an object")
        return data
