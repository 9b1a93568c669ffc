"""Automatic metrics by name.

A metric is a function `fn(records, *, model=None, device=None) -> list[float | None]`;
each record is {"input", "output", "reference"} (plus optional extra keys), one score per
record, higher = better, None = could not be computed (stored as an empty value).
Register with `@register_metric("name")`. Judges (gemba, geval, expert) register from
models_runtime.judges; the classic ones from models_runtime.metrics.classic.
"""
import importlib
from typing import Any

_METRICS: dict[Any, Any] = {}
# Modules whose import registers metrics; imported lazily on first lookup.
METRIC_MODULES = ["models_runtime.metrics.classic", "models_runtime.metrics.lamp", "models_runtime.judges"]


class Scores(list):
    """A metric's scores with what it dropped on the way, per record (`samples`,
    `unparsed_samples`: G-Eval averages the parsable ones of its samples): the score job
    sums them into its result, so a mean over 3 of 20 samples is never hidden."""

    def __init__(self, scores, notes: list[dict]):
        super().__init__(scores)
        self.notes = notes


class UnknownMetric(KeyError):
    def __str__(self):
        return self.args[0]


def register_metric(name, model_kind="llm", scope="record"):
    """`model_kind`: what the `model` argument names: "llm" (a HUMEVAL_MODELS name, the
    default) or "encoder" (a sentence-transformers directory). `scope`: "record" (the
    default: `fn(records, ...)` as above) or "study": a judge that needs the whole study
    (e.g. its annotators' earlier judgments), called once after the per-item metrics as
    `fn(slug, *, model=None, device=None, options=None) -> summary`; it stores its own
    predictions (through annotate.services). A judge may set `fn.refuses(study_info)` ->
    a reason it cannot score that study (checked when the score job is made), or None."""
    def decorator(fn):
        fn.model_kind = model_kind
        fn.scope = scope
        _METRICS[name] = fn
        return fn
    return decorator


def _load_modules():
    for module in METRIC_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module and not module.startswith(str(exc.name)):
                raise


# Computed by the score job over a whole study, not a registered per-record function.
STUDY_METRIC_NAMES = ("egises_jsd",)


def get_metric(name):
    if name not in _METRICS:
        _load_modules()
    if name not in _METRICS:
        from ..plan_support.suggest import did_you_mean

        known = sorted(set(available_metrics()) | set(STUDY_METRIC_NAMES))
        raise UnknownMetric(f"unknown metric {name!r}{did_you_mean(name, known)} (known: {', '.join(known)})")
    return _METRICS[name]


def available_metrics():
    _load_modules()
    return sorted(_METRICS)
