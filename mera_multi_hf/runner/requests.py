"""From dataset examples to generation requests, and from requests to chat messages.

A request keeps the rendered prompt (media placeholders such as ``<image>`` left in
place) and one :class:`Media` per placeholder, in placeholder order. Media carry a
sha256 of their bytes (what the sample log keeps); the bytes themselves are read from
the dataset only for the batch being generated, so memory stays bounded on big tasks.
"""
from __future__ import annotations

import base64
import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MeraError
from ..loading import MEDIA_SLOT, render_prompt
from ..tasks import TaskSpec


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


@dataclass
class Request:
    task: str
    split: str
    id: int
    prompt: str                    # rendered text with media placeholders
    media: list[Media]
    max_new_tokens: int
    target: str = ""
    index: int = -1                # row in the dataset the media come from
    hash: str = ""                 # request hash (model + settings + prompt + media)
    extra: dict = field(default_factory=dict)  # the example's meta, for scoring

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.task, self.split, self.id)


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


def arrow_view(ds):
    """``ds`` formatted as Arrow: rows come back with media undecoded (bytes/path dicts).
    Made once per task: ``with_format`` copies the dataset object."""
    return ds if ds.format["type"] == "arrow" else ds.with_format("arrow")


def _arrow_rows(ds, indices):
    return arrow_view(ds)[list(indices)].to_pylist()


def build_requests(task: TaskSpec, ds, split: str, max_new_tokens: int | None = None,
                   chunk: int = 64) -> list[Request]:
    """One request per example of ``ds`` (one split of a task), in dataset order."""
    out: list[Request] = []
    n_tokens = max_new_tokens or task.max_new_tokens
    ds = arrow_view(ds)
    for start in range(0, len(ds), chunk):
        rows = _arrow_rows(ds, range(start, min(start + chunk, len(ds))))
        for offset, row in enumerate(rows):
            text, items = render_prompt(task, row)
            media = [Media(kind=task.modality, field=name,
                           sha256=hashlib.sha256(media_bytes(value)).hexdigest())
                     for name, value in items]
            out.append(Request(task=task.key, split=split, id=int(row["meta"]["id"]),
                               prompt=text, media=media, max_new_tokens=n_tokens,
                               target=row.get("outputs") or "", index=start + offset,
                               extra={"meta": row["meta"]}))
    return out


def load_media(requests: list[Request], ds) -> None:
    """Read the media bytes of these requests from the dataset they came from."""
    wanted = [r for r in requests if r.media and r.media[0].data is None]
    if not wanted:
        return
    inputs = arrow_view(ds)[[r.index for r in wanted]].column("inputs").to_pylist()
    for request, row in zip(wanted, inputs):
        for media in request.media:
            media.data = media_bytes(row[media.field])


def drop_media(requests: list[Request]) -> None:
    for request in requests:
        for media in request.media:
            media.data = None


def content_parts(prompt: str) -> list[dict]:
    """The prompt split at its media placeholders into chat content parts, in order.

    Text parts are stripped (chat templates add their own separators around media) and
    empty ones dropped: ``"<image>\\nQ?"`` -> ``[{"type": "image"}, {"type": "text", "text": "Q?"}]``.
    """
    parts: list[dict] = []
    pos = 0
    for match in MEDIA_SLOT.finditer(prompt):
        text = prompt[pos:match.start()].strip()
        if text:
            parts.append({"type": "text", "text": text})
        parts.append({"type": media_kind(match.group(1))})
        pos = match.end()
    text = prompt[pos:].strip()
    if text:
        parts.append({"type": "text", "text": text})
    return parts


def chat_messages(request: Request) -> list[dict]:
    """The request as a one-turn chat, media as typed parts (for ``apply_chat_template``)."""
    return [{"role": "user", "content": content_parts(request.prompt)}]


def plain_prompt(prompt: str, media_token: str | None) -> str:
    """For models without a chat template: placeholders become the processor's media
    token (or disappear for a text-only model)."""
    return MEDIA_SLOT.sub(media_token or "", prompt)


def openai_messages(request: Request, max_pixels: int | None = None) -> list[dict]:
    """The request in the chat-completions format, media as base64 data URIs."""
    content: list[dict] = []
    media = iter(request.media)
    for part in content_parts(request.prompt):
        if part["type"] == "text":
            content.append(part)
            continue
        item = next(media)
        uri = item.data_uri(max_pixels)
        if item.kind == "image":
            content.append({"type": "image_url", "image_url": {"url": uri}})
        elif item.kind == "audio":
            mime, b64 = uri[5:].split(";base64,", 1)
            content.append({"type": "input_audio",
                            "input_audio": {"data": b64, "format": mime.split("/")[1]}})
        else:
            content.append({"type": "video_url", "video_url": {"url": uri}})
    return [{"role": "user", "content": content}]


def prompt_from_openai(content) -> tuple[str, list[tuple[str, bytes]]]:
    """The inverse of :func:`openai_messages` (for the server): text with placeholders
    and the decoded media items."""
    if isinstance(content, str):
        return content, []
    pieces, media = [], []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            pieces.append(part.get("text", ""))
        elif kind in ("image_url", "video_url"):
            url = part[kind]["url"] if isinstance(part[kind], dict) else part[kind]
            media.append((kind.split("_")[0], _decode_data_uri(url)))
            pieces.append(f"<{kind.split('_')[0]}>")
        elif kind == "input_audio":
            media.append(("audio", base64.b64decode(part["input_audio"]["data"])))
            pieces.append("<audio>")
        else:
            raise ValueError(f"unsupported content part type {kind!r}")
    return "\n".join(pieces), media


def _decode_data_uri(url: str) -> bytes:
    if not url.startswith("data:") or ";base64," not in url:
        raise ValueError("only base64 data URIs are accepted (no remote URLs)")
    return base64.b64decode(url.split(";base64,", 1)[1])
