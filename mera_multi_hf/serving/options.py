"""The options every server of the package takes (the judge server, the chat server)."""

from __future__ import annotations

from dataclasses import dataclass

from mera_multi_hf.core.arguments import Options, opt
from mera_multi_hf.core.limits import DEFAULT_LIMITS


@dataclass
class ServerOptions(Options):
    """server options (the same for the judge server and the chat server)"""

    host: str = opt("127.0.0.1", "address to listen on (default: 127.0.0.1)")
    port: int = opt(8000, "port (default: 8000; 0: any free one)", low=0, high=65535)
    read_timeout: float = opt(
        30.0,
        "seconds a client has to send its whole request, then 408 (default: 30)",
        above=0,
        high=3_600,
        unit="seconds",
    )
    max_queue: int = opt(64, "requests waiting for the model, past which 503 (default: 64)", low=1)
    limit_concurrency: int = opt(
        1024,
        "connections and requests at once, past which a quick 503 "
        "(uvicorn's option) (default: 1024)",
        low=1,
    )
    timeout_keep_alive: float = opt(
        5.0,
        "seconds an idle keep-alive connection stays open (default: 5)",
        low=0,
        high=3_600,
        unit="seconds",
    )
    max_body_bytes: int | None = opt(
        None, f"bytes per request body (default: {DEFAULT_LIMITS.max_body_bytes})", low=1
    )
    verbose: bool = opt(False, "log every request (default: off)")
