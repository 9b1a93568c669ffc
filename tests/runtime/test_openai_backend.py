"""The openai backend against a tiny local server speaking the OpenAI completions
protocol (/v1/completions and /v1/chat/completions): concurrency, retries with backoff,
clear errors, token accounting and the generation cache."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from models_runtime.backends.base import SamplingParams
from models_runtime.backends.cache import GenerationCache
from models_runtime.backends.openai_backend import OpenAIBackend, OpenAIError


class FakeOpenAI(BaseHTTPRequestHandler):
    """Answers "echo: <prompt>"; `fail_first[prompt]` 503s before answering; "forbidden"
    prompts get a 400. Records requests and the peak number of concurrent requests."""

    state = None

    def log_message(self, *args):
        pass

    def do_POST(self):
        s = self.state
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with s["lock"]:
            s["active"] += 1
            s["peak"] = max(s["peak"], s["active"])
            s["requests"].append((self.path, body, self.headers.get("Authorization")))
        try:
            time.sleep(s["delay"])
            prompt = body["prompt"] if self.path.endswith("/completions") and "prompt" in body \
                else body["messages"][-1]["content"]
            with s["lock"]:
                left = s["fail_first"].get(prompt, 0)
                if left:
                    s["fail_first"][prompt] = left - 1
            if left:
                return self._send(503, {"error": {"message": "overloaded"}}, {"Retry-After": "0"})
            if prompt == "forbidden":
                return self._send(400, {"error": {"message": "bad prompt"}})
            texts = [f"echo: {prompt} #{i}" for i in range(body.get("n", 1))]
            if "messages" in body:
                choices = [{"index": i, "message": {"role": "assistant", "content": t}} for i, t in enumerate(texts)]
            else:
                choices = [{"index": i, "text": t} for i, t in enumerate(texts)]
            usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": 3 * len(texts)}
            self._send(200, {"id": "x", "object": "chat.completion", "choices": choices, "usage": usage})
        finally:
            with s["lock"]:
                s["active"] -= 1

    def _send(self, code, payload, headers=None):
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    state = {"lock": threading.Lock(), "active": 0, "peak": 0, "requests": [], "fail_first": {}, "delay": 0.0}
    handler = type("Handler", (FakeOpenAI,), {"state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield state
    httpd.shutdown()
    httpd.server_close()


def backend(server, tmp_path=None, **spec):
    spec = {"backend": "openai", "base_url": server["url"], "model": "tiny", "backoff_seconds": 0.01, **spec}
    cache = GenerationCache(tmp_path / "cache.sqlite3") if tmp_path else None
    return OpenAIBackend("vllm-test", spec, cache=cache)


def test_chat_requests_run_concurrently_and_keep_order(server, monkeypatch):
    monkeypatch.setenv("TEST_OPENAI_KEY", "sk-test")
    server["delay"] = 0.3
    b = backend(server, max_concurrency=4, api_key_env="TEST_OPENAI_KEY")
    prompts = [f"p{i}" for i in range(8)]
    started = time.perf_counter()
    out = b.generate(prompts, SamplingParams(max_new_tokens=5))
    elapsed = time.perf_counter() - started
    assert [g[0].text for g in out] == [f"echo: p{i} #0" for i in range(8)]
    assert server["peak"] == 4
    assert elapsed < 8 * 0.3  # sequential would take 2.4 s
    path, body, auth = server["requests"][0]
    assert path == "/v1/chat/completions" and auth == "Bearer sk-test"
    assert body["messages"] == [{"role": "user", "content": body["messages"][0]["content"]}]
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("tiny", 5, 0.0)
    assert (b.stats.calls, b.stats.tokens_in, b.stats.tokens_out) == (8, 8, 24)


def test_completions_endpoint_and_n_samples(server):
    b = backend(server, endpoint="completions")
    out = b.generate(["hello there"], SamplingParams(n=3, temperature=1.0))
    assert [g.text for g in out[0]] == ["echo: hello there #0", "echo: hello there #1", "echo: hello there #2"]
    assert [(g.tokens_in, g.tokens_out) for g in out[0]] == [(2, 3)] * 3
    assert server["requests"][0][0] == "/v1/completions" and server["requests"][0][1]["n"] == 3


def test_transient_errors_are_retried(server):
    server["fail_first"] = {"flaky": 2}
    out = backend(server, max_retries=3).generate(["flaky"])
    assert out[0][0].text == "echo: flaky #0"
    assert len(server["requests"]) == 3


def test_retries_run_out_and_hard_errors_are_not_retried(server):
    server["fail_first"] = {"down": 10}
    with pytest.raises(OpenAIError, match=r"gave up after 3 attempts \(HTTP 503"):
        backend(server, max_retries=2).generate(["down"])
    server["requests"].clear()
    with pytest.raises(OpenAIError, match="HTTP 400"):
        backend(server).generate(["forbidden"])
    assert len(server["requests"]) == 1


def test_connection_refused_is_retried_then_reported():
    b = OpenAIBackend("gone", {"base_url": "http://127.0.0.1:9/v1", "max_retries": 1, "backoff_seconds": 0.01})
    with pytest.raises(OpenAIError, match="gave up after 2 attempts .*ConnectError"):
        b.generate(["x"])


def test_cache_answers_the_second_run(server, tmp_path):
    b = backend(server, tmp_path)
    first = b.generate(["a", "b", "a"])
    assert len(server["requests"]) == 2  # the repeated prompt is asked once
    assert [g[0].cached for g in first] == [False, False, True]
    again = backend(server, tmp_path).generate(["b", "a"])  # a new process would see the same file
    assert [g[0].text for g in again] == ["echo: b #0", "echo: a #0"] and all(g[0].cached for g in again)
    assert len(server["requests"]) == 2
    backend(server, tmp_path).generate(["a"], SamplingParams(max_new_tokens=7))  # other params: a miss
    assert len(server["requests"]) == 3


@pytest.fixture
def one_choice_server(server):
    """A server that ignores `n` and always answers one choice (llama.cpp server, some
    hosted APIs)."""
    original = FakeOpenAI.do_POST

    def do_post(self):
        length = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(length))
        asked = body["n"]
        body["n"] = 1
        data = json.dumps(body).encode()
        self.headers.replace_header("Content-Length", str(len(data)))
        import io

        self.rfile = io.BytesIO(data)
        with self.state["lock"]:
            self.state.setdefault("asked", []).append((asked, body["seed"]))
        original(self)

    server["handler_patch"] = do_post
    return server


def test_n_samples_from_a_server_that_answers_one_choice(one_choice_server, monkeypatch):
    """Issue 16 D2: n=20 against a server returning 1 choice: 20 requests (asking for the
    20, 19, ... 1 still missing, seeds 7, 8, ... 26), 20 samples; with max_sample_requests 3
    an error after exactly 3 requests instead of 3 samples passed off as 20."""
    monkeypatch.setattr(FakeOpenAI, "do_POST", one_choice_server["handler_patch"])
    out = backend(one_choice_server).generate(["judge me"], SamplingParams(n=20, temperature=1.0, seed=7))
    assert [g.text for g in out[0]] == ["echo: judge me #0"] * 20
    assert one_choice_server["asked"] == [(20 - i, 7 + i) for i in range(20)]
    assert len(one_choice_server["requests"]) == 20
    one_choice_server["asked"].clear()
    with pytest.raises(OpenAIError, match=r"^vllm-test: asked for 20 samples, the server returned 3 in 3 requests "):
        backend(one_choice_server, max_sample_requests=3).generate(["judge again"], SamplingParams(n=20, seed=1))
    assert one_choice_server["asked"] == [(20, 1), (19, 2), (18, 3)]


def test_each_answer_advances_the_running_count(server, tmp_path):
    """Issue 16 D7: progress inside a job's chunk: every answer (and every cache hit) moves
    the count the heartbeat writes to Job.step."""
    from models_runtime.step import counting, listen

    told = []
    listen(told.append)
    try:
        b = backend(server, tmp_path, max_concurrency=2)
        with counting(5, "generations") as step:
            b.generate(["a", "b", "c"])
            assert step.done == 3
            b.generate(["a", "d"])  # a from the cache, d generated
            assert step.as_json() == {"done": 5, "total": 5, "unit": "generations"}
            b.generate(["e"])  # never past the total
            assert step.done == 5
    finally:
        listen(None)
    assert told == [step, None]
    assert len(server["requests"]) == 5
