"""Media items: the bytes of one image, audio clip or video, read lazily and decoded by
the library made for it (Pillow for pictures).

A request carries one :class:`Media` per placeholder. Only its sha256 is kept for
long (the sample log records it); the bytes are read for the batch being generated.
"""
from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path

from .errors import MeraError


@dataclass
class Media:
    kind: str                      # image | audio | video
    sha256: str
    data: bytes | None = None      # filled for the batch being generated only
    field: str = ""

    def image(self, max_pixels: int | None = None):
        """The decoded picture in RGB, downscaled when it has more than ``max_pixels``."""
        from PIL import Image

        img = Image.open(io.BytesIO(self._bytes()))
        img = img.convert("RGB")
        return limit_pixels(img, max_pixels)

    def data_uri(self, max_pixels: int | None = None) -> str:
        raw = self._bytes()
        if self.kind == "image":
            mime = _image_mime(raw)
            if max_pixels:
                from PIL import Image

                with Image.open(io.BytesIO(raw)) as img:
                    too_big = img.width * img.height > max_pixels
                if too_big:
                    buf = io.BytesIO()
                    self.image(max_pixels).save(buf, format="PNG")
                    raw, mime = buf.getvalue(), "image/png"
        else:
            mime = _av_mime(self.kind, raw)
        return f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}"

    def _bytes(self) -> bytes:
        if self.data is None:
            raise RuntimeError("media bytes were not loaded for this batch (load_media)")
        return self.data


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
