"""What the chart is made of (:class:`Mark`: a rectangle, a line or a text, in pixels)
and how the marks become a PNG, with Pillow: a tenth of matplotlib's start-up and drawing
time, which every run pays once its answers are in.

Text is set in DejaVu Sans (matplotlib's own font file, found without importing
matplotlib), Pillow's default font where that file is missing."""

from __future__ import annotations

import functools
import importlib.util
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageColor, ImageDraw, ImageFont

HATCH_COLOR = "#666666"
HATCH_STEP = 7  # pixels between the hatch's diagonals
DASH = (7, 3)  # pixels on, off
FADED = 0.45  # a faded bar's opacity over the white page
LINE_SPACING = 2  # pixels between the lines of a text


@dataclass
class Mark:
    """One thing drawn. ``box``: x0, y0, x1, y1 in pixels, y down (a line: its two ends);
    ``gid``: what it shows ("bar", "value", "human", ...); ``value``: the data drawn (a
    bar's height, an interval's low and high), for tests to read."""

    kind: str  # "rect", "line" or "text"
    gid: str
    box: tuple[float, float, float, float]
    color: str = "black"
    width: float = 1.0  # a line's thickness; a rectangle's outline
    text: str = ""
    size: int = 11  # font size in pixels
    rotated: bool = False  # text read bottom to top
    dashed: bool = False
    hatched: bool = False
    faded: bool = False
    outline: str | None = None
    value: object = None


@dataclass
class Drawing:
    """A whole chart: its size and marks; ``panels``: each panel's plot area and marks."""

    width: int
    height: int
    marks: list[Mark] = field(default_factory=list)
    panels: list[dict] = field(default_factory=list)

    def all_marks(self) -> list[Mark]:
        return self.marks + [m for p in self.panels for m in p["marks"]]


@functools.cache
def font(size: int):
    path = _font_file()
    if path is not None:
        return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


def _font_file() -> Path | None:
    spec = importlib.util.find_spec("matplotlib")  # finds the folder, imports nothing
    for folder in (spec and spec.submodule_search_locations) or []:
        path = Path(folder) / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf"
        if path.is_file():
            return path
    return None


_MEASURE = ImageDraw.Draw(Image.new("L", (1, 1)))


@functools.lru_cache(maxsize=1024)  # each text is measured to place it, then to draw it
def _bbox(text: str, size: int) -> tuple[int, int, int, int]:
    """The pixels ``text`` covers, drawn at (0, 0): left, top, right, bottom."""
    box = _MEASURE.multiline_textbbox(
        (0, 0), text, font=font(size), align="center", spacing=LINE_SPACING
    )
    return math.floor(box[0]), math.floor(box[1]), math.ceil(box[2]), math.ceil(box[3])


def text_size(text: str, size: int, rotated: bool = False) -> tuple[int, int]:
    """(width, height) in pixels of ``text`` as drawn (lines centred)."""
    left, top, right, bottom = _bbox(text, size)
    width, height = right - left, bottom - top
    return (height, width) if rotated else (width, height)


def text_mark(gid: str, text: str, size: int, anchor: tuple[float, float], where: str, **style):
    """A text mark placed by ``where``: "below" (``anchor`` its top centre), "above"
    (bottom centre), "left" (its right middle), "right" (its left middle) or "centre"."""
    width, height = text_size(text, size, style.get("rotated", False))
    x, y = anchor
    x0 = {"left": x - width, "right": x}.get(where, x - width / 2)
    y0 = {"below": y, "above": y - height}.get(where, y - height / 2)
    return Mark("text", gid, (x0, y0, x0 + width, y0 + height), text=text, size=size, **style)


def png(drawing: Drawing) -> bytes:
    image = Image.new("RGB", (drawing.width, drawing.height), "white")
    draw = ImageDraw.Draw(image)
    for mark in drawing.all_marks():
        if mark.kind == "rect":
            _rect(image, draw, mark)
        elif mark.kind == "line":
            _line(draw, mark)
        else:
            _text(image, mark)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _rgb(color: str) -> tuple[int, int, int]:
    return ImageColor.getrgb(color)[:3]


def _rect(image, draw, mark: Mark) -> None:
    x0, y0, x1, y1 = (round(v) for v in mark.box)
    if x1 <= x0 or y1 < y0:
        return
    fill = None if mark.color == "none" else _rgb(mark.color)
    if fill and mark.faded:  # over the white page
        fill = tuple(round(FADED * c + (1 - FADED) * 255) for c in fill)
    if mark.hatched:
        tile = Image.new("RGB", (x1 - x0 + 1, y1 - y0 + 1), fill)
        pen = ImageDraw.Draw(tile)
        w, h = tile.size
        for start in range(-h, w, HATCH_STEP):  # "///": rising to the right
            pen.line([(start, h), (start + h, 0)], fill=HATCH_COLOR, width=1)
        image.paste(tile, (x0, y0))
        fill = None
    draw.rectangle((x0, y0, x1, y1), fill=fill, outline=mark.outline, width=round(mark.width))


def _line(draw, mark: Mark) -> None:
    x0, y0, x1, y1 = mark.box
    width = max(1, round(mark.width))
    if not mark.dashed:
        draw.line([(x0, y0), (x1, y1)], fill=mark.color, width=width)
        return
    length = max(abs(x1 - x0), abs(y1 - y0))  # dashes along a horizontal or vertical line
    at = 0.0
    while at < length:
        end = min(length, at + DASH[0])
        a, b = at / length, end / length
        draw.line(
            [(x0 + (x1 - x0) * a, y0 + (y1 - y0) * a), (x0 + (x1 - x0) * b, y0 + (y1 - y0) * b)],
            fill=mark.color,
            width=width,
        )
        at = end + DASH[1]


def _text(image, mark: Mark) -> None:
    left, top, right, bottom = _bbox(mark.text, mark.size)
    stencil = Image.new("L", (max(1, right - left), max(1, bottom - top)), 0)
    ImageDraw.Draw(stencil).multiline_text(
        (-left, -top),
        mark.text,
        font=font(mark.size),
        fill=255,
        align="center",
        spacing=LINE_SPACING,
    )
    if mark.rotated:
        stencil = stencil.rotate(90, expand=True)
    image.paste(_rgb(mark.color), (round(mark.box[0]), round(mark.box[1])), stencil)
