"""One set of resource limits, shared by the builder's media checks, the runner's media
decoding and both HTTP servers (the judge and the OpenAI-compatible chat server), and
the options both servers take (:class:`ServerOptions`).

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
    # The memory one media item (or one batch's, or one server request's media) may cost
    # decoded, in bytes, by the rule below: what no single figure limit bounds (their
    # product). The bundled samples and any official MERA clip or picture are far below.
    memory_budget: int = 2 * 1024**3
    # Frames decoded at most to sample a video whose container reports no duration or
    # frame count (about an hour at 25 fps); the frames are spread over what was read.
    max_video_scan_frames: int = 100_000
    # Bytes of one server reply read at most (the openai backend, the served judge).
    max_reply_bytes: int = 64 * 1024 * 1024
    # Characters of all the inputs of one judge request together (its work is bounded).
    max_judge_request_chars: int = 4_000_000
    # Chat server, checked before tokenising: a request's prompt text in characters (a
    # 38 MB prompt cost 5 GiB and held the model for everyone), and its stop strings,
    # how many and their characters together (the stop-string tables grow with both).
    # A MERA prompt is a few thousand characters; its stops, a few short strings.
    max_prompt_chars: int = 400_000
    max_stop_strings: int = 16
    max_stop_chars: int = 1_024

    def with_overrides(self, **values) -> Limits:
        """A copy with the given (non-None) limits replaced."""
        return replace(self, **{k: v for k, v in values.items() if v is not None})

    def as_record(self) -> dict:
        """The limits as recorded in results files."""
        return asdict(self)


DEFAULT_LIMITS = Limits()

# The memory rule: what decoding costs at its peak, in bytes, from the header alone.
# Every decode path (build's checks, the runner, the chat server) asks these before it
# allocates anything, and refuses what is above ``memory_budget``.
AUDIO_BLOCK_FRAMES = 1 << 18  # source frames read at once when a clip is decoded in blocks


# What one decoded pixel costs at the peak of the path that decodes it, measured (peak
# RSS, tests/test_memory_budget.py): Pillow holds RGB as 4 bytes a pixel, a mode
# conversion holds the source and the result (8), and the processor's copies of the
# full-size picture (numpy arrays, its own resize) come on top of the 4 it is handed:
# about 14 bytes a pixel all told for Qwen2-VL's processor. 16 covers them.
IMAGE_PEAK_BYTES = 16
# A video decoder's own frames (references, one per decoding thread, the RGB frame being
# converted), per pixel of a frame, with at most VIDEO_THREADS threads (measured: about
# 29 with 3 threads).
VIDEO_DECODER_BYTES = 48
VIDEO_THREADS = 4
# Frames a video is priced at where the frame count is not yet known (`build`): what
# `evaluate` sends by default (--max-frames), so that `build` refuses what it would.
DEFAULT_VIDEO_FRAMES = 8


def image_bytes(width: int, height: int) -> int:
    """A picture at the peak of its decoding: decoded, converted to RGB, and the
    processor's copies of it (:data:`IMAGE_PEAK_BYTES` a pixel)."""
    return width * height * IMAGE_PEAK_BYTES


def output_frames(frames: int, rate: int, target: int) -> int:
    """Samples of a clip of ``frames`` at ``rate`` resampled to ``target``."""
    return -(-frames * target // rate)


def audio_bytes(frames: int, channels: int, rate: int, target: int) -> tuple[int, int]:
    """(whole, blocks): the peak of decoding a clip to mono at ``target`` Hz all at once
    (float32 samples of every channel, the float64 copy and result of the resampling)
    and block by block (the float32 output, one block of every channel)."""
    out = output_frames(frames, rate, target)
    whole = frames * (channels * 4 + 12) + out * 12
    block = min(frames, AUDIO_BLOCK_FRAMES)
    return whole, out * 4 + block * (channels * 4 + 12) + output_frames(block, rate, target) * 12


def video_bytes(width: int, height: int, frames: int = DEFAULT_VIDEO_FRAMES) -> int:
    """A video sampled to ``frames`` pictures: each kept frame costs what a picture of
    its size costs (:func:`image_bytes`, which also covers the twice ``frames`` held
    while the count is unknown), plus the decoder's own frames."""
    return frames * image_bytes(width, height) + width * height * VIDEO_DECODER_BYTES


# Limit -> the command-line option that overrides it.
OPTION_NAMES = {name: "--" + name.replace("_", "-") for name in Limits.__dataclass_fields__}
