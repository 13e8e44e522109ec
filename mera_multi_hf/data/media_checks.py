"""Does a raw media file decode, within the limits? The checks `build` runs on every file.

A file that passes is one the runner can decode: an image is fully decoded (Pillow),
an audio clip has its header checked against the limits and its first block of samples
decoded (soundfile), a video has its header checked and its first frame decoded (PyAV).
Sizes, rates, channels and durations come from the header and are checked before any
pixel or sample is decoded, so a small hostile file cannot make the check itself costly.

:func:`check_all` spreads the checks over worker processes: the files of a split are
checked in parallel, in order.
"""

from __future__ import annotations

import functools
import io
import os
import sys
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields

from mera_multi_hf.core.arguments import Options, opt
from mera_multi_hf.core.limits import (
    DEFAULT_LIMITS,
    DEFAULT_VIDEO_FRAMES,
    OPTION_NAMES,
    Limits,
    audio_bytes,
    image_bytes,
    video_bytes,
)


def _raise(option: str) -> str:
    return f"raise it with {OPTION_NAMES[option]} if this is intended"


def budget_problem(cost: int, limits: Limits, what: str) -> str | None:
    """Why decoding ``what`` (``cost`` bytes by the memory rule of limits.py) is refused."""
    if cost > limits.memory_budget:
        return (
            f"{what} would take {cost / 2**20:.0f} MiB decoded, above the memory budget "
            f"of {limits.memory_budget / 2**20:.0f} MiB ({_raise('memory_budget')})"
        )
    return None


def pixel_problem(width: int, height: int, limits: Limits, what: str = "image") -> str | None:
    if width * height > limits.max_image_pixels:
        return (
            f"{what} declares {width}x{height} = {width * height} pixels, above the limit "
            f"of {limits.max_image_pixels} ({_raise('max_image_pixels')})"
        )
    if what == "image":
        return budget_problem(image_bytes(width, height), limits, f"the {width}x{height} picture")
    return None


@functools.cache
def _quiet_bomb_warning() -> None:
    """Pillow warns on pictures between half its bomb limit and the limit; the pixel limit
    here decides instead. A filter set once, because warnings.catch_warnings is not
    thread-safe."""
    from PIL import Image

    warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)


def image_problem(data: bytes, limits: Limits = DEFAULT_LIMITS) -> str | None:
    """Why these bytes are not an image Pillow fully decodes within the pixel limit, or None.
    The declared size is checked on the header first (a decompression bomb is never
    decoded); data after the image's end (a camera's vendor trailer) is harmless.

    A JPEG is decoded through all its compressed data at 1/8 scale and, a colour one,
    to grey (libjpeg's DCT scaling and its YCbCr-to-grey output, Pillow's ``draft``):
    every component's data is still read and entropy-decoded, only the colour conversion
    is left out, so it fails exactly where a full decode fails (tests/test_media_limits.py
    checks this against the runner's full decode on damaged files), in about a third of the
    time."""
    from PIL import Image

    _quiet_bomb_warning()
    try:
        with Image.open(io.BytesIO(data)) as img:
            why = pixel_problem(*img.size, limits)
            if why is None:
                if img.format == "JPEG":
                    img.draft("L", (max(1, img.width // 8), max(1, img.height // 8)))
                img.load()  # the whole picture (the first frame of an animation)
    except Image.DecompressionBombError as err:
        return f"image too large to decode safely ({err})"
    except Image.UnidentifiedImageError:
        return "corrupt image (UnidentifiedImageError: not a format Pillow recognises)"
    except Exception as err:  # PIL raises many types for bad data
        return f"corrupt image ({type(err).__name__}: {err})"
    return why


def audio_header_problem(
    rate: int, channels: int, frames: int, limits: Limits, target: int | None = None
) -> str | None:
    """Why an audio header is refused (before anything is decoded or resampled), or None.
    ``target``: the rate it is resampled to (None: its own, as `build` and the WAV sent
    to a server have it); decoded in blocks when whole it would exceed the budget."""
    if rate <= 0 or channels <= 0 or frames <= 0:
        return f"audio without samples (rate {rate}, {channels} channels, {frames} frames)"
    if not limits.min_audio_rate <= rate <= limits.max_audio_rate:
        return (
            f"audio sample rate {rate} Hz is outside {limits.min_audio_rate}.."
            f"{limits.max_audio_rate} Hz ({_raise('max_audio_rate')} or "
            f"{OPTION_NAMES['min_audio_rate']} if this is intended)"
        )
    if channels > limits.max_audio_channels:
        return (
            f"audio has {channels} channels, above the limit of "
            f"{limits.max_audio_channels} ({_raise('max_audio_channels')})"
        )
    if frames / rate > limits.max_audio_seconds:
        return (
            f"audio lasts {frames / rate:.0f} s, above the limit of "
            f"{limits.max_audio_seconds:g} s ({_raise('max_audio_seconds')})"
        )
    return budget_problem(
        min(audio_bytes(frames, channels, rate, target or rate)),
        limits,
        f"the {channels}-channel {frames / rate:.0f} s clip at {target or rate} Hz",
    )


def audio_problem(data: bytes, limits: Limits = DEFAULT_LIMITS) -> str | None:
    """Why these bytes are not audio that decodes within the limits, or None: the header
    (rate, channels, length) is checked, then the first block of samples decoded."""
    import soundfile

    try:
        with soundfile.SoundFile(io.BytesIO(data)) as clip:
            why = audio_header_problem(clip.samplerate, clip.channels, clip.frames, limits)
            if why is None and len(clip.read(4096, dtype="float32", always_2d=True)) == 0:
                why = "audio whose first samples cannot be decoded"
    except Exception as err:  # libsndfile raises several types for bad data
        return f"corrupt or unsupported audio ({type(err).__name__}: {err})"
    return why


def video_seconds(container, stream) -> float:
    """The declared duration in seconds (the stream's, else the container's), 0 if unknown."""
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    return container.duration / 1_000_000 if container.duration else 0.0


def video_header_problem(
    container, limits: Limits, frames: int = DEFAULT_VIDEO_FRAMES
) -> str | None:
    """Why an opened video is refused by its header, or None: its frame size, its length
    and the memory rule for ``frames`` sampled frames (`build`: the frames `evaluate`
    samples by default, so that a video `build` accepts is one `evaluate` decodes)."""
    if not container.streams.video:
        return "the file has no video stream"
    stream = container.streams.video[0]
    width, height = stream.width or 0, stream.height or 0
    why = pixel_problem(width, height, limits, "video frames")
    seconds = video_seconds(container, stream)
    if why is None and seconds > limits.max_video_seconds:
        why = (
            f"video lasts {seconds:.0f} s, above the limit of {limits.max_video_seconds:g} s "
            f"({_raise('max_video_seconds')})"
        )
    if why is None:
        what = f"{frames} frames of {width}x{height}"
        why = budget_problem(video_bytes(width, height, frames), limits, what)
    return why


def video_problem(data: bytes, limits: Limits = DEFAULT_LIMITS) -> str | None:
    """Why these bytes are not a video whose header is within the limits and whose first
    frame decodes (PyAV), or None."""
    import av

    try:
        with av.open(io.BytesIO(data), mode="r", metadata_errors="ignore") as container:
            why = video_header_problem(container, limits)
            if why is None and next(container.decode(video=0), None) is None:
                why = "the video has no decodable frame"
    except Exception as err:  # FFmpeg errors come in many types
        return f"corrupt or unsupported video ({type(err).__name__}: {err})"
    return why


# modality -> the check of one media file's bytes (a message, or None when it is fine)
MEDIA_CHECKS: dict[str, Callable[[bytes, Limits], str | None]] = {
    "image": image_problem,
    "audio": audio_problem,
    "video": video_problem,
}


WINDOW_BYTES = 256 * 2**20  # media bytes held by the checks in flight, at most (about)
BATCH = 32  # items handed to a worker process at once (one pickle, one result, per batch)


def _run_batch(batch: list) -> list:
    """The results of a batch of items' checks (in a worker process)."""
    return [[check() for check in checks] for checks in batch]


WORKER_NICENESS = 5  # the decoding workers yield a shared core to the reading process


def _lower_priority() -> None:
    """In each worker: run below the reading process. It checks, encodes and writes every
    record and so sets the pace; the workers use what it leaves of the cores (measured
    on two cores: three processes sharing them evenly left the reading one two thirds of
    a core)."""
    if hasattr(os, "nice"):  # not on Windows
        os.nice(WORKER_NICENESS)


def _pool(workers: int):
    """Worker processes: the decoders' Python parts (Pillow parses JPEG headers in Python)
    hold the GIL, so threads could not keep a second core busy. As many as there are
    CPUs, although the reading process needs one: the decoding must keep up with it, and
    the workers, at a lower priority, take only what the reading process leaves. Forked on
    Linux (nothing to import again), else started as the platform does by default (macOS:
    fork is unsafe there). Imported here: `build --help` and `evaluate` load this module
    for its options."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_lower_priority)


def check_all(
    items: Iterable,
    checks: Callable[[object], list],
    workers: int,
    size: Callable[[object], int] = lambda item: 0,
    ahead: int = 4,
) -> Iterator[tuple[object, list]]:
    """``(item, results)`` for each item in order, where ``checks(item)`` is a list of
    zero-argument picklable checks, run in this process (``workers`` 1, or a split too
    small to fill one batch: starting processes would cost more), else in ``workers``
    worker processes, BATCH items at a time, while this one goes on reading.
    At most ``ahead`` batches per worker, and about WINDOW_BYTES of ``size(item)``, are
    in flight: memory stays bounded by the window, not by the split."""
    items = iter(items)
    batch, held, ended = [], 0, workers <= 1
    while not ended and len(batch) < BATCH and held <= WINDOW_BYTES:
        item = next(items, _END)
        ended = item is _END
        if not ended:
            batch.append((item, checks(item), size(item)))
            held += batch[-1][2]
    if not ended:  # more than one batch: worth the worker processes
        yield from _in_workers(batch, held, items, checks, size, workers, ahead)
        return
    for item, item_checks, _ in batch:
        yield item, [check() for check in item_checks]
    for item in items:
        yield item, [check() for check in checks(item)]


_END = object()


def _in_workers(batch, held, items, checks, size, workers, ahead):
    """check_all's worker processes, from a first ``batch`` holding ``held`` bytes."""
    window: deque = deque()  # (batch of (item, checks, size), future), oldest first
    with _pool(workers) as pool:
        while True:
            if batch and (len(batch) >= BATCH or held > WINDOW_BYTES):
                window.append((batch, pool.submit(_run_batch, [c for _, c, _ in batch])))
                batch = []
            while window and (len(window) >= workers * ahead or held > WINDOW_BYTES):
                held -= yield from _done(window.popleft())
            item = next(items, _END)
            if item is _END:
                break
            batch.append((item, checks(item), size(item)))
            held += batch[-1][2]
        if batch:
            window.append((batch, pool.submit(_run_batch, [c for _, c, _ in batch])))
        while window:
            yield from _done(window.popleft())


def _done(sent: tuple):
    """Yield a batch's ``(item, results)``; return the bytes it held."""
    from concurrent.futures.process import BrokenProcessPool

    batch, future = sent
    try:
        found = future.result()
    except BrokenProcessPool:  # a decoder crashed on a file: a problem, not a traceback
        from mera_multi_hf.core.errors import MeraError

        raise MeraError(
            "a media decoder crashed on one of the files (its worker process "
            "died); build with --num-proc 1 to find which"
        ) from None
    for (item, _, _), results in zip(batch, found):
        yield item, results
    return sum(held for _, _, held in batch)


# The limits media are checked against (build and decode), with what each option does;
# every one is an option of `build` and `evaluate` (MediaLimitOptions, below).
MEDIA_LIMIT_HELP = {
    "max_image_pixels": "refuse pictures (and video frames) whose header declares more pixels",
    "min_audio_rate": "refuse audio whose header declares a lower sample rate (Hz)",
    "max_audio_rate": "refuse audio whose header declares a higher sample rate (Hz)",
    "max_audio_channels": "refuse audio with more channels",
    "max_audio_seconds": "refuse longer audio (seconds, from the header)",
    "max_video_seconds": "refuse longer videos (seconds, from the header)",
    "max_video_frames": "the most frames a video may give the model (--max-frames is "
    "checked against it)",
    "memory_budget": "bytes one media item, one batch's media or one server request's "
    "media may take decoded (docs/guarantees.md: the memory budget)",
    "max_video_scan_frames": "frames decoded at most from a video whose container reports "
    "no duration or frame count",
}


def media_limits(values: dict, base: Limits = DEFAULT_LIMITS) -> Limits:
    """``base`` with the given media limits (None: keep) replaced; a limit that is not a
    positive number, or a rate range that is empty, is a MeraError naming its option."""
    from mera_multi_hf.core.errors import MeraError

    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise MeraError(f"{OPTION_NAMES[name]} {value!r}: must be a positive number")
    limits = base.with_overrides(**values)
    if limits.min_audio_rate > limits.max_audio_rate:
        raise MeraError(
            f"{OPTION_NAMES['min_audio_rate']} {limits.min_audio_rate} is above "
            f"{OPTION_NAMES['max_audio_rate']} {limits.max_audio_rate}"
        )
    return limits


def _limit(name: str):
    """A media limit's option: its text and default come from the one set of limits; a
    limit is a positive number."""
    default = getattr(DEFAULT_LIMITS, name)
    domain = dict(above=0, high=10**7) if isinstance(default, float) else dict(low=1)
    return opt(None, f"{MEDIA_LIMIT_HELP[name]} (default: {default})", metavar="N", **domain)


@dataclass
class MediaLimitOptions(Options):
    """media limits and the memory budget (checked on each file's header, before decoding)"""

    max_image_pixels: int | None = _limit("max_image_pixels")
    min_audio_rate: int | None = _limit("min_audio_rate")
    max_audio_rate: int | None = _limit("max_audio_rate")
    max_audio_channels: int | None = _limit("max_audio_channels")
    max_audio_seconds: float | None = _limit("max_audio_seconds")
    max_video_seconds: float | None = _limit("max_video_seconds")
    max_video_frames: int | None = _limit("max_video_frames")
    memory_budget: int | None = _limit("memory_budget")
    max_video_scan_frames: int | None = _limit("max_video_scan_frames")

    def limits(self):
        """The default limits with the ones given replaced (a bad one: MeraError)."""
        return media_limits({f.name: getattr(self, f.name) for f in fields(MediaLimitOptions)})
