"""Serve any local sequence classifier behind a vLLM-style classification API.

Routes (the subset of vLLM's API that the MERA harness and `HttpJudge` use):

    POST /classify   (also /v1/classify)
        body:  {"model": "<name>", "input": "<text>" | ["<text>", ...],
                "truncate_prompt_tokens": 8192}
        reply: {"object": "list", "model": "<name>",
                "data": [{"index": 0, "label": "correct", "probs": [0.1, 0.9],
                          "num_classes": 2}, ...]}
    GET  /health      {"status": "ok"}
    GET  /v1/models   {"object": "list", "data": [{"id": "<name>", "object": "model", ...}]}

`truncate_prompt_tokens` keeps the last N tokens of a text, as vLLM does. A request for
another model name gets 404, as from vLLM. Errors come back as JSON
{"object": "error", "message": ..., "type": ..., "code": ...}.

Run:  mera-multi judge serve --model PATH [--host 127.0.0.1] [--port 8000]
  or: python judge_model/server.py --model PATH
From Python (tests): server = serve(path, "127.0.0.1", 0); ...; server.shutdown().
"""
from __future__ import annotations

import argparse
import sys
import threading

from mera_multi_hf.http_json import JsonHandler, JsonServer


class JudgeServer(JsonServer):
    def __init__(self, address, judge, model_name: str, quiet: bool = True):
        self.judge = judge
        self.model_name = model_name
        self.aliases = {model_name, judge.model_id}
        self.verbose = not quiet
        self.thread: threading.Thread | None = None
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def shutdown(self) -> None:
        # shutdown() waits for serve_forever; only call it when a loop is running.
        if self.thread is not None:
            super().shutdown()
            self.thread.join()
            self.thread = None
        self.server_close()


class _Handler(JsonHandler):
    server: JudgeServer

    def _error(self, code: int, kind: str, message: str) -> None:
        self.send_json(code, {"object": "error", "message": message, "type": kind, "code": code})

    def do_GET(self):
        path = self.route
        if path == "/health":
            self.send_json(200, {"status": "ok"})
        elif path == "/v1/models":
            judge = self.server.judge
            self.send_json(200, {"object": "list", "data": [{
                "id": self.server.model_name, "object": "model", "owned_by": "mera-multi-hf",
                "root": judge.model_id, "max_model_len": judge.max_tokens}]})
        else:
            self._error(404, "NotFoundError", f"no route GET {path}")

    def do_POST(self):
        path = self.route
        if path not in ("/classify", "/v1/classify"):
            self._error(404, "NotFoundError", f"no route POST {path}; use /classify")
            return
        try:
            body = self.read_json()
        except ValueError as err:
            self._error(400, "BadRequestError", str(err))
            return
        model = body.get("model")
        if model is not None and model not in self.server.aliases:
            self._error(404, "NotFoundError", f"The model `{model}` does not exist. "
                        f"This server serves `{self.server.model_name}`.")
            return
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not (isinstance(texts, list) and texts and all(isinstance(t, str) for t in texts)):
            self._error(400, "BadRequestError", "`input` must be a string or a non-empty list of strings")
            return
        truncate = body.get("truncate_prompt_tokens")
        if truncate is not None and (not isinstance(truncate, int) or truncate < 1):
            self._error(400, "BadRequestError", "`truncate_prompt_tokens` must be a positive integer")
            return
        try:
            probs = self.server.judge.probs(texts, truncate=truncate)
        except Exception as err:  # the client gets a 500 with the cause, the server lives on
            self._error(500, "InternalServerError", f"{type(err).__name__}: {err}")
            return
        judge = self.server.judge
        data = []
        for i, row in enumerate(probs):
            best = max(range(len(row)), key=row.__getitem__)
            data.append({"index": i, "label": judge.id2label(best), "probs": row,
                         "num_classes": len(row)})
        self.send_json(200, {"object": "list", "model": self.server.model_name, "data": data})


def create_server(model_path: str, host: str = "127.0.0.1", port: int = 8000, *,
                  served_model_name: str | None = None, device: str | None = None,
                  batch_size: int = 16, quiet: bool = True) -> JudgeServer:
    """Load the classifier and bind the server (not yet serving). Port 0 picks a free port."""
    from mera_multi_hf.judge import LocalJudge

    judge = LocalJudge(model_path, device=device, batch_size=batch_size)
    return JudgeServer((host, port), judge, served_model_name or str(model_path), quiet=quiet)


def serve(model_path: str, host: str = "127.0.0.1", port: int = 8000, **options) -> JudgeServer:
    """Start serving in a background thread; returns the server (stop: server.shutdown())."""
    server = create_server(model_path, host, port, **options)
    server.thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                     name="judge-server", daemon=True)
    server.thread.start()
    return server


def run_foreground(server: JudgeServer) -> int:
    return server.serve_until_interrupted(
        f"serving judge {server.model_name} at {server.url}/classify (Ctrl+C to stop)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a judge classifier with a vLLM-style /classify route.")
    parser.add_argument("--model", required=True, help="local folder or Hub id of a sequence classifier")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--served-model-name", help="name clients send as `model` (default: --model)")
    parser.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: cuda when available)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    server = create_server(args.model, args.host, args.port, served_model_name=args.served_model_name,
                           device=args.device, batch_size=args.batch_size, quiet=not args.verbose)
    return run_foreground(server)


if __name__ == "__main__":
    sys.exit(main())
