"""Serve any local sequence classifier behind a vLLM-style classification API.

Routes (the subset of vLLM's API that the MERA harness and `HttpJudge` use):

    POST /classify   (also /v1/classify)
        body:  {"model": "<name>", "input": "<text>" | ["<text>", ...],
                "truncate_prompt_tokens": 8192}
        reply: {"object": "list", "model": "<name>",
                "data": [{"index": 0, "label": "correct", "probs": [0.1, 0.9],
                          "num_classes": 2}, ...]}
    POST /tokenize    {"model", "prompt": str, "add_special_tokens": true} -> {"tokens", "count", "max_model_len"}
    POST /detokenize  {"model", "tokens": [int, ...]} -> {"prompt": str}
    GET  /tokenizer_info  {"tokenizer_class", "sep_token", "cls_token", "model_max_length"}
    GET  /health      {"status": "ok"}
    GET  /v1/models   {"object": "list", "data": [{"id": "<name>", "object": "model", ...}]}

`truncate_prompt_tokens` keeps the last N tokens of a text, as vLLM does. A request for
another model name gets 404, as from vLLM. With an API key every route but /health
needs ``Authorization: Bearer <key>`` (else 401). Every error, a malformed body included,
comes back as JSON {"object": "error", "message": ..., "type": ..., "code": ...}.

Run:  mera-multi judge serve --model PATH [--host 127.0.0.1] [--port 8000] [--api-key KEY]
  or: python judge_model/server.py --model PATH
From Python (tests): server = serve(path, "127.0.0.1", 0); ...; server.shutdown().
"""
from __future__ import annotations

import argparse
import sys
import threading

from mera_multi_hf.http_json import JsonHandler, JsonServer


class _BadRequest(Exception):
    def __init__(self, code: int, kind: str, message: str):
        super().__init__(message)
        self.code, self.kind = code, kind


class JudgeServer(JsonServer):
    def __init__(self, address, judge, model_name: str, quiet: bool = True,
                 api_key: str | None = None, read_timeout: float = 30.0, workers: int = 4):
        self.judge = judge
        self.model_name = model_name
        self.aliases = {model_name, judge.model_id}
        self.verbose = not quiet
        self.thread: threading.Thread | None = None
        # Bearer auth (all routes but /health), read timeouts and the bounded worker pool
        # are JsonServer's: the same for both of the project's servers.
        super().__init__(address, _Handler, api_key=api_key or None, read_timeout=read_timeout,
                         workers=workers)

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
        self.close_connection = True  # the body may be unread: never reuse this connection
        self.send_json(code, {"object": "error", "message": message, "type": kind, "code": code})

    def do_GET(self):
        judge, path = self.server.judge, self.route
        if path == "/health":
            self.send_json(200, {"status": "ok"})
        elif path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{
                "id": self.server.model_name, "object": "model", "owned_by": "mera-multi-hf",
                "root": judge.model_id, "max_model_len": judge.max_tokens, "sep_token": judge.sep}]})
        elif path == "/tokenizer_info":
            tok = judge.tokenizer
            self.send_json(200, {"tokenizer_class": type(tok).__name__, "sep_token": judge.sep,
                                 "cls_token": tok.cls_token, "model_max_length": judge.max_tokens})
        else:
            self._error(404, "NotFoundError", f"no route GET {path}")

    def do_POST(self):
        routes = {"/classify": self._classify, "/v1/classify": self._classify,
                  "/tokenize": self._tokenize, "/detokenize": self._detokenize}
        route = routes.get(self.route)
        if route is None:
            self._error(404, "NotFoundError", f"no route POST {self.route}; use /classify")
            return
        try:
            body = self.read_json_or_reply()
            if body is None:  # replied already, with the body error's own status
                return
            self._check_model(body)
            self.send_json(200, route(body))
        except _BadRequest as err:
            self._error(err.code, err.kind, str(err))
        except (ValueError, RecursionError) as err:  # a malformed or too deeply nested body
            self._error(400, "BadRequestError", str(err) or type(err).__name__)
        except Exception as err:  # noqa: BLE001 - the client gets the cause, the server lives on
            self._error(500, "InternalServerError", f"{type(err).__name__}: {err}")

    def _check_model(self, body: dict) -> None:
        model = body.get("model")
        if model is None:
            return
        if not isinstance(model, str):
            raise _BadRequest(400, "BadRequestError", "`model` must be a string")
        if model not in self.server.aliases:
            raise _BadRequest(404, "NotFoundError", f"The model `{model}` does not exist. "
                              f"This server serves `{self.server.model_name}`.")

    def _classify(self, body: dict) -> dict:
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not (isinstance(texts, list) and texts and all(isinstance(t, str) for t in texts)):
            raise _BadRequest(400, "BadRequestError",
                              "`input` must be a string or a non-empty list of strings")
        truncate = body.get("truncate_prompt_tokens")
        if truncate is not None and (type(truncate) is not int or truncate < 1):
            raise _BadRequest(400, "BadRequestError",
                              "`truncate_prompt_tokens` must be a positive integer")
        judge = self.server.judge
        data = []
        for i, row in enumerate(judge.probs(texts, truncate=truncate)):
            best = max(range(len(row)), key=row.__getitem__)
            data.append({"index": i, "label": judge.id2label(best), "probs": row,
                         "num_classes": len(row)})
        return {"object": "list", "model": self.server.model_name, "data": data}

    def _tokenize(self, body: dict) -> dict:
        text, special = body.get("prompt"), body.get("add_special_tokens", True)
        if not isinstance(text, str) or not isinstance(special, bool):
            raise _BadRequest(400, "BadRequestError", "`prompt` must be a string and "
                              "`add_special_tokens` a boolean")
        judge = self.server.judge
        ids = judge.tokenizer(text, add_special_tokens=special, verbose=False)["input_ids"]
        return {"tokens": ids, "count": len(ids), "max_model_len": judge.max_tokens}

    def _detokenize(self, body: dict) -> dict:
        ids = body.get("tokens")
        vocab = len(self.server.judge.tokenizer)
        if not (isinstance(ids, list)
                and all(type(i) is int and 0 <= i < vocab for i in ids)):
            raise _BadRequest(400, "BadRequestError",
                              f"`tokens` must be a list of token ids in [0, {vocab})")
        return {"prompt": self.server.judge.tokenizer.decode(ids)}


def create_server(model_path: str, host: str = "127.0.0.1", port: int = 8000, *,
                  served_model_name: str | None = None, device: str | None = None,
                  batch_size: int = 16, quiet: bool = True, api_key: str | None = None,
                  read_timeout: float = 30.0, workers: int = 4) -> JudgeServer:
    """Load the classifier and bind the server (not yet serving). Port 0 picks a free port."""
    from mera_multi_hf.judge import LocalJudge

    judge = LocalJudge(model_path, device=device, batch_size=batch_size)
    return JudgeServer((host, port), judge, served_model_name or str(model_path), quiet=quiet,
                       api_key=api_key, read_timeout=read_timeout, workers=workers)


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
    parser.add_argument("--api-key", help="require `Authorization: Bearer <key>`")
    parser.add_argument("--read-timeout", type=float, default=30.0,
                        help="seconds a client has to send its whole request (then 408)")
    parser.add_argument("--workers", type=int, default=4, help="requests answered at once")
    args = parser.parse_args(argv)
    server = create_server(args.model, args.host, args.port, served_model_name=args.served_model_name,
                           device=args.device, batch_size=args.batch_size, quiet=not args.verbose,
                           api_key=args.api_key, read_timeout=args.read_timeout,
                           workers=args.workers)
    return run_foreground(server)


if __name__ == "__main__":
    sys.exit(main())
