"""Backends and encoders by name, loaded once per process (and per device).

    get_backend("smollm2")          # the embedded default
    get_backend("qwen-vllm")        # a name from HUMEVAL_MODELS
    get_encoder()                   # HUMEVAL_ENCODER_PATH or the embedded MiniLM
"""
import os
import sys
import threading
from typing import Any

from django.conf import settings

from .cache import GenerationCache
from .config import EMBEDDED_LLM, ModelNotAvailable, embedded_encoder_path, model_spec, resolve_device

_lock = threading.Lock()
_backends: dict[Any, Any] = {}
_encoders: dict[Any, Any] = {}
_caches: dict[Any, Any] = {}


def generation_cache():
    """The process-wide cache at settings.HUMEVAL_GENERATION_CACHE (None if set to '')."""
    path = str(getattr(settings, "HUMEVAL_GENERATION_CACHE", "") or "")
    if not path:
        return None
    if path not in _caches:
        _caches[path] = GenerationCache(path)
    return _caches[path]


def quiet_loading(stream=None) -> bool:
    """When stderr is not a terminal (a Celery worker, a web process, a log file), silence
    the progress bars and info chatter of transformers, huggingface_hub and tqdm while models
    load: a worker's log keeps the job's own lines. -> whether it silenced them."""
    stream = stream or sys.stderr
    if getattr(stream, "isatty", lambda: False)():
        return False
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    _quiet_tqdm()
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    except ImportError:  # the model extras are not installed: nothing to silence
        pass
    return True


def _quiet_tqdm() -> None:
    """tqdm reads TQDM_DISABLE when it is imported; in a process that imported it before,
    bars made without an explicit `disable` (transformers' GGUF loader: "Converting and
    de-quantizing GGUF tensors") are turned off here."""
    import functools

    import tqdm

    if not getattr(tqdm.tqdm, "_humeval_quiet", False):
        tqdm.tqdm.__init__ = functools.partialmethod(tqdm.tqdm.__init__, disable=True)
        tqdm.tqdm._humeval_quiet = True


def get_backend(name=EMBEDDED_LLM, device=None):
    """-> Backend for model `name` (see docs/runtime.md); raises ModelNotAvailable."""
    name = name or EMBEDDED_LLM
    spec = model_spec(name)
    kind = spec.get("backend", "transformers")
    device_key = resolve_device(device) if kind == "transformers" else None
    key = (name, device_key, str(getattr(settings, "HUMEVAL_GENERATION_CACHE", "")))
    with _lock:
        if key not in _backends:
            cache = generation_cache()
            quiet_loading()
            if kind == "transformers":
                from .transformers_backend import TransformersBackend
                _backends[key] = TransformersBackend(name, spec, device=device_key, cache=cache)
            elif kind == "openai":
                from .openai_backend import OpenAIBackend
                _backends[key] = OpenAIBackend(name, spec, cache=cache)
            else:
                raise ModelNotAvailable(f"model {name!r}: unknown backend {kind!r} in HUMEVAL_MODELS "
                                        "(use transformers or openai)")
        return _backends[key]


def encoder_path(path=None):
    path = path or getattr(settings, "HUMEVAL_ENCODER_PATH", "") or embedded_encoder_path()
    if not os.path.isdir(path):
        raise ModelNotAvailable(f"encoder directory {path} does not exist: "
                                "set HUMEVAL_ENCODER_PATH to a sentence-transformers directory")
    return path


def get_encoder(path=None, device=None):
    """-> sentence_transformers.SentenceTransformer loaded from a directory (never downloaded)."""
    path = encoder_path(path)
    device = resolve_device(device)
    with _lock:
        if (path, device) not in _encoders:
            quiet_loading()
            from sentence_transformers import SentenceTransformer
            try:
                _encoders[(path, device)] = SentenceTransformer(path, device=device, local_files_only=True)
            except OSError as exc:
                raise ModelNotAvailable(f"encoder {path} cannot be loaded offline: "
                                        f"fix HUMEVAL_ENCODER_PATH ({exc})") from exc
        return _encoders[(path, device)]


def clear():
    """Forget loaded backends/encoders (tests)."""
    with _lock:
        _backends.clear()
        _encoders.clear()
        _caches.clear()
