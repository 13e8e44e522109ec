"""Media items: the bytes of one image, audio clip or video, read lazily and decoded by
the library made for it (Pillow for pictures).

A request carries one :class:`Media` per placeholder. Only its sha256 is kept for
long (the sample log records it); the bytes are read for the batch being generated.
"""
from __future__ import annotations

import base64
import io
import warnings
from dataclasses import dataclass
from pathlib import Path

from .errors import MeraError


# The most pixels a picture may declare before it is decoded: PIL's own "decompression
# bomb" error threshold (2 x Image.MAX_IMAGE_PIXELS, about 179 MP). A bigger declared
# size is refused with a MeraError before any pixel is read.
MAX_DECODE_PIXELS = 2 * 89_478_485


@dataclass
class Media:
    kind: str                      # image | audio | video
    sha256: str
    data: bytes | None = None      # filled for the batch being generated only
    field: str = ""

    def image(self, max_pixels: int | None = None):
        """The decoded picture in RGB, downscaled when it has more than ``max_pixels``."""
        img = self._open_image()
        try:
            img = img.convert("RGB")
        except OSError as err:  # truncated or corrupt pixel data
            raise MeraError(f"{self._where()}: cannot decode the image ({err})") from None
        return limit_pixels(img, max_pixels)

    def data_uri(self, max_pixels: int | None = None) -> str:
        """The item as a base64 data URI, as the official harness sends it to an API
        server: a picture as its own bytes (re-encoded as PNG only when ``max_pixels``
        downscales it), audio as a WAV at the clip's own rate, a video as the whole file."""
        raw = self._bytes()
        if self.kind == "image":
            with self._open_image() as img:
                too_big = bool(max_pixels) and img.width * img.height > max_pixels
            if too_big:
                buf = io.BytesIO()
                self.image(max_pixels).save(buf, format="PNG")
                raw, mime = buf.getvalue(), "image/png"
            else:
                mime = _image_mime(raw)
        elif self.kind == "audio":
            raw, mime = wav_bytes(raw, self._where()), "audio/wav"
        else:
            mime = _av_mime(self.kind, raw)
        return f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}"

    def _open_image(self):
        """The picture opened lazily (header only), its declared size checked."""
        from PIL import Image, UnidentifiedImageError

        try:
            with warnings.catch_warnings():  # the size is checked here, below
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                img = Image.open(io.BytesIO(self._bytes()))
        except Image.DecompressionBombError as err:
            raise MeraError(f"{self._where()}: refused, a decompression bomb ({err})") from None
        except (UnidentifiedImageError, OSError) as err:
            raise MeraError(f"{self._where()}: not a readable image ({err})") from None
        if img.width * img.height > MAX_DECODE_PIXELS:
            raise MeraError(f"{self._where()}: refused, a decompression bomb (it declares "
                            f"{img.width}x{img.height} pixels, over the {MAX_DECODE_PIXELS} "
                            f"pixel limit)")
        return img

    def _where(self) -> str:
        return f"{self.kind} {self.field or 'item'} (sha256 {self.sha256[:12]})"

    def _bytes(self) -> bytes:
        if self.data is None:
            raise RuntimeError("media bytes were not loaded for this batch (load_media)")
        return self.data


def wav_bytes(raw: bytes, where: str = "audio") -> bytes:
    """The clip as a 16-bit PCM WAV at its own sampling rate, channels averaged to mono:
    what the official loader sends (``datasets`` decodes to mono, ``soundfile`` writes)."""
    import soundfile

    try:
        samples, rate = soundfile.read(io.BytesIO(raw), dtype="float64", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, TypeError) as err:
        raise MeraError(f"{where}: cannot decode the audio ({err})") from None
    buf = io.BytesIO()
    soundfile.write(buf, samples.mean(axis=1), rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def limit_pixels(img, max_pixels: int | None):
    """Downscale keeping the aspect ratio so that width*height <= max_pixels."""
    if not max_pixels or img.width * img.height <= max_pixels:
        return img
    scale = (max_pixels / (img.width * img.height)) ** 0.5
    size = (max(1, int(img.width * scale)), max(1, int(img.height * scale)))
    return img.resize(size, resample=3)  # bicubic


def _image_mime(raw: bytes) -> str:
    for magic, mime in ((b"\x89PNG", "image/png"), (b"\xff\xd8", "image/jpeg"),
                        (b"GIF8", "image/gif"), (b"RIFF", "image/webp"), (b"BM", "image/bmp")):
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
    return "video/webm" if raw.startswith(b"\x1a\x45\xdf\xa3") else "video/mp4"


def media_bytes(value) -> bytes:
    """The bytes of an undecoded datasets media value ({"bytes", "path"})."""
    if isinstance(value, dict):
        if value.get("bytes") is not None:
            return value["bytes"]
        path = value.get("path")
    else:
        path = value
    if path and Path(path).is_file():
        return Path(path).read_bytes()
    raise MeraError(f"a media item has neither bytes nor a readable file ({path!r})")


def media_kind(placeholder: str) -> str:
    return placeholder.split("_")[0]
