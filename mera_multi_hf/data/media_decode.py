"""Media items: the bytes of one image, audio clip or video, read lazily and decoded by
the library made for it (Pillow for pictures).

A request carries one :class:`Media` per placeholder. Only its sha256 is kept for
long (the sample log records it); the bytes are read for the batch being generated.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import struct
import warnings
import zlib
from dataclasses import dataclass
from dataclasses import field as _field
from math import gcd

from mera_multi_hf.core.errors import MediaError, MeraError
from mera_multi_hf.core.input_files import InputFileError, read_bytes
from mera_multi_hf.core.limits import (
    AUDIO_BLOCK_FRAMES,
    DEFAULT_LIMITS,
    VIDEO_THREADS,
    Limits,
    audio_bytes,
    image_bytes,
    output_frames,
    video_bytes,
)
from mera_multi_hf.data.media_checks import (
    audio_header_problem,
    pixel_problem,
    video_header_problem,
)


@dataclass
class Media:
    kind: str  # image | audio | video
    sha256: str
    data: bytes | None = None  # filled for the batch being generated only
    field: str = ""
    # what the item may declare (pixels, audio rate, channels and length, video length),
    # checked on its header before anything is decoded or resampled
    limits: Limits = DEFAULT_LIMITS
    # what decoding did that the record of the example should say (a video scan cut short)
    notes: list = _field(default_factory=list)

    def image(self, max_pixels: int | None = None):
        """The decoded picture in RGB, downscaled when it has more than ``max_pixels``."""
        img = self._open_image()
        try:  # an RGB picture is used as decoded: convert() would hold a second copy
            img = img.convert("RGB") if img.mode != "RGB" else _loaded(img)
        except OSError as err:  # truncated or corrupt pixel data
            raise MediaError(f"{self._where()}: cannot decode the image ({err})") from None
        return limit_pixels(img, max_pixels)

    def audio(self, rate: int):
        """The clip decoded (soundfile), channels averaged to mono, resampled to ``rate``
        Hz: a float32 numpy array, as a feature extractor takes it. A clip that would
        exceed the memory budget decoded whole is decoded in blocks (its cost: the
        output), or refused before anything is allocated."""
        return decode_audio(self._bytes(), self._where(), limits=self.limits, target=rate)[0]

    def frames(self, max_frames: int, max_pixels: int | None = None) -> list:
        """Up to ``max_frames`` RGB pictures spread evenly over the video, decoded
        streaming (PyAV): only the kept frames are held, whatever the video's length."""
        try:
            return sample_frames(
                io.BytesIO(self._bytes()), max_frames, max_pixels, self.limits, self.notes
            )
        except MediaError as err:
            raise MediaError(f"{self._where()}: {err}") from None

    def cost(self, max_frames: int = 1) -> int:
        """The bytes decoding this item takes by the memory rule (limits.py), from its
        header alone; 0 for a header that does not read (decoding it will say why)."""
        try:
            return _header_cost(self.kind, self._bytes(), max_frames)
        except Exception:  # noqa: BLE001 - any reader error: decoding refuses it later
            return 0

    def data_uri(self, max_pixels: int | None = None) -> str:
        """The item as a base64 data URI, as the official harness sends it to an API
        server: a picture as its own bytes (re-encoded as PNG only when ``max_pixels``
        downscales it), audio as a WAV at the clip's own rate, a video as the whole file."""
        raw = self._bytes()
        if self.kind == "image":
            width, height = self._declared_size()
            if max_pixels and width * height > max_pixels:
                buf = io.BytesIO()
                self.image(max_pixels).save(buf, format="PNG")
                raw, mime = buf.getvalue(), "image/png"
            else:
                mime = _image_mime(raw)
        elif self.kind == "audio":
            raw, mime = wav_bytes(raw, self._where(), self.limits), "audio/wav"
        else:
            mime = _av_mime(self.kind, raw)
        return f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}"

    @property
    def mime(self) -> str:
        """The media type of its bytes, as a data URI names it."""
        raw = self._bytes()
        return _image_mime(raw) if self.kind == "image" else _av_mime(self.kind, raw)

    def _open_image(self):
        """The picture opened lazily (header only), its declared size checked."""
        from PIL import Image, UnidentifiedImageError

        try:
            with warnings.catch_warnings():  # the size is checked here, below
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                img = Image.open(io.BytesIO(self._bytes()))
        except Image.DecompressionBombError as err:
            raise MediaError(f"{self._where()}: refused, a decompression bomb ({err})") from None
        except (UnidentifiedImageError, OSError) as err:
            raise MediaError(f"{self._where()}: not a readable image ({err})") from None
        why = pixel_problem(img.width, img.height, self.limits)
        if why:
            raise MediaError(f"{self._where()}: refused, a decompression bomb ({why})")
        return img

    def _declared_size(self) -> tuple[int, int]:
        """(width, height) as the picture's header declares them, refused over the pixel
        limit and the memory budget as :meth:`_open_image` refuses them; a PNG, GIF or
        JPEG header is read here (opening every picture with Pillow took a third of an
        API request's CPU), another format with Pillow."""
        size = declared_size(self._bytes())
        if size is None:
            with self._open_image() as img:
                return img.width, img.height
        why = pixel_problem(*size, self.limits)
        if why:
            raise MediaError(f"{self._where()}: refused, a decompression bomb ({why})")
        return size

    def _where(self) -> str:
        return f"{self.kind} {self.field or 'item'} (sha256 {self.sha256[:12]})"

    def _bytes(self) -> bytes:
        if self.data is None:
            raise RuntimeError("media bytes were not loaded for this batch (load_media)")
        return self.data


def _loaded(img):
    img.load()
    return img


def _header_cost(kind: str, raw: bytes, max_frames: int) -> int:
    if kind == "image":
        from PIL import Image

        with Image.open(io.BytesIO(raw)) as img:
            return image_bytes(img.width, img.height)
    if kind == "audio":
        import soundfile

        with soundfile.SoundFile(io.BytesIO(raw)) as clip:
            rate = clip.samplerate
            return min(audio_bytes(clip.frames, clip.channels, rate, rate))
    import av

    with av.open(io.BytesIO(raw), mode="r", metadata_errors="ignore") as container:
        stream = container.streams.video[0]
        return video_bytes(stream.width, stream.height, max_frames)


def wav_bytes(raw: bytes, where: str = "audio", limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The clip as a 16-bit PCM WAV at its own sampling rate, channels averaged to mono:
    what the official loader sends (``datasets`` decodes to mono, ``soundfile`` writes);
    written block by block when the whole clip would exceed the memory budget."""
    import soundfile

    buf = io.BytesIO()
    with _open_audio(raw, where, limits, None) as (clip, whole):
        if whole:
            samples = _read_mono(clip, where, "float64")
            soundfile.write(buf, samples, clip.samplerate, format="WAV", subtype="PCM_16")
            return buf.getvalue()
        with soundfile.SoundFile(
            buf, "w", clip.samplerate, 1, format="WAV", subtype="PCM_16"
        ) as out:
            for block in clip.blocks(AUDIO_BLOCK_FRAMES, dtype="float64", always_2d=True):
                out.write(block.mean(axis=1))
    return buf.getvalue()


def decode_audio(
    raw: bytes,
    where: str = "audio",
    dtype: str = "float32",
    limits: Limits = DEFAULT_LIMITS,
    target: int | None = None,
):
    """(mono samples, rate) of an audio file's bytes (soundfile: WAV, FLAC, OGG, MP3),
    resampled to ``target`` Hz when one is given; anything it cannot read, or whose
    header is over the limits or the memory budget (checked before any sample is read),
    is a MediaError naming the item."""
    with _open_audio(raw, where, limits, target) as (clip, whole):
        rate = clip.samplerate
        if whole:
            samples = _read_mono(clip, where, dtype)
            return (samples if target is None else resample(samples, rate, target)), target or rate
        return _resampled_blocks(clip, target or rate, where), target or rate


@contextlib.contextmanager
def _open_audio(raw: bytes, where: str, limits: Limits, target: int | None):
    """(the open clip, whether it fits the budget decoded whole), its header checked."""
    import soundfile

    try:
        with soundfile.SoundFile(io.BytesIO(raw)) as clip:
            rate, channels, frames = clip.samplerate, clip.channels, clip.frames
            why = audio_header_problem(rate, channels, frames, limits, target)
            if why:
                raise MediaError(f"{where}: refused: {why}")
            whole = audio_bytes(frames, channels, rate, target or rate)[0] <= limits.memory_budget
            if not (whole or clip.seekable()):
                raise MediaError(
                    f"{where}: refused: too long to decode whole within the memory "
                    f"budget, and not seekable to decode in blocks"
                )
            yield clip, whole
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as err:
        raise MediaError(f"{where}: cannot decode the audio ({err})") from None


def _read_mono(clip, where: str, dtype: str):
    samples = clip.read(dtype=dtype, always_2d=True)
    if samples.size == 0:
        raise MediaError(f"{where}: the audio has no samples")
    return samples.mean(axis=1)


def _resampled_blocks(clip, target: int, where: str):
    """The clip mixed down and resampled block by block into one float32 array: each
    block is read with enough samples either side for the polyphase filter (scipy's
    ``resample_poly`` reaches ``10 * max(up, down)`` upsampled samples), so every output
    sample is the one the whole-clip resampling gives, up to rounding."""
    import numpy as np

    rate, total = clip.samplerate, clip.frames
    step = gcd(rate, target)
    up, down = target // step, rate // step
    context = -(-(10 * max(up, down) // up + 2) // down) * down  # a multiple of ``down``
    block = max(down, AUDIO_BLOCK_FRAMES // down * down)
    out = np.empty(output_frames(total, rate, target), dtype=np.float32)
    for start in range(0, total, block):
        first, end = max(0, start - context), min(total, start + block + context)
        clip.seek(first)
        mono = clip.read(end - first, dtype="float32", always_2d=True).mean(axis=1)
        if len(mono) < end - first:
            raise MediaError(f"{where}: the audio ends before its header says")
        done = resample(mono, rate, target)
        lo, hi = start * up // down, min(len(out), (start + block) * up // down)
        skip = (start - first) * up // down
        out[lo:hi] = done[skip : skip + hi - lo]
    return out


def resample(samples, rate: int, target: int):
    """``samples`` at ``rate`` Hz resampled to ``target`` Hz (polyphase filtering,
    scipy's ``resample_poly``, the method librosa's "polyphase" mode uses)."""
    import numpy as np

    if rate == target:
        return np.asarray(samples, dtype=np.float32)
    from scipy.signal import resample_poly

    step = gcd(int(rate), int(target))
    return resample_poly(samples, target // step, rate // step).astype(np.float32)


def frame_indices(total: int, wanted: int) -> list[int]:
    """``wanted`` frame numbers spread evenly over ``total`` frames (each the middle of
    its share), all of them when there are fewer."""
    if total <= wanted:
        return list(range(total))
    return [int((i + 0.5) * total / wanted) for i in range(wanted)]


def sample_frames(
    source,
    max_frames: int,
    max_pixels: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    notes: list | None = None,
) -> list:
    """Up to ``max_frames`` frames of a video file (path or file object) as RGB PIL
    pictures, spread evenly; decoded streaming, only the kept frames converted and held.

    The frame count comes from the container (or duration x rate); where it is unknown
    the frames are kept at a stride that doubles whenever twice ``max_frames`` are held,
    so memory stays bounded by the frame limit either way, and decoding stops after
    ``limits.max_video_scan_frames`` (said in ``notes``). The header is checked against
    ``limits`` and the memory budget first, and ``max_frames`` may not exceed its frames
    per clip."""
    import av

    if max_frames > limits.max_video_frames:
        raise MeraError(
            f"{max_frames} frames per video asked, above the limit of "
            f"{limits.max_video_frames} (--max-video-frames)"
        )
    try:
        with av.open(source, mode="r", metadata_errors="ignore") as container:
            # the one rule, as `build` checks it (there at the default frame count)
            why = video_header_problem(container, limits, max_frames)
            if why:
                raise MediaError(f"refused: {why}")
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            stream.thread_count = VIDEO_THREADS  # the decoder's frames, as priced
            total = _frame_count(stream)
            frames = (
                _known_count(container, stream, frame_indices(total, max_frames))
                if total
                else _unknown_count(
                    container, stream, max_frames, limits.max_video_scan_frames, notes
                )
            )
    except av.error.FFmpegError as err:
        raise MediaError(f"cannot decode the video ({err})") from None
    if not frames:
        raise MediaError("the video has no decodable frame")
    return [limit_pixels(f, max_pixels) for f in frames]


def _frame_count(stream) -> int:
    if stream.frames:
        return int(stream.frames)
    if stream.duration and stream.time_base and stream.average_rate:
        return int(stream.duration * stream.time_base * stream.average_rate)
    return 0


def _known_count(container, stream, wanted: list[int]) -> list:
    keep, out, last = set(wanted), [], None
    for number, frame in enumerate(container.decode(stream)):
        last = frame
        if number in keep:
            out.append(frame.to_image())
            if len(out) == len(keep):
                return out
    if last is not None and len(out) < len(keep):  # the container overstated its count
        out.append(last.to_image())
    return out


def _unknown_count(container, stream, max_frames: int, scan: int, notes: list | None) -> list:
    kept, stride = [], 1
    for number, frame in enumerate(container.decode(stream)):
        if number >= scan:  # spread over what was read, and say so
            if notes is not None:
                notes.append(
                    f"video without a duration or frame count: frames sampled from "
                    f"its first {scan} only (--max-video-scan-frames)"
                )
            break
        if number % stride == 0:
            kept.append(frame.to_image())
            if len(kept) >= 2 * max_frames:
                kept, stride = kept[::2], stride * 2
    return [kept[i] for i in frame_indices(len(kept), max_frames)]


def limit_pixels(img, max_pixels: int | None):
    """Downscale keeping the aspect ratio so that width*height <= max_pixels."""
    if not max_pixels or img.width * img.height <= max_pixels:
        return img
    scale = (max_pixels / (img.width * img.height)) ** 0.5
    size = (max(1, int(img.width * scale)), max(1, int(img.height * scale)))
    return img.resize(size, resample=3)  # bicubic


def declared_size(raw: bytes) -> tuple[int, int] | None:
    """(width, height) that a PNG (its header's checksum right), GIF or JPEG header
    declares, as Pillow reads them; None for another format or a header that does not
    read."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n") and raw[12:16] == b"IHDR" and len(raw) >= 33:
        if zlib.crc32(raw[12:29]) == int.from_bytes(raw[29:33], "big"):
            return struct.unpack(">II", raw[16:24])
        return None
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        return struct.unpack("<HH", raw[6:10])
    at = 2 if raw.startswith(b"\xff\xd8") else len(raw)
    while at + 9 <= len(raw) and raw[at] == 0xFF:  # JPEG: the segments up to the frame's
        marker = raw[at + 1]
        if marker == 0xFF or marker == 0x01 or 0xD0 <= marker <= 0xD8:  # fill, no length
            at += 1 if marker == 0xFF else 2
        elif 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a frame header
            height, width = struct.unpack(">HH", raw[at + 5 : at + 9])
            return width, height
        else:
            at += 2 + int.from_bytes(raw[at + 2 : at + 4], "big")
    return None


def _image_mime(raw: bytes) -> str:
    for magic, mime in (
        (b"\x89PNG", "image/png"),
        (b"\xff\xd8", "image/jpeg"),
        (b"GIF8", "image/gif"),
        (b"RIFF", "image/webp"),
        (b"BM", "image/bmp"),
    ):
        if raw.startswith(magic):
            return mime
    return "image/png"


def _av_mime(kind: str, raw: bytes) -> str:
    if kind == "audio":
        if raw.startswith(b"RIFF"):
            return "audio/wav"
        if raw.startswith((b"ID3", b"\xff\xfb")):
            return "audio/mpeg"
        if raw.startswith(b"fLaC"):
            return "audio/flac"
        if raw.startswith(b"OggS"):
            return "audio/ogg"
        return "audio/wav"
    # the official loader labels every video data URI video/mp4, whatever the container
    return "video/mp4"


@functools.cache
def _undecoded_audio_class():
    import datasets

    class UndecodedAudio(datasets.Audio):
        """``datasets.Audio`` whose writer stores a clip's bytes as they are.

        datasets 4+ imports torchcodec (and so FFmpeg's shared libraries) in
        ``Audio.encode_example`` even for bytes it only stores; this class stores
        ``{"bytes", "path"}`` without it. It is saved as a plain ``Audio`` feature and
        compares equal to ``Audio(decode=...)`` of the same ``decode``: exports declare
        the official ``Audio()``, load_task hands out ``Audio(decode=False)``."""

        def __init__(self, decode: bool = False):
            super().__init__(decode=decode)

        def encode_example(self, value):
            if (
                isinstance(value, dict)
                and "array" not in value
                and (value.get("bytes") is not None or value.get("path"))
            ):
                return {"bytes": value.get("bytes"), "path": value.get("path")}
            return super().encode_example(value)

        def __eq__(self, other):
            fields = ("sampling_rate", "decode", "num_channels", "stream_index")
            return isinstance(other, datasets.Audio) and all(
                getattr(self, f, None) == getattr(other, f, None) for f in fields
            )

        __hash__ = datasets.Audio.__hash__

    return UndecodedAudio


def __getattr__(name):  # UndecodedAudio made on first use: importing media stays light
    if name == "UndecodedAudio":
        return _undecoded_audio_class()
    raise AttributeError(name)


def media_bytes(value) -> bytes:
    """The bytes of an undecoded datasets media value ({"bytes", "path"})."""
    if isinstance(value, dict):
        if value.get("bytes") is not None:
            return value["bytes"]
        path = value.get("path")
    else:
        path = value
    why = "no path"
    if path:
        try:  # the one input reader: a FIFO or a link loop is refused, never waited on
            return read_bytes(path)
        except InputFileError as err:
            why = err.reason
    raise MediaError(f"a media item has neither bytes nor a readable file ({path!r}: {why})")
