"""The options of `mera-multi serve` (the chat server's), apart from the server module:
its --help reads only these, never FastAPI, the hf backend or torch."""

from __future__ import annotations

import dataclasses

from mera_multi_hf.core.arguments import Parser, add_dataclass_options, opt, same_as
from mera_multi_hf.core.limits import DEFAULT_LIMITS
from mera_multi_hf.generation.backends.hf_options import HFOptions
from mera_multi_hf.serving.options import ServerOptions

MAX_TOKENS_LIMIT = 8192

SERVE_DESCRIPTION = (
    "Serve a model (a Hub id or folder; default: the built-in tiny model) over the hf backend "
    "as an OpenAI-compatible chat server: POST /v1/chat/completions (streamed with "
    "`stream: true`), GET /v1/models, GET /health. Writes no file. For production, serve "
    "with vLLM."
)


@dataclasses.dataclass
class ChatServeOptions(ServerOptions):
    """The options of the chat server; those of any server come from ServerOptions."""

    model: str | None = opt(None, "Hub id or folder (default: the built-in tiny model)", path=True)
    served_model_name: str | None = opt(
        None,
        "the model name clients send as `model` (default: --model)",
        aliases=("--served-name",),
    )
    dtype: str = same_as(HFOptions, "dtype")
    device: str | None = opt(None, "cpu, cuda, cuda:1 or auto (default: the GPU when there is one)")
    max_pixels: int | None = opt(
        None,
        "downscale larger images (aspect kept) to at most this "
        "many pixels (default: none, images as sent)",
        low=1,
    )
    trust_remote_code: bool = opt(
        False, "allow model code from the Hub repository, only for models you trust (default: off)"
    )
    api_key: str | None = opt(
        None,
        "require 'Authorization: Bearer KEY' on every route but "
        "/health (default: $MERA_SERVE_API_KEY, which `ps` does not show; "
        "none: no authentication)",
        secret=True,
    )
    workers: int = opt(
        8, "threads parsing requests and decoding their images (default: 8)", low=1, high=1024
    )
    max_image_pixels: int | None = opt(
        None, f"pixels per image (default: {DEFAULT_LIMITS.max_image_pixels})", low=1
    )
    max_tokens_limit: int = opt(
        MAX_TOKENS_LIMIT,
        f"largest max_tokens a request may ask (default: {MAX_TOKENS_LIMIT})",
        low=1,
    )
    memory_budget: int | None = opt(
        None,
        f"bytes a request's media may take decoded (default: {DEFAULT_LIMITS.memory_budget})",
        low=1,
    )
    max_prompt_chars: int | None = opt(
        None,
        "characters of a request's prompt text, checked before tokenising "
        f"(default: {DEFAULT_LIMITS.max_prompt_chars})",
        low=1,
    )


def serve_parser() -> Parser:
    parser = Parser(prog="mera-multi serve", description=SERVE_DESCRIPTION)
    add_dataclass_options(parser, ChatServeOptions)
    return parser


def parse_serve_options(argv: list[str] | None) -> ChatServeOptions:
    """The options of `mera-multi serve`, parsed (--help prints and exits here)."""
    return ChatServeOptions(**vars(serve_parser().parse_args(argv)))
