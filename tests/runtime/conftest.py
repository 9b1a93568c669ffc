"""Fixtures of the runtime tests."""
from tests.runtime.fake_llm import fake_llm  # noqa: F401 - an OpenAI-compatible test server as model `fake`
