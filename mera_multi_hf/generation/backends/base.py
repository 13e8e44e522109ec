"""What every backend shares: the :class:`Backend` protocol, the stop strings (checked
and cut), and the request window of a server. The backends import this module, never
their package, whose ``make_backend`` imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from mera_multi_hf.core.errors import MeraError

if TYPE_CHECKING:
    from mera_multi_hf.generation.request import Request

# openai: requests in flight per server. vLLM batches up to 256 sequences by default
# (--max-num-seqs); 64 keeps such a server busy without flooding a small one (its HTTP
# 429s are retried). The cap bounds threads, sockets and the media held in memory.
DEFAULT_CONCURRENCY, MAX_CONCURRENCY = 64, 1024


@runtime_checkable
class Backend(Protocol):
    """What the runner needs of a backend.

    ``settings()`` is what identifies the generations (hashed into every request hash,
    with the model id and revision): it holds the stop strings. ``info()`` is what the
    results record about the backend (never a secret). ``load()`` may be slow (a model
    loads) and is idempotent; ``generate`` calls it when needed.
    """

    name: str
    model_id: str
    revision: str | None
    batch_size: int

    def settings(self) -> dict: ...

    def info(self) -> dict: ...

    def load(self) -> None: ...

    def generate(self, requests: list[Request]) -> list[str]: ...

    def close(self) -> None: ...


def check_stop(stop) -> tuple[str, ...]:
    """The stop strings as a tuple; None gives the official default ("\\n\\n",)."""
    from mera_multi_hf.tasks.spec import DEFAULT_STOP

    if stop is None:
        return DEFAULT_STOP
    stops = (stop,) if isinstance(stop, str) else tuple(stop)
    if not stops or not all(isinstance(s, str) and s for s in stops):
        raise MeraError(f"--stop: give non-empty stop strings (got {list(stops)!r})")
    return stops


def cut_at_stop(text: str, stop: tuple[str, ...] | list[str]) -> str:
    """``text`` up to the first occurrence of any stop string (the harness's post-hoc cut)."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=len(text))
    return text[:cut]
