"""The chat route's request: the body's fields (pydantic models, validated strictly) and
what the server reads from them: the prompt and its media items from the user message's
content parts (base64 data URIs only), each picture checked within the pixel bound, the
token limit, the stop strings. Each check raises a ValueError whose message is fit for a
400 reply (`TooLarge`: a 413)."""

from __future__ import annotations

import base64
import binascii
import io
import re

from pydantic import BaseModel, Field

from mera_multi_hf.serving.app import shown as _shown
from mera_multi_hf.tasks.prompts import MEDIA_SLOT

DEFAULT_MAX_TOKENS = 256  # when the request gives none (as vLLM: up to the context)
_DATA_URI = re.compile(r"data:([\w.+-]+/[\w.+-]+)(?:;[\w.+-]+=[\w.+-]+)*;base64,", re.ASCII)
_MEDIA_PARTS = {"image_url": "image", "video_url": "video", "audio_url": "audio"}


class ChatMessage(BaseModel):
    role: str = Field(description="a string")
    content: object = None  # text or content parts: prompt_from_openai says what is wrong


class StreamOptions(BaseModel):
    include_usage: bool | None = Field(None, description="a boolean")


class ChatCompletionRequest(BaseModel):
    """The fields this server reads, with their types (validated strictly: no "3" for 3);
    other fields an OpenAI client sends are ignored. Ranges are checked by the service."""

    messages: list[ChatMessage] = Field(
        min_length=1, description="a non-empty list of messages (objects with a string `role`)"
    )
    model: str | None = Field(None, description="a string")
    max_tokens: int | None = Field(None, description="an integer of at least 1")
    max_completion_tokens: int | None = Field(None, description="an integer of at least 1")
    stop: str | list[str] | None = Field(None, description="a non-empty string or a list of them")
    stream: bool | None = Field(None, description="a boolean")
    stream_options: StreamOptions | None = Field(
        None, description='an object such as {"include_usage": true}'
    )
    n: int | None = Field(None, description="an integer")
    temperature: float | None = Field(None, description="a number")
    top_p: float | None = Field(None, description="a number")
    seed: int | None = Field(None, description="an integer")


def prompt_from_openai(
    content, max_chars: int | None = None
) -> tuple[str, list[tuple[str, bytes]]]:
    """The user message's content as the prompt (text with a ``<image>``, ``<audio>`` or
    ``<video>`` placeholder where each media part stood) and the decoded media items, in
    order: the inverse of :func:`mera_multi_hf.generation.chat.openai_messages`. ValueError
    with a message fit for a 400 reply when the content is malformed; TooLarge when its
    text holds more than ``max_chars`` characters (checked before any media is decoded)."""
    if max_chars is not None:
        check_prompt_size(content, max_chars)
    if isinstance(content, str):
        parts = [{"type": "text", "text": content}]
    elif isinstance(content, list) and content:
        parts = content
    else:
        raise ValueError(
            f"`content` must be a string or a non-empty list of parts, not {_shown(content)}"
        )
    pieces, media = [], []
    for i, part in enumerate(parts):
        kind, value = _content_part(part, f"content[{i}]")
        if kind == "text":
            pieces.append(value)
        else:
            media.append((kind, value))
            pieces.append(f"<{kind}>")
    prompt = "".join(pieces)
    if len(MEDIA_SLOT.findall(prompt)) != len(media):
        raise ValueError(
            "the text holds a media placeholder such as <image> that no media part "
            "fills; send each media item as its own content part"
        )
    return prompt, media


def _content_part(part, where: str) -> tuple[str, str | bytes]:
    if not isinstance(part, dict):
        raise ValueError(f"{where} must be an object with a `type`, not {_shown(part)}")
    kind = part.get("type")
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise ValueError(f"{where}.text must be a string, not {_shown(part.get('text'))}")
        return "text", part["text"]
    if kind in _MEDIA_PARTS:
        value = part.get(kind)
        url = value.get("url") if isinstance(value, dict) else value
        if not isinstance(url, str):
            raise ValueError(
                f"{where}.{kind} must be an object with a string `url` (a base64 "
                f"data URI), not {_shown(value)}"
            )
        return _MEDIA_PARTS[kind], _decode_data_uri(url, _MEDIA_PARTS[kind], f"{where}.{kind}.url")
    if kind == "input_audio":
        value = part.get("input_audio")
        if not isinstance(value, dict) or not isinstance(value.get("data"), str):
            raise ValueError(f"{where}.input_audio must be an object with base64 `data`")
        return "audio", _base64(value["data"], f"{where}.input_audio.data")
    raise ValueError(
        f"{where}: unsupported content part type {_shown(kind)} (expected text, "
        f"image_url, audio_url, input_audio or video_url)"
    )


def _decode_data_uri(url: str, medium: str = "image", where: str = "url") -> bytes:
    """The bytes of a ``data:<medium>/...;base64,...`` URI (remote URLs are refused)."""
    match = _DATA_URI.match(url)
    if match is None:
        raise ValueError(
            f"{where}: only base64 data URIs (data:{medium}/...;base64,...) are "
            f"accepted, no remote URLs; got {_shown(url[:40])}"
        )
    mime = match.group(1).lower()
    if not mime.startswith(medium + "/"):
        raise ValueError(f"{where}: a {mime} data URI where {medium} is expected")
    return _base64(url[match.end() :], where)


def _base64(text: str, where: str) -> bytes:
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as err:
        raise ValueError(f"{where}: invalid base64 ({err})") from None
    if not data:
        raise ValueError(f"{where}: the media item is empty")
    return data


class TooLarge(ValueError):
    status = 413


def check_prompt_size(content, max_chars: int) -> None:
    """TooLarge when the text of ``content`` (a string or content parts) is longer than
    ``max_chars``: measured before it is tokenised (its cost grows with its length)."""
    parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    size = sum(
        len(p) if isinstance(p, str) else len(p.get("text") or "") if isinstance(p, dict) else 0
        for p in parts
    )
    if size > max_chars:
        raise TooLarge(
            f"the prompt's text is {size} characters; this server takes at most "
            f"{max_chars} (max_prompt_chars)"
        )


def check_image(data: bytes, where: str, max_pixels: int, decode: bool = True) -> None:
    """A picture Pillow decodes within ``max_pixels``, else ValueError (the backend must
    not meet it). The size is read from the header, before any pixel is decoded (and,
    without ``decode``, only the header is read)."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as img:
            if img.width * img.height > max_pixels:
                raise TooLarge(
                    f"{where}: {img.width}x{img.height} pixels; the limit is "
                    f"{max_pixels} (max_image_pixels)"
                )
            if decode:
                img.load()
    except TooLarge:
        raise
    except Exception as err:  # noqa: BLE001 - any decoder error means a bad upload
        raise ValueError(
            f"{where}: not a picture this server can decode ({type(err).__name__}: "
            f"{_shown(str(err))})"
        ) from None


def requested_max_tokens(body: ChatCompletionRequest, limit: int) -> int:
    given = {
        k: getattr(body, k)
        for k in ("max_completion_tokens", "max_tokens")
        if getattr(body, k) is not None
    }
    for name, value in given.items():
        if value < 1:
            raise ValueError(f"`{name}` must be an integer of at least 1, not {_shown(value)}")
        if value > limit:
            raise ValueError(f"`{name}` is {value}; this server generates at most {limit} tokens")
    if len(set(given.values())) > 1:
        raise ValueError("`max_tokens` and `max_completion_tokens` differ; send one of them")
    return next(iter(given.values()), DEFAULT_MAX_TOKENS)


def requested_stops(
    body: ChatCompletionRequest, max_count: int | None = None, max_chars: int | None = None
) -> tuple[str, ...]:
    """The stop strings, at most ``max_count`` of them with ``max_chars`` characters
    together (TooLarge otherwise: checked before they are tokenised)."""
    stops = () if body.stop is None else (body.stop,) if isinstance(body.stop, str) else body.stop
    if not all(stops):
        raise ValueError(
            f"`stop` must be a non-empty string or a list of them, not {_shown(body.stop)}"
        )
    if max_count is not None and len(stops) > max_count:
        raise TooLarge(
            f"`stop` holds {len(stops)} strings; this server takes at most {max_count} "
            "(max_stop_strings)"
        )
    size = sum(map(len, stops))
    if max_chars is not None and size > max_chars:
        raise TooLarge(
            f"the stop strings are {size} characters together; this server takes at "
            f"most {max_chars} (max_stop_chars)"
        )
    return tuple(stops)


def check_options(body: ChatCompletionRequest) -> None:
    if body.n not in (None, 1):
        raise ValueError(f"`n` must be 1 here (one greedy answer), not {_shown(body.n)}")


def user_content(body: ChatCompletionRequest):
    users = [m for m in body.messages if m.role == "user"]
    if len(users) != 1:
        raise ValueError("exactly one user message is supported")
    return users[0].content
