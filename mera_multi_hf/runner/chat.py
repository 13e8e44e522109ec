"""Requests as chat messages: for a processor's chat template, for the chat-completions
API, and back (for the project's own server)."""
from __future__ import annotations

import base64

from ..prompts import content_parts
from .request import Request


def chat_messages(request: Request) -> list[dict]:
    """The request as a one-turn chat, media as typed parts (for ``apply_chat_template``)."""
    return [{"role": "user", "content": content_parts(request.prompt)}]


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
    return "".join(pieces), media


def _decode_data_uri(url: str) -> bytes:
    if not url.startswith("data:") or ";base64," not in url:
        raise ValueError("only base64 data URIs are accepted (no remote URLs)")
    return base64.b64decode(url.split(";base64,", 1)[1])
