"""The LLM judges as named metrics for `manage.py score` (metrics registry)."""
from evaluation.vocabulary import DEFAULT_MODEL
from models_runtime.metrics.registry import register_metric


def _backend(model, device):
    from models_runtime.backends.registry import get_backend

    return get_backend(model or DEFAULT_MODEL, device=device)


@register_metric("gemba")
def gemba_metric(records, *, model=None, device=None):
    from .gemba import gemba_scores

    return gemba_scores(records, _backend(model, device))


@register_metric("geval")
def geval_metric(records, *, model=None, device=None):
    from models_runtime.metrics.registry import Scores

    from .geval import geval_details

    details = geval_details(records, _backend(model, device))
    return Scores([d["score"] for d in details],
                  [{"samples": d["parsed"] + d["dropped"], "unparsed_samples": d["dropped"]} for d in details])


@register_metric("geval_prob")
def geval_prob_metric(records, *, model=None, device=None):
    from .geval_prob import geval_prob_scores

    return geval_prob_scores(records, _backend(model, device))


@register_metric("essay_quality")
def essay_quality_metric(records, *, model=None, device=None):
    from .essay import essay_scores

    return essay_scores(records, _backend(model, device))


@register_metric("expert")
def expert_metric(records, *, model=None, device=None):
    from .expert import explain

    return [e["score"] for e in explain(records, _backend(model, device))]
