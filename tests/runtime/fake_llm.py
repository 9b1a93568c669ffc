"""A small OpenAI-compatible server for the pipeline tests: it answers each chat prompt
with `answer(prompt)` (default: a short title made from the prompt's last words, so two
systems with different prompts answer differently) and records every prompt it was sent,
so a test can count what was generated. `script[prompt substring]` is a list of answers
given first (an empty answer, say), `html` makes it answer an HTML page."""
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


def default_answer(prompt: str) -> str:
    words = re.findall(r"\w+", prompt)
    return f"Title: {' '.join(words[-3:])} {len(prompt) % 97}\nmore text"


class FakeLLM:
    def __init__(self, answer=default_answer):
        self.answer, self.script, self.html = answer, {}, False
        self.prompts: list[str] = []
        self.lock = threading.Lock()
        self.on_request = None  # called with the prompt before answering
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                with fake.lock:
                    fake.prompts.append(prompt)
                    scripted = next((k for k in fake.script if k in prompt and fake.script[k]), None)
                    text = fake.script[scripted].pop(0) if scripted else None
                if fake.on_request:
                    fake.on_request(prompt)
                if fake.html:
                    return self._send(200, b"<!DOCTYPE html><html><body>Welcome to nginx</body></html>", "text/html")
                text = fake.answer(prompt) if text is None else text
                data = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())}}
                self._send(200, json.dumps(data).encode(), "application/json")

            def _send(self, code, data, kind):
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def models_json(self, name="fake"):
        return json.dumps({name: {"backend": "openai", "base_url": self.url, "model": "fake-model", "max_retries": 0,
                                  "max_concurrency": 4, "timeout_seconds": 10}})

    def count(self, text: str) -> int:
        """How many prompts containing `text` the server was sent."""
        return sum(text in p for p in self.prompts)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_llm(settings, tmp_path):
    """The fake server as model `fake`, a fresh generation cache, no broker."""
    from models_runtime.backends import registry

    server = FakeLLM()
    settings.HUMEVAL_MODELS_JSON = server.models_json()
    settings.HUMEVAL_GENERATION_CACHE = str(tmp_path / "generations.sqlite3")
    settings.HUMEVAL_PIPELINE_DIR = str(tmp_path / "work")
    settings.CELERY_BROKER_URL = ""
    registry.clear()
    yield server
    registry.clear()
    server.close()
