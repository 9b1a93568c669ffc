"""LLM judges of runtime.md: ExPerT, G-Eval, GEMBA, the PerSE-style evaluator and the
robustness probes. Every judge talks to a `Backend` and sends all prompts of a step in
one batched call."""
from . import metrics, perse_scalar  # noqa: E402,F401  (registers gemba, geval, expert; perse_scalar)
