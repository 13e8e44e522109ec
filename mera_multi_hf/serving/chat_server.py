"""A small OpenAI-compatible server over the hf backend (FastAPI on uvicorn).

    mera-multi serve --model Qwen/Qwen2.5-VL-3B-Instruct --port 8000
    mera-multi evaluate --backend openai --base-url http://127.0.0.1:8000/v1 --model <name>
    MERA_SERVE_MODEL=<model> uvicorn --factory mera_multi_hf.serving.chat_server:app_from_env

Routes: ``POST /v1/chat/completions`` (text + base64 data-URI images, greedy only),
``GET /v1/models``, ``GET /health``. Generation runs one request at a time; it exists
to serve a model to the openai backend on one machine (and to test that backend), not
to replace vLLM. Without --model it serves the built-in tiny random model.

A request that the server cannot honour as asked gets a JSON 400 that says why: a
malformed message, a media item that is not a base64 data URI of its kind, a
``max_tokens`` below 1 or above the server's limit, or ``n`` > 1. ``stream: true`` gets
the answer as server-sent ``chat.completion.chunk`` events; ``usage`` counts the
prompt's and the answer's tokens. ``stop``
(a string or a list of strings) cuts the answer at the first stop string. With
``--api-key`` (or MERA_SERVE_API_KEY) every route but /health needs
``Authorization: Bearer <key>``. An image larger than ``max_image_pixels`` (read from
its header) gets 413 before it is decoded; a body larger than ``max_body_bytes`` gets
413 before it is read. Requests are parsed and their images decoded outside the
generation lock; at most ``--max-queue`` wait for the model (then 503).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from fastapi import Request as FastAPIRequest
from fastapi.responses import StreamingResponse

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.foreign_text import foreign
from mera_multi_hf.core.limits import DEFAULT_LIMITS, Limits
from mera_multi_hf.data.media_decode import Media
from mera_multi_hf.generation.request import Request
from mera_multi_hf.serving.app import BodyError, Guard, ModelQueue, Server, json_app, read_json
from mera_multi_hf.serving.app import shown as _shown
from mera_multi_hf.serving.chat_options import (
    MAX_TOKENS_LIMIT,
    ChatServeOptions,
    parse_serve_options,
)
from mera_multi_hf.serving.chat_requests import (
    ChatCompletionRequest,
    TooLarge,
    check_image,
    check_options,
    prompt_from_openai,
    requested_max_tokens,
    requested_stops,
    user_content,
)


def _cut_at_stop(text: str, stops: tuple[str, ...]) -> str:
    return text[: min((i for i in (text.find(s) for s in stops) if i >= 0), default=len(text))]


def error_payload(status: int, message: str) -> dict:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    if status == 404:  # an unknown model: vLLM's type and code, OpenAI's param
        return {
            "error": {"message": message, "type": "NotFoundError", "param": "model", "code": 404}
        }
    return {"error": {"message": message, "type": kind, "code": status}}


class ChatService:
    """The backend behind the route: requests are parsed and their images decoded on a
    pool of ``workers`` threads; generation runs one request at a time on its own
    thread, with at most ``max_queue`` requests waiting (then 503)."""

    def __init__(
        self,
        backend,
        model_name: str,
        *,
        max_tokens_limit: int = MAX_TOKENS_LIMIT,
        limits: Limits = DEFAULT_LIMITS,
        workers: int = 8,
        max_queue: int = 64,
    ):
        if workers < 1 or max_tokens_limit < 1 or max_queue < 1:
            raise ValueError("workers, max_tokens_limit and max_queue must be positive")
        self.backend, self.model_name, self.limits = backend, model_name, limits
        self.max_tokens_limit = max_tokens_limit
        self.parse_pool = ThreadPoolExecutor(workers, thread_name_prefix="serve-parse")
        self.queue = ModelQueue(max_queue, "serve-generate")  # one generate at a time

    def close(self) -> None:
        self.parse_pool.shutdown(wait=True)
        self.queue.close()

    async def complete(self, body: ChatCompletionRequest) -> dict:
        loop = asyncio.get_running_loop()
        try:  # parsing and image decoding, outside the lock, within the pixel bound
            request, stops = await loop.run_in_executor(self.parse_pool, self.request, body)
        except BodyError:
            raise
        except ValueError as err:
            raise BodyError(
                getattr(err, "status", 400), f"bad request: {foreign(err, 500)}"
            ) from None
        text = await self.queue.run(self.generate, request)  # the model is not shared safely
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": _cut_at_stop(text, stops)},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": request.prompt_tokens,
                "completion_tokens": request.completion_tokens,
                "total_tokens": request.prompt_tokens + request.completion_tokens,
            },
        }

    def generate(self, request: Request) -> str:
        try:
            return self.backend.generate([request])[0]
        except MeraError as err:
            raise BodyError(400, str(err)) from None
        except Exception as err:  # noqa: BLE001 - the client gets the cause, the server lives on
            print(
                f"serve: generate failed: {type(err).__name__}: {err}", file=sys.stderr, flush=True
            )
            raise BodyError(
                500, f"generation failed: {type(err).__name__}: {foreign(err)}"
            ) from None

    def _check_budget(self, media: list[Media]) -> None:
        """The request's media together within the memory budget (the rule of limits.py,
        from their headers), else 413 before anything is decoded."""
        costs = [m.cost(getattr(self.backend, "max_frames", 1)) for m in media]
        if sum(costs) > self.limits.memory_budget:
            raise TooLarge(
                f"the {len(media)} media items would take {sum(costs) / 2**20:.0f} "
                f"MiB decoded (the largest: item {costs.index(max(costs))}), above "
                f"the memory budget of {self.limits.memory_budget / 2**20:.0f} MiB "
                f"(memory_budget)"
            )

    def request(self, body: ChatCompletionRequest) -> tuple[Request, tuple[str, ...]]:
        check_options(body)
        if body.model not in (None, self.model_name):
            raise BodyError(  # 404, as OpenAI and vLLM answer an unknown model
                404,
                f"The model {_shown(body.model)} does not exist: this server serves "
                f"{self.model_name!r}",
            )
        # the prompt's and the stops' sizes first: bounded before anything is tokenised
        limits = self.limits
        prompt, items = prompt_from_openai(user_content(body), limits.max_prompt_chars)
        stops = requested_stops(body, limits.max_stop_strings, limits.max_stop_chars)
        media = [
            Media(kind=kind, sha256=hashlib.sha256(data).hexdigest(), data=data, limits=self.limits)
            for kind, data in items
        ]
        for decode in (False, True):  # every header, the budget of them all, then decoding
            for i, (kind, data) in enumerate(items):
                if kind == "image":
                    check_image(data, f"media item {i}", self.limits.max_image_pixels, decode)
            if not decode:
                self._check_budget(media)
        max_new = requested_max_tokens(body, self.max_tokens_limit)
        # The hf backend may take stop strings on the request (a `stop` field); when it
        # does not, the answer is still cut at them here, after generation.
        extra = {"stop": stops} if "stop" in {f.name for f in dataclasses.fields(Request)} else {}
        return Request(
            task="served",
            split="",
            id=0,
            prompt=prompt,
            media=media,
            max_new_tokens=max_new,
            **extra,
        ), stops


def create_app(service: ChatService):
    """The FastAPI app of the OpenAI-compatible routes over ``service``."""
    app = json_app(error_payload, "mera-multi serve")

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/v1/models")
    @app.get("/models")
    async def models():
        return {
            "object": "list",
            "data": [{"id": service.model_name, "object": "model", "owned_by": "mera-multi-hf"}],
        }

    @app.post("/v1/chat/completions")
    @app.post("/chat/completions")
    async def chat_completions(request: FastAPIRequest):
        body = await read_json(request, ChatCompletionRequest)
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        reply = await service.complete(body)  # a bad request fails here, before any chunk
        if body.stream:
            return StreamingResponse(
                stream_chunks(reply, include_usage), media_type="text/event-stream"
            )
        return reply

    return app


def stream_chunks(reply: dict, include_usage: bool = False):
    """A finished reply as the server-sent events of a streamed one, in the shape of
    OpenAI's ``chat.completion.chunk``: the role, the content, the finish reason, the
    usage (when asked with ``stream_options.include_usage``), then ``[DONE]``. The answer
    is generated whole first (the model runs one request at a time anyway)."""
    choice = reply["choices"][0]
    head = {
        "id": reply["id"],
        "object": "chat.completion.chunk",
        "created": reply["created"],
        "model": reply["model"],
    }
    if include_usage:  # as OpenAI: every chunk has the key, only the last one a value
        head["usage"] = None
    deltas = [
        ({"role": "assistant", "content": ""}, None),
        ({"content": choice["message"]["content"]}, None),
        ({}, choice["finish_reason"]),
    ]
    for delta, finish in deltas:
        chunk = dict(head, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])
        yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
    if include_usage:
        yield f"data: {json.dumps(dict(head, choices=[], usage=reply['usage']))}\n\n"
    yield "data: [DONE]\n\n"


def make_server(
    backend,
    host: str = "127.0.0.1",
    port: int = 0,
    model_name: str | None = None,
    verbose: bool = False,
    *,
    api_key: str | None = None,
    read_timeout: float = 30.0,
    workers: int = 8,
    max_tokens_limit: int = MAX_TOKENS_LIMIT,
    limits: Limits = DEFAULT_LIMITS,
    max_queue: int = 64,
    limit_concurrency: int = 1024,
    timeout_keep_alive: float = 5.0,
) -> Server:
    """A server bound to (host, port) (port 0: any free port; see ``server.server_port``)."""
    service = ChatService(
        backend,
        model_name or backend.model_id,
        limits=limits,
        workers=workers,
        max_tokens_limit=max_tokens_limit,
        max_queue=max_queue,
    )
    server = Server(
        create_app(service),
        error_payload,
        host,
        port,
        api_key=api_key,
        read_timeout=read_timeout,
        limits=limits,
        limit_concurrency=limit_concurrency,
        timeout_keep_alive=timeout_keep_alive,
        verbose=verbose,
    )
    server.service, server.model_name = service, service.model_name
    server.closers.append(service.close)
    return server


def app_from_env():
    """For ``uvicorn --factory mera_multi_hf.serving.chat_server:app_from_env``: the hf backend
    over $MERA_SERVE_MODEL (none: the built-in tiny model), key from $MERA_SERVE_API_KEY,
    default limits; uvicorn's own options set the rest."""
    from mera_multi_hf.generation.backends.hf import HFBackend

    backend = HFBackend(os.environ.get("MERA_SERVE_MODEL") or None)
    backend.load()
    service = ChatService(backend, os.environ.get("MERA_SERVE_SERVED_NAME") or backend.model_id)
    return Guard(
        create_app(service), error_payload, api_key=os.environ.get("MERA_SERVE_API_KEY") or None
    )


def serve(options: ChatServeOptions) -> int:
    """Load the model and serve it until Ctrl+C (what ``main`` runs with its options)."""
    from mera_multi_hf.generation.backends import make_backend

    limits = DEFAULT_LIMITS.with_overrides(
        max_image_pixels=options.max_image_pixels,
        max_body_bytes=options.max_body_bytes,
        memory_budget=options.memory_budget,
        max_prompt_chars=options.max_prompt_chars,
    )
    try:
        backend = make_backend(
            "hf",
            options.model,
            dtype=options.dtype,
            device=options.device,
            max_pixels=options.max_pixels,
            trust_remote_code=options.trust_remote_code,
        )
        backend.load()
        server = make_server(
            backend,
            options.host,
            options.port,
            options.served_model_name,
            options.verbose,
            api_key=options.api_key or os.environ.get("MERA_SERVE_API_KEY"),
            read_timeout=options.read_timeout,
            workers=options.workers,
            max_tokens_limit=options.max_tokens_limit,
            limits=limits,
            max_queue=options.max_queue,
            limit_concurrency=options.limit_concurrency,
            timeout_keep_alive=options.timeout_keep_alive,
        )
    except (MeraError, ValueError, OSError) as err:
        print(f"mera-multi: error: serve: {err}", file=sys.stderr)
        return 2
    return server.serve_until_interrupted(
        f"serving {server.model_name} on http://{options.host}:{server.server_port}/v1 "
        "(Ctrl+C to stop)"
    )


def main(argv: list[str] | None = None) -> int:
    """`python -m mera_multi_hf.serving.chat_server` (`mera-multi serve` parses its options
    without this module, then calls :func:`run_options`)."""
    return run_options(parse_serve_options(argv))


def run_options(options: ChatServeOptions) -> int:
    """Serve with parsed options, the API key never printed or logged."""
    from mera_multi_hf.core.masking import masked_console, remember_options

    remember_options(options)  # its key (and $MERA_SERVE_API_KEY) never printed or logged
    with masked_console():
        return serve(options)


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except MeraError as err:  # an option outside its domain, a model not found: one line
        print(f"mera-multi: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
