"""Serve any local sequence classifier behind vLLM's classification API (FastAPI on uvicorn).

Routes (the subset of vLLM's API that the MERA harness and `HttpJudge` use; the request
and reply shapes are vLLM's, so `--judge-url` works against either server):

    POST /classify   (also /v1/classify)
        body:  {"model": "<name>", "input": "<text>" | ["<text>", ...],
                "truncate_prompt_tokens": 8192}
        reply: {"id": "classify-...", "object": "list", "created": <unix time>,
                "model": "<name>",
                "data": [{"index": 0, "label": "correct", "probs": [0.1, 0.9],
                          "num_classes": 2}, ...],
                "usage": {"prompt_tokens": N, "total_tokens": N, "completion_tokens": 0,
                          "prompt_tokens_details": null}}
    POST /tokenize    {"model", "prompt": str, "add_special_tokens": true} -> {"tokens", "count", "max_model_len"}
    POST /detokenize  {"model", "tokens": [int, ...]} -> {"prompt": str}
    GET  /tokenizer_info  {"tokenizer_class", "sep_token", "cls_token", "model_max_length"}
    GET  /health      {"status": "ok"}
    GET  /v1/models   {"object": "list", "data": [{"id": "<name>", "object": "model", ...}]}

`truncate_prompt_tokens` keeps the last N tokens of a text, as vLLM does. A request for
another model name gets 404, as from vLLM. With an API key (--api-key, or the
MERA_JUDGE_API_KEY environment variable, which `ps` does not show) every route but
/health needs ``Authorization: Bearer <key>`` (else 401). A /classify request with more
items than ``max_judge_items`` or an item longer than ``max_judge_chars`` characters is
refused with 413 before anything is tokenised, and so are inputs over
``max_judge_request_chars`` characters together. The model runs one batch at a time,
the requests taking turns batch by batch (one large request does not hold the others
up); at most ``max_queue`` more wait (then 503). Every error, a malformed body included, is
JSON {"object": "error", "message": ..., "type": ..., "code": ...}.

Run:  mera-multi judge serve --model PATH [--host 127.0.0.1] [--port 8000]
  or: python judge_model/server.py --model PATH  (the same command)
  or: uvicorn --factory mera_multi_hf.serving.judge_server:app_from_env  (MERA_JUDGE_MODEL=PATH)
From Python (tests): server = serve(path, "127.0.0.1", 0); ...; server.shutdown().
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Annotated

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from mera_multi_hf.core.foreign_text import foreign
from mera_multi_hf.core.limits import DEFAULT_LIMITS, Limits
from mera_multi_hf.judge.judges import API_KEY_ENV
from mera_multi_hf.serving.app import BodyError, Guard, ModelQueue, Server, json_app, read_json


class JudgeBody(BaseModel):
    """The fields of a judge request (validated strictly: no "3" for 3); others ignored."""

    model: str | None = Field(None, description="a string")


class ClassifyBody(JudgeBody):
    input: str | Annotated[list[str], Field(min_length=1)] = Field(
        description="a string or a non-empty list of strings"
    )
    truncate_prompt_tokens: int | None = Field(None, gt=0, description="a positive integer")


class TokenizeBody(JudgeBody):
    prompt: str = Field(description="a string")
    add_special_tokens: bool = Field(True, description="a boolean")


class DetokenizeBody(JudgeBody):
    tokens: list[int] = Field(description="a list of token ids")


def error_payload(code: int, message: str) -> dict:
    kinds = {
        401: "AuthenticationError",
        404: "NotFoundError",
        413: "RequestTooLargeError",
        503: "ServiceUnavailableError",
    }
    kind = kinds.get(code, "InternalServerError" if code >= 500 else "BadRequestError")
    return {"object": "error", "message": message, "type": kind, "code": code}


class JudgeService:
    """The model behind the routes: one forward pass at a time, a bounded queue."""

    def __init__(
        self, judge, model_name: str, limits: Limits = DEFAULT_LIMITS, max_queue: int = 64
    ):
        self.judge, self.model_name, self.limits = judge, model_name, limits
        self.aliases = {model_name, judge.model_id}
        self.queue = ModelQueue(max_queue, "judge-model")
        self.run = self.queue.run  # fn(*args) on the model's thread, after those before it

    def check_model(self, body: dict) -> None:
        model = body.get("model")
        if model is not None and model not in self.aliases:
            raise BodyError(
                404,
                f"The model `{foreign(model)}` does not exist. This server serves "
                f"`{self.model_name}`.",
            )

    def classify_args(self, body: dict) -> tuple[list[str], int | None]:
        texts = body["input"]
        texts = [texts] if isinstance(texts, str) else texts
        limits = self.limits
        if len(texts) > limits.max_judge_items:
            raise BodyError(
                413,
                f"{len(texts)} inputs in one request; the limit is "
                f"{limits.max_judge_items} (max_judge_items)",
            )
        longest = max(range(len(texts)), key=lambda i: len(texts[i]))
        if len(texts[longest]) > limits.max_judge_chars:
            raise BodyError(
                413,
                f"input {longest} has {len(texts[longest])} characters; the "
                f"limit is {limits.max_judge_chars} (max_judge_chars)",
            )
        total = sum(map(len, texts))
        if total > limits.max_judge_request_chars:
            raise BodyError(
                413,
                f"the inputs have {total} characters together; the limit is "
                f"{limits.max_judge_request_chars} (max_judge_request_chars)",
            )
        truncate = body.get("truncate_prompt_tokens")
        if truncate is not None and (type(truncate) is not int or truncate < 1):
            raise BodyError(400, "`truncate_prompt_tokens` must be a positive integer")
        return texts, truncate

    async def classify(self, texts: list[str], truncate: int | None) -> dict:
        """The reply, the model taken one batch at a time (the batches the judge forms
        itself: by length), so that other requests get their turn in between."""
        judge = self.judge
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows: list = [None] * len(texts)
        for start in range(0, len(order), judge.batch_size):
            chunk = order[start : start + judge.batch_size]
            found = await self.run(judge.probs, [texts[i] for i in chunk], truncate)
            for i, row in zip(chunk, found):
                rows[i] = row
        tokens = 0
        for start in range(0, len(texts), judge.batch_size):
            tokens += await self.run(
                self.count_tokens, texts[start : start + judge.batch_size], truncate
            )
        return self.reply(rows, tokens)

    def count_tokens(self, texts: list[str], truncate: int | None) -> int:
        judge = self.judge
        max_len = min(truncate, judge.max_tokens) if truncate else judge.max_tokens
        return sum(
            map(
                len,
                judge.tokenizer(texts, truncation=True, max_length=max_len, verbose=False)[
                    "input_ids"
                ],
            )
        )

    def reply(self, rows: list, tokens: int) -> dict:
        judge = self.judge
        data = []
        for i, row in enumerate(rows):
            best = max(range(len(row)), key=row.__getitem__)
            data.append(
                {"index": i, "label": judge.id2label(best), "probs": row, "num_classes": len(row)}
            )
        return {
            "id": f"classify-{uuid.uuid4().hex}",
            "object": "list",
            "created": int(time.time()),
            "model": self.model_name,
            "data": data,
            "usage": {
                "prompt_tokens": tokens,
                "total_tokens": tokens,
                "completion_tokens": 0,
                "prompt_tokens_details": None,
            },
        }

    def tokenize(self, body: dict) -> dict:
        text, special = body["prompt"], body["add_special_tokens"]
        if len(text) > self.limits.max_judge_chars:
            raise BodyError(
                413,
                f"the prompt has {len(text)} characters; the limit is "
                f"{self.limits.max_judge_chars} (max_judge_chars)",
            )
        ids = self.judge.tokenizer(text, add_special_tokens=special, verbose=False)["input_ids"]
        return {"tokens": ids, "count": len(ids), "max_model_len": self.judge.max_tokens}

    def detokenize(self, body: dict) -> dict:
        ids = body.get("tokens")
        vocab = len(self.judge.tokenizer)
        if not (len(ids) <= self.limits.max_judge_chars and all(0 <= i < vocab for i in ids)):
            raise BodyError(
                400,
                f"`tokens` must be a list of at most "
                f"{self.limits.max_judge_chars} token ids in [0, {vocab})",
            )
        return {"prompt": self.judge.tokenizer.decode(ids)}


def create_app(service: JudgeService):
    """The FastAPI app of the judge routes over ``service``."""
    app = json_app(error_payload, "mera-multi judge")
    _add_info_routes(app, service)
    _add_model_routes(app, service)
    return app


def _add_info_routes(app, service: JudgeService) -> None:
    """The GET routes: health, the served model, the tokenizer's separator."""
    judge = service.judge

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models():
        return {
            "object": "list",
            "data": [
                {
                    "id": service.model_name,
                    "object": "model",
                    "owned_by": "mera-multi-hf",
                    "root": judge.model_id,
                    "max_model_len": judge.max_tokens,
                    "sep_token": judge.sep,
                }
            ],
        }

    @app.get("/tokenizer_info")
    async def tokenizer_info():
        return {
            "tokenizer_class": type(judge.tokenizer).__name__,
            "sep_token": judge.sep,
            "cls_token": judge.tokenizer.cls_token,
            "model_max_length": judge.max_tokens,
        }


def _add_model_routes(app, service: JudgeService) -> None:
    """The POST routes that run the model: /classify, /tokenize, /detokenize."""

    async def answer(request, work, fields):
        body = (await read_json(request, fields)).model_dump()  # a 400 for a wrong field
        service.check_model(body)
        try:  # a plain JSONResponse: FastAPI's encoder would walk every label again
            return JSONResponse(await work(body))
        except BodyError:
            raise
        except Exception as err:  # noqa: BLE001 - the client gets the cause, the server lives on
            raise BodyError(500, f"{type(err).__name__}: {foreign(err)}") from None

    @app.post("/classify")
    @app.post("/v1/classify")
    async def classify(request: Request):
        return await answer(
            request, lambda body: service.classify(*service.classify_args(body)), ClassifyBody
        )

    @app.post("/tokenize")
    async def tokenize(request: Request):
        return await answer(request, lambda body: service.run(service.tokenize, body), TokenizeBody)

    @app.post("/detokenize")
    async def detokenize(request: Request):
        return await answer(
            request, lambda body: service.run(service.detokenize, body), DetokenizeBody
        )


def create_server(
    model_path: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    served_model_name: str | None = None,
    device: str | None = None,
    batch_size: int = 16,
    quiet: bool = True,
    api_key: str | None = None,
    read_timeout: float = 30.0,
    limits: Limits = DEFAULT_LIMITS,
    max_queue: int = 64,
    limit_concurrency: int = 1024,
    timeout_keep_alive: float = 5.0,
) -> Server:
    """Load the classifier and bind the server (not yet serving). Port 0 picks a free port."""
    from mera_multi_hf.judge.local_judge import LocalJudge

    judge = LocalJudge(model_path, device=device, batch_size=batch_size)
    service = JudgeService(judge, served_model_name or str(model_path), limits, max_queue)
    server = Server(
        create_app(service),
        error_payload,
        host,
        port,
        api_key=api_key or None,
        read_timeout=read_timeout,
        limits=limits,
        limit_concurrency=limit_concurrency,
        timeout_keep_alive=timeout_keep_alive,
        verbose=not quiet,
    )
    server.service = server.judge = service
    server.model_name = service.model_name
    server.closers.append(service.queue.close)
    return server


def serve(model_path: str, host: str = "127.0.0.1", port: int = 8000, **options) -> Server:
    """Start serving in a background thread; returns the server (stop: server.shutdown())."""
    return create_server(model_path, host, port, **options).start()


def app_from_env():
    """For ``uvicorn --factory mera_multi_hf.serving.judge_server:app_from_env``: the app of the judge at
    $MERA_JUDGE_MODEL (name: $MERA_JUDGE_SERVED_NAME), key from $MERA_JUDGE_API_KEY,
    with the default limits. uvicorn's own options then set the rest."""
    from mera_multi_hf.judge.local_judge import LocalJudge

    path = os.environ["MERA_JUDGE_MODEL"]
    judge = LocalJudge(path, device=os.environ.get("MERA_JUDGE_DEVICE"))
    service = JudgeService(judge, os.environ.get("MERA_JUDGE_SERVED_NAME") or path)
    return Guard(create_app(service), error_payload, api_key=os.environ.get(API_KEY_ENV) or None)


def run_foreground(server: Server) -> int:
    return server.serve_until_interrupted(
        f"serving judge {server.model_name} at {server.url}/classify (Ctrl+C to stop)"
    )


def from_options(options) -> Server:
    """The server that `judge serve` runs, from its options (judge_cmd.JudgeServeOptions)."""
    limits = DEFAULT_LIMITS.with_overrides(
        max_judge_items=options.max_judge_items,
        max_judge_chars=options.max_judge_chars,
        max_judge_request_chars=options.max_judge_request_chars,
        max_body_bytes=options.max_body_bytes,
    )
    return create_server(
        options.model,
        options.host,
        options.port,
        served_model_name=options.served_model_name,
        device=options.device,
        batch_size=options.batch_size,
        quiet=not options.verbose,
        api_key=options.api_key or os.environ.get(API_KEY_ENV),
        read_timeout=options.read_timeout,
        limits=limits,
        max_queue=options.max_queue,
        limit_concurrency=options.limit_concurrency,
        timeout_keep_alive=options.timeout_keep_alive,
    )
