"""A small OpenAI-compatible server over the hf backend (stdlib http.server).

    python -m mera_multi_hf.runner.serve --model Qwen/Qwen2.5-VL-3B-Instruct --port 8000
    mera-multi evaluate --backend openai --base-url http://127.0.0.1:8000/v1 --model <name>

Routes: ``POST /v1/chat/completions`` (text + base64 data-URI images, greedy only),
``GET /v1/models``, ``GET /health``. Requests are answered one at a time; it exists to
serve a model to the openai backend on one machine (and to test that backend), not
to replace vLLM. Without --model it serves the built-in tiny random model.
"""
from __future__ import annotations

import argparse
import hashlib
import threading
import time
import uuid

from ..errors import MeraError
from ..http_json import JsonHandler, JsonServer
from ..media import Media
from .chat import prompt_from_openai
from .request import Request


class ChatHandler(JsonHandler):
    server_version = "mera-multi-serve/1"

    def _error(self, status: int, message: str) -> None:
        self.send_json(status, {"error": {"message": message, "type": "invalid_request_error"}})

    def do_GET(self):
        if self.route in ("/v1/models", "/models"):
            self.send_json(200, {"object": "list", "data": [
                {"id": self.server.model_name, "object": "model", "owned_by": "mera-multi-hf"}]})
        elif self.route == "/health":
            self.send_json(200, {"status": "ok"})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self):
        if self.route not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route {self.path}")
            return
        try:
            request = self._request(self.read_json())
        except (ValueError, KeyError, TypeError) as err:
            self._error(400, f"bad request: {err}")
            return
        try:
            with self.server.lock:  # one generate at a time: the model is not shared safely
                text = self.server.backend.generate([request])[0]
        except MeraError as err:
            self._error(400, str(err))
            return
        self.send_json(200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
            "created": int(time.time()), "model": self.server.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})

    def _request(self, body: dict) -> Request:
        if body.get("model") not in (None, self.server.model_name):
            raise ValueError(f"model {body.get('model')!r} is not served here "
                             f"(this server serves {self.server.model_name!r})")
        users = [m for m in body["messages"] if m.get("role") == "user"]
        if len(users) != 1:
            raise ValueError("exactly one user message is supported")
        prompt, items = prompt_from_openai(users[0]["content"])
        media = [Media(kind=kind, sha256=hashlib.sha256(data).hexdigest(), data=data)
                 for kind, data in items]
        max_new = int(body.get("max_tokens") or body.get("max_completion_tokens") or 256)
        return Request(task="served", split="", id=0, prompt=prompt, media=media,
                       max_new_tokens=max_new)


def make_server(backend, host: str = "127.0.0.1", port: int = 0,
                model_name: str | None = None, verbose: bool = False) -> JsonServer:
    """A server bound to (host, port) (port 0: any free port; see ``server.server_port``)."""
    server = JsonServer((host, port), ChatHandler)
    server.backend = backend
    server.model_name = model_name or backend.model_id
    server.lock = threading.Lock()
    server.verbose = verbose
    return server


def main(argv: list[str] | None = None) -> int:
    from .backends.hf import HFBackend

    parser = argparse.ArgumentParser(prog="python -m mera_multi_hf.runner.serve",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="Hub id or folder (default: the built-in tiny model)")
    parser.add_argument("--served-name", help="the model name clients use (default: --model)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--device")
    parser.add_argument("--max-pixels", type=int)
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    try:
        backend = HFBackend(args.model, dtype=args.dtype, device=args.device,
                            max_pixels=args.max_pixels, trust_remote_code=args.trust_remote_code)
        backend.load()
    except MeraError as err:
        print(f"serve: error: {err}")
        return 2
    server = make_server(backend, args.host, args.port, args.served_name, args.verbose)
    return server.serve_until_interrupted(
        f"serving {server.model_name} on http://{args.host}:{server.server_port}/v1 (Ctrl+C to stop)")


if __name__ == "__main__":
    raise SystemExit(main())
