"""The two backends on the real tiny model: hf in process, openai against real HTTP
servers on 127.0.0.1 (the project's own OpenAI-compatible server, and small stdlib
servers that fail on purpose)."""
from __future__ import annotations

import base64
import io
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

from mera_multi_hf.errors import MeraError
from mera_multi_hf.runner import run_evaluation
from mera_multi_hf.runner.backends.hf import HFBackend
from mera_multi_hf.runner.backends.openai import OpenAIBackend
from mera_multi_hf.media import Media, limit_pixels
from mera_multi_hf.prompts import content_parts, plain_prompt
from mera_multi_hf.runner.chat import openai_messages, prompt_from_openai
from mera_multi_hf.runner.request import Request
from mera_multi_hf.runner.serve import make_server


@pytest.fixture(scope="module")
def tiny_backend():
    backend = HFBackend(None, batch_size=4)
    backend.load()
    return backend


@pytest.fixture
def served(tiny_backend):
    """The project's OpenAI-compatible server over the tiny model, on a free port."""
    server = make_server(tiny_backend, port=0, model_name="tiny-served")
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


def _png(width=40, height=20, color=(200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, format="PNG")
    return buf.getvalue()


def _request(prompt="<image>\nЧто на картинке? Ответь A или B.", data=None, max_new=8):
    data = data or _png()
    return Request(task="t", split="test", id=1, prompt=prompt,
                   media=[Media(kind="image", sha256="x", data=data)], max_new_tokens=max_new)


def test_content_parts_follow_placeholder_order():
    parts = content_parts("Первое <image_1> между\n<image_2>\nконец")
    # verbatim, as the official harness interleaves: spaces and line breaks are kept
    assert parts == [{"type": "text", "text": "Первое "}, {"type": "image"},
                     {"type": "text", "text": " между\n"}, {"type": "image"},
                     {"type": "text", "text": "\nконец"}]
    assert content_parts("<audio>\nВопрос?") == [{"type": "audio"}, {"type": "text", "text": "\nВопрос?"}]
    assert content_parts("<image><image>") == [{"type": "image"}, {"type": "image"}]
    assert plain_prompt("a <image> b <image_2>", "<IMG>") == "a <IMG> b <IMG>"


def test_openai_messages_roundtrip_through_server_parsing():
    png = _png()
    request = _request(prompt="Вот <image> и вопрос", data=png)
    content = openai_messages(request)[0]["content"]
    assert [p["type"] for p in content] == ["text", "image_url", "text"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    prompt, media = prompt_from_openai(content)
    assert content_parts(prompt) == content_parts(request.prompt)
    assert media == [("image", png)]


def test_pixel_limit_keeps_aspect_ratio():
    img = Image.new("RGB", (400, 100))
    small = limit_pixels(img, 10_000)
    assert small.width * small.height <= 10_000
    assert abs(small.width / small.height - 4) < 0.1
    assert limit_pixels(img, 10**6) is img
    # the data URI of a big picture is downscaled too (what the openai backend sends)
    uri = Media(kind="image", sha256="x", data=_png(400, 100)).data_uri(max_pixels=10_000)
    sent = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
    assert sent.width * sent.height <= 10_000 and sent.width > sent.height


def test_hf_backend_chat_template_and_plain_mode(tiny_backend):
    rendered = tiny_backend.render(_request())
    assert rendered.startswith("<|user|>\n<image>\n") and rendered.endswith("<|assistant|>\n")
    plain = HFBackend(None, prompt_mode="plain")
    plain.load()
    assert plain.render(_request()) == "<image>\nЧто на картинке? Ответь A или B."
    out = plain.generate([_request(), _request(prompt="<image> Вопрос: да или нет?")])
    assert len(out) == 2 and all(isinstance(o, str) for o in out)


def test_hf_backend_batch_invariance(tiny_backend):
    """Left padding + attention mask: answers do not depend on the batch they are in."""
    prompts = [f"<image>\nВопрос {'очень ' * k}длинный номер {k}? Ответь A или B." for k in range(6)]
    colors = [(30 * k, 200 - 20 * k, 90) for k in range(6)]
    requests = [_request(prompt=p, data=_png(color=c), max_new=12) for p, c in zip(prompts, colors)]
    alone = [tiny_backend.generate([r])[0] for r in requests]
    together = tiny_backend.generate(requests)
    assert together == alone
    assert len(set(alone)) > 1  # the answers depend on the input (else this proves nothing)


def test_missing_model_path_is_a_clear_error(tmp_path):
    with pytest.raises(MeraError, match="not a model folder"):
        HFBackend(str(tmp_path / "no-such-model"))


def test_openai_backend_through_served_tiny_model_matches_hf(served, tmp_path):
    """Same model behind a real HTTP server: the same greedy answers as in process."""
    local = run_evaluation(None, "ruhhh_image", data="sample", limit=10, batch_size=4,
                           output_dir=tmp_path / "hf", progress=False)
    remote = run_evaluation("tiny-served", "ruhhh_image", data="sample", limit=10,
                            backend="openai", base_url=served, concurrency=3,
                            output_dir=tmp_path / "openai", progress=False, api_key="sk-secret-123")

    def answers(result):
        path = result["files"]["samples"][0]
        return {r["id"]: r["generation"] for r in map(json.loads, path.read_text().splitlines())}

    assert answers(remote) == answers(local)
    assert len(answers(remote)) == 10
    assert remote["run"]["backend"] == "openai"
    assert remote["tasks"][0]["metrics"] == local["tasks"][0]["metrics"]
    for path in (tmp_path / "openai").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".yaml"):
            assert "sk-secret-123" not in path.read_text(encoding="utf-8")


class _Flaky(BaseHTTPRequestHandler):
    """Fails the first `fail` requests with 503, then answers; records what it got."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with server.lock:
            server.calls += 1
            server.auth.append(self.headers.get("Authorization"))
            server.bodies.append(body)
            fail = server.calls <= server.fail
        if fail:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if server.status != 200:
            payload = json.dumps({"error": {"message": "model 'x' does not exist"}}).encode()
            self.send_response(server.status)
        else:
            payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": "B"}}]}).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def flaky():
    def start(fail=0, status=200):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
        server.daemon_threads = True
        server.fail, server.status, server.calls = fail, status, 0
        server.auth, server.bodies, server.lock = [], [], threading.Lock()
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        started.append(server)
        return server

    started = []
    yield start
    for server in started:
        server.shutdown()
        server.server_close()


def test_openai_retries_with_backoff_then_succeeds(flaky):
    server = flaky(fail=2)
    backend = OpenAIBackend("m", f"http://127.0.0.1:{server.server_port}/v1", api_key="k-1",
                            concurrency=1, max_retries=3, backoff=0.01)
    assert backend.generate([_request()]) == ["B"]
    backend.close()
    assert server.calls == 3
    assert server.auth == ["Bearer k-1"] * 3
    body = server.bodies[-1]
    assert body["model"] == "m" and body["max_tokens"] == 8 and body["temperature"] == 0
    assert body["messages"][0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")


def test_openai_gives_up_with_a_clear_error(flaky):
    server = flaky(fail=100)
    backend = OpenAIBackend("m", f"http://127.0.0.1:{server.server_port}/v1", max_retries=2,
                            backoff=0.01)
    with pytest.raises(MeraError, match="after 3 tries .*HTTP 503"):
        backend.generate([_request()])
    backend.close()
    assert server.calls == 3


def test_openai_client_error_is_not_retried(flaky):
    server = flaky(status=404)
    backend = OpenAIBackend("x", f"http://127.0.0.1:{server.server_port}/v1", backoff=0.01)
    with pytest.raises(MeraError, match="HTTP 404 model 'x' does not exist"):
        backend.generate([_request()])
    backend.close()
    assert server.calls == 1


def test_unreachable_server_cli_prints_one_line(tmp_path, capsys):
    from mera_multi_hf.cli import main

    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["evaluate", "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}/v1",
                 "--model", "m", "--data", "sample", "--limit", "2", "--max-retries", "1",
                 "--output-dir", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert "unreachable" in err and f"127.0.0.1:{port}" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_text_only_model_uses_causal_lm_and_drops_media(tmp_path):
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from mera_multi_hf.tiny_model import tiny_model_path

    tok = AutoTokenizer.from_pretrained(tiny_model_path())
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                         bos_token_id=tok.bos_token_id)
    LlamaForCausalLM(config).save_pretrained(tmp_path / "lm")
    tok.save_pretrained(tmp_path / "lm")
    backend = HFBackend(str(tmp_path / "lm"), max_pixels=None)
    backend.load()
    assert backend.text_only and type(backend.model).__name__ == "LlamaForCausalLM"
    assert backend.render(_request()) == "<|user|>\n\nЧто на картинке? Ответь A или B.\n<|assistant|>\n"
    with pytest.warns(UserWarning, match="text-only"):
        out = backend.generate([_request(), _request(prompt="<image> Да?")])
    assert len(out) == 2
    assert backend.info()["revision"].startswith("local-")
