"""The options the ``openai`` backend takes: each declared once, with its default, help
and domain. ``make_backend("openai", ...)``, ``OpenAIBackend(model, **options)`` and
`evaluate`'s flags (RunConfig takes these fields as they are declared here) all check
them here."""

from __future__ import annotations

from dataclasses import dataclass

from mera_multi_hf.core.arguments import SEED_MAX, Options, opt
from mera_multi_hf.core.limits import DEFAULT_LIMITS
from mera_multi_hf.generation.backends.base import DEFAULT_CONCURRENCY, MAX_CONCURRENCY


@dataclass
class OpenAIOptions(Options):
    """openai backend options (an OpenAI-compatible chat-completions server)"""

    base_url: str | list[str] | None = opt(
        None,
        "server URL up to /v1, e.g. http://127.0.0.1:8000/v1; "
        "several servers (e.g. one vLLM per node): repeat the option or "
        "separate with commas; requests spread over them, and a failing "
        "one's go to the others",
        action="append",
        metavar="URL",
        url=True,
    )
    api_key: str | None = opt(
        None, "API key (default: $OPENAI_API_KEY); never recorded", secret=True
    )
    concurrency: int = opt(
        DEFAULT_CONCURRENCY,
        f"requests in flight at once per server (openai; at most {MAX_CONCURRENCY}); "
        "each answer is logged as it arrives",
        low=1,
        high=MAX_CONCURRENCY,
    )
    timeout: float = opt(
        300.0, "seconds per request (openai)", above=0, high=86_400, unit="seconds"
    )
    max_retries: int = opt(
        4, "retries of a failed request, with exponential backoff (openai)", low=0, high=100
    )
    backoff: float = opt(1.0, "seconds before the first retry, doubled at each", low=0, high=3_600)
    max_pixels: int | None = opt(
        None, "downscale larger images (aspect kept) to at most this many pixels", low=1
    )
    batch_size: int | None = opt(None, "requests handed to the server at once", low=1)
    seed: int = opt(1234, "random seed", low=0, high=SEED_MAX)
    stop: tuple[str, ...] | list[str] | None = opt(
        None, "the stop strings (official: a blank line)", blank_ok=True
    )
    max_reply_bytes: int = opt(
        DEFAULT_LIMITS.max_reply_bytes, "the most bytes a reply may take", low=1
    )
