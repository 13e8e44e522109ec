"""The picture sizes the openai backend reads from a PNG, GIF or JPEG header without
Pillow: the very sizes Pillow reads, and the same refusals (decompression bombs, the
pixel limit) on the API path as when the picture is decoded."""

from __future__ import annotations

import base64
import io
import struct
import zlib

import pytest
from PIL import Image

from mera_multi_hf.core.errors import MediaError
from mera_multi_hf.core.limits import Limits
from mera_multi_hf.data.media_decode import Media, declared_size


def _saved(size, fmt: str, **options) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (20, 120, 200)).save(buf, format=fmt, **options)
    return buf.getvalue()


def _exif() -> bytes:
    exif = Image.Exif()
    exif[0x010F] = "a camera maker"
    return exif.tobytes()


@pytest.mark.parametrize("size", [(1, 1), (37, 900), (640, 480), (1023, 17)])
@pytest.mark.parametrize(
    "fmt, options",
    [
        ("PNG", {}),
        ("GIF", {}),
        ("JPEG", {}),
        ("JPEG", {"progressive": True}),
        ("JPEG", {"exif": _exif()}),  # an APP1 segment before the frame header
    ],
)
def test_header_size_is_pillows(size, fmt, options):
    raw = _saved(size, fmt, **options)
    assert declared_size(raw) == Image.open(io.BytesIO(raw)).size == size


def test_other_formats_and_broken_headers_are_left_to_pillow():
    png = bytearray(_saved((8, 8), "PNG"))
    png[20] ^= 1  # the size changed, the checksum not: not trusted
    for raw in (_saved((8, 8), "WEBP"), _saved((8, 8), "BMP"), bytes(png), b"\xff\xd8junk", b""):
        assert declared_size(raw) is None
    with pytest.raises(MediaError, match="not a readable image"):
        Media(kind="image", sha256="ab" * 32, data=bytes(png), field="image").data_uri()


def _png_declaring(width: int, height: int) -> bytes:
    raw = bytearray(_saved((1, 1), "PNG"))
    raw[16:24] = struct.pack(">II", width, height)
    raw[29:33] = struct.pack(">I", zlib.crc32(bytes(raw[12:29])))
    return bytes(raw)


def _jpeg_declaring(width: int, height: int) -> bytes:
    raw = bytearray(_saved((1, 1), "JPEG"))
    frame = raw.index(b"\xff\xc0")
    raw[frame + 5 : frame + 9] = struct.pack(">HH", height, width)
    return bytes(raw)


@pytest.mark.parametrize("declaring", [_png_declaring, _jpeg_declaring])
def test_a_bomb_is_refused_on_the_api_path_without_decoding(declaring):
    bomb = Media(kind="image", sha256="ab" * 32, data=declaring(40_000, 40_000), field="image")
    with pytest.raises(MediaError, match=r"image image .*refused, a decompression bomb"):
        bomb.data_uri()
    small = Media(kind="image", sha256="cd" * 32, data=declaring(50, 40), field="image")
    small.limits = Limits(max_image_pixels=1000)
    with pytest.raises(MediaError, match=r"declares 50x40 = 2000 pixels"):
        small.data_uri()
    small.limits = Limits()  # within the limits: sent as its own bytes
    assert base64.b64decode(small.data_uri().split(",", 1)[1]) == small.data


def test_only_a_picture_over_max_pixels_is_reencoded():
    raw = _saved((400, 100), "JPEG")
    item = Media(kind="image", sha256="ef" * 32, data=raw, field="image")
    assert item.data_uri(max_pixels=40_000).startswith("data:image/jpeg;base64,")
    sent = item.data_uri(max_pixels=10_000)
    assert sent.startswith("data:image/png;base64,")
    assert Image.open(io.BytesIO(base64.b64decode(sent.split(",", 1)[1]))).size == (200, 50)
