"""Local causal LMs through Hugging Face transformers: a directory, a GGUF file inside a
directory (the embedded SmolLM2), or an id already in the local cache. Offline only.

Batched generation through decoding.decode (shared prompt prefix computed once, finished
rows retired), or transformers' `generate` on a left-padded batch when a model's spec says
{"decoding": "generate"}; the tokenizer's chat template is applied when it has one.
"""
import os
import threading
import time
from typing import Any

from ..step import advance
from .base import Generation, SamplingParams
from .cached import CachingBackend
from .config import ModelNotAvailable, resolve_device
from .decoding import decode


def check_model_path(spec, name):
    """The model's files exist (cheap, no loading): a wrong path fails when the backend is
    created, not at the first cache miss. -> (path, from_pretrained kwargs)."""
    path = spec.get("path") or spec.get("id")
    if not path:
        raise ModelNotAvailable(f"model {name!r} has no path: set HUMEVAL_MODELS[{name!r}]['path']")
    kwargs = {"local_files_only": True}
    if spec.get("gguf_file"):
        kwargs["gguf_file"] = spec["gguf_file"]
        if not os.path.isfile(os.path.join(path, spec["gguf_file"])):
            raise ModelNotAvailable(
                f"model {name!r}: {os.path.join(path, spec['gguf_file'])} does not exist: fix HUMEVAL_MODELS[{name!r}]")
    elif os.path.sep in path and not os.path.isdir(path):
        raise ModelNotAvailable(f"model {name!r}: directory {path} does not exist: "
                                f"fix HUMEVAL_MODELS[{name!r}]['path']")
    return path, kwargs


def _load(spec, name):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path, kwargs = check_model_path(spec, name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except OSError as exc:
        raise ModelNotAvailable(
            f"model {name!r} ({path}) is not on disk and downloads are off: "
            f"fix HUMEVAL_MODELS[{name!r}]['path'] ({exc.__class__.__name__})") from exc
    return tokenizer, model


_loaded: dict[Any, Any] = {}
_load_lock = threading.Lock()


def apply_torch_threads(torch, threads=None):
    """Pin torch's CPU threads to settings.HUMEVAL_TORCH_THREADS (0 or unset: torch's
    default). Returns the thread count torch now uses."""
    from django.conf import settings

    threads = int(threads if threads is not None else getattr(settings, "HUMEVAL_TORCH_THREADS", 0) or 0)
    if threads > 0 and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def load_model(spec, name, device):
    """(tokenizer, model) on `device`, loaded once per process whatever the cache file."""
    key = (spec.get("path") or spec.get("id"), spec.get("gguf_file"), device)
    with _load_lock:
        if key not in _loaded:
            tokenizer, model = _load(spec, name)
            tokenizer.padding_side = "left"
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            model.to(device)
            model.eval()
            _loaded[key] = (tokenizer, model)
        return _loaded[key]


def end_of_sequence_ids(tokenizer, model):
    """Token ids that end an answer: the tokenizer's EOS and the model's generation config."""
    ids = {tokenizer.eos_token_id}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids.update(configured if isinstance(configured, (list, tuple)) else [configured])
    return {i for i in ids if i is not None}


class TransformersBackend(CachingBackend):
    def __init__(self, name, spec, device=None, cache=None):
        super().__init__(cache=cache)
        import torch

        self.name = name
        self.model_id = "transformers:" + str(spec.get("path") or spec.get("id")) + (
            "/" + spec["gguf_file"] if spec.get("gguf_file") else "")
        self.device = resolve_device(device)
        self.batch_size = int(spec.get("batch_size", 8))
        self.threads = apply_torch_threads(torch, spec.get("threads"))
        self.decoding = spec.get("decoding", "shared-prefix")
        if self.decoding not in ("shared-prefix", "generate"):
            raise ModelNotAvailable(f"model {name!r}: decoding must be 'shared-prefix' or 'generate', "
                                    f"not {self.decoding!r}")
        self.spec = spec
        check_model_path(spec, name)
        self._weights = None  # (tokenizer, model), loaded on the first cache miss
        self._torch = torch

    def _loaded(self):
        """Load the weights only when something must really be generated: a fully
        cached run never pays for loading the model."""
        if self._weights is None:
            tokenizer, model = load_model(self.spec, self.name, self.device)
            self._weights = (tokenizer, model, end_of_sequence_ids(tokenizer, model))
        return self._weights

    @property
    def tokenizer(self):
        return self._loaded()[0]

    @property
    def model(self):
        return self._loaded()[1]

    @property
    def eos_ids(self):
        return self._loaded()[2]

    def render(self, prompt):
        """Prompt -> the exact text fed to the model (chat template when present)."""
        if self.tokenizer.chat_template:
            messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        if isinstance(prompt, str):
            return prompt
        return "\n\n".join(m["content"] for m in prompt)

    def next_token_probs(self, prompts, tokens):
        """-> per prompt, the next-token probabilities of `tokens` (single-token strings)
        right after the rendered prompt, renormalised over `tokens`: one unpadded forward
        pass per prompt (no padding, so no position-id subtleties; never cached)."""
        torch = self._torch
        tokenizer, model = self.tokenizer, self.model
        ids = [tokenizer.convert_tokens_to_ids(t) for t in tokens]
        if any(i is None or i == tokenizer.unk_token_id for i in ids):
            raise ModelNotAvailable(f"model {self.name!r}: {tokens} are not single tokens of its vocabulary")
        out = []
        for prompt in prompts:
            row = tokenizer(self.render(prompt), add_special_tokens=not tokenizer.chat_template,
                            return_tensors="pt")["input_ids"].to(self.device)
            with torch.inference_mode():
                logits = model(input_ids=row).logits[0, -1, ids].double()
            out.append(torch.softmax(logits, dim=0).tolist())
            advance(1)
        return out

    def _generate_uncached(self, prompts: list, params: SamplingParams) -> list:
        """Prompts of similar length share a batch (sorted by length, answers put back in
        order), so short prompts are not padded to the longest one of the whole call."""
        texts = [self.render(p) for p in prompts]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        results = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            for i, gens in zip(chunk, self._generate_batch([texts[i] for i in chunk], params)):
                results[i] = gens
            advance(len(chunk))
        return results

    def _generate_batch(self, texts, params):
        if self.decoding == "generate":
            return self._generate_batch_hf(texts, params)
        rows = [self.tokenizer(t, add_special_tokens=not self.tokenizer.chat_template)["input_ids"] for t in texts]
        started = time.perf_counter()
        decoded = decode(self.model, rows, params.max_new_tokens, self.eos_ids, self.tokenizer.pad_token_id,
                         samples=params.n, temperature=params.temperature, top_p=params.top_p,
                         seed=params.seed, device=self.device)
        seconds = (time.perf_counter() - started) / max(1, len(texts) * params.n)
        return [[Generation(text=self.tokenizer.decode(d.tokens, skip_special_tokens=True).strip(),
                            tokens_in=d.tokens_in, tokens_out=len(d.tokens), seconds=seconds) for d in gens]
                for gens in decoded]

    def _generate_batch_hf(self, texts, params):
        """transformers' own `generate` on a left-padded batch (HUMEVAL_MODELS
        {"decoding": "generate"}): the reference the shared-prefix decoder is checked against."""
        torch = self._torch
        enc = self.tokenizer(texts, return_tensors="pt", padding=True,
                             add_special_tokens=not self.tokenizer.chat_template).to(self.device)
        sample = params.temperature > 0
        kwargs = {"max_new_tokens": params.max_new_tokens, "do_sample": sample,
                  "num_return_sequences": params.n, "pad_token_id": self.tokenizer.pad_token_id}
        if sample:
            kwargs.update(temperature=params.temperature, top_p=params.top_p)
            torch.manual_seed(params.seed)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        started = time.perf_counter()
        with torch.inference_mode():
            out = self.model.generate(**enc, **kwargs)
        seconds = (time.perf_counter() - started) / max(1, len(texts) * params.n)
        width = enc["input_ids"].shape[1]
        new = out[:, width:]
        tokens_in = enc["attention_mask"].sum(dim=1).tolist()
        stop = self.eos_ids | {self.tokenizer.pad_token_id}  # generate pads rows that ended early
        results = []
        for i in range(len(texts)):
            gens = []
            for j in range(params.n):
                row = new[i * params.n + j].tolist()
                length = next((pos for pos, tok in enumerate(row) if tok in stop), len(row))
                text = self.tokenizer.decode(row[:length], skip_special_tokens=True).strip()
                gens.append(Generation(text=text, tokens_in=int(tokens_in[i]), tokens_out=length, seconds=seconds))
            results.append(gens)
        return results
