"""One set of resource limits, shared by the builder's media checks, the runner's media
decoding and both HTTP servers (the judge and the OpenAI-compatible chat server).

Each limit bounds a cost that a small hostile input can blow up: a PNG header that
declares billions of pixels, a WAV header with an absurd sample rate (resampling
allocates ``duration * target_rate`` samples), a judge request with thousands of items
or one huge string. Checks run on headers and counts, before any decode, resample or
tokenisation. Every limit is recorded in ``results.json`` and can be overridden by the
command-line option named in :data:`OPTION_NAMES`.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace


@dataclass(frozen=True)
class Limits:
    # Images: Pillow's own "decompression bomb" error threshold is 2 x MAX_IMAGE_PIXELS
    # (about 179 MP); a MERA photo is a few MP.
    max_image_pixels: int = 2 * 89_478_485
    # Audio, read from the header before decoding or resampling.
    min_audio_rate: int = 1_000
    max_audio_rate: int = 384_000
    max_audio_channels: int = 8
    max_audio_seconds: float = 3_600.0
    # Video, read from the container header; frames are those decoded per clip.
    max_video_seconds: float = 4 * 3_600.0
    max_video_frames: int = 1_024
    # Judge server: items per /classify request and characters per item, checked before
    # tokenising.
    max_judge_items: int = 256
    max_judge_chars: int = 200_000
    # Any HTTP request body, in bytes (both servers).
    max_body_bytes: int = 64 * 1024 * 1024

    def with_overrides(self, **values) -> "Limits":
        """A copy with the given (non-None) limits replaced."""
        return replace(self, **{k: v for k, v in values.items() if v is not None})

    def as_record(self) -> dict:
        """The limits as recorded in results files."""
        return asdict(self)


DEFAULT_LIMITS = Limits()

# Limit -> the command-line option that overrides it.
OPTION_NAMES = {name: "--" + name.replace("_", "-") for name in Limits.__dataclass_fields__}


def add_server_options(parser) -> None:
    """The options both HTTP servers take (the judge's and the chat server's): the
    client's time to send, the model queue, uvicorn's concurrency and keep-alive, and
    the body-size limit. Declared once here, where importing stays light (no FastAPI)."""
    parser.add_argument("--read-timeout", type=float, default=30.0,
                        help="seconds a client has to send its whole request (then 408; default 30)")
    parser.add_argument("--max-queue", type=int, default=64,
                        help="requests waiting for the model, past which 503 (default 64)")
    parser.add_argument("--limit-concurrency", type=int, default=1024,
                        help="connections and requests at once, past which a quick 503 (uvicorn's "
                             "option; default 1024)")
    parser.add_argument("--timeout-keep-alive", type=float, default=5.0,
                        help="seconds an idle keep-alive connection stays open (default 5)")
    parser.add_argument("--max-body-bytes", type=int,
                        help=f"bytes per request body (default {DEFAULT_LIMITS.max_body_bytes})")
