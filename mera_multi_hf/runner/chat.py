"""Requests as chat messages: for a processor's chat template and for the chat-completions
API (the project's own server parses them back: ``runner.serve.prompt_from_openai``)."""
from __future__ import annotations

from ..errors import MeraError
from ..prompts import content_parts
from .request import Request


def chat_messages(request: Request) -> list[dict]:
    """The request as a one-turn chat, media as typed parts (for ``apply_chat_template``)."""
    return [{"role": "user", "content": content_parts(request.prompt)}]


def openai_messages(request: Request, max_pixels: int | None = None) -> list[dict]:
    """The request in the chat-completions format, as the official harness sends it to an
    API server (``--pass_multimodal_args_to_chat_history``): one user message whose
    content alternates the prompt's text parts (verbatim) and its media, each media item
    where its placeholder stood, as a base64 data URI: ``image_url``, ``audio_url`` (a
    WAV at the clip's own rate) or ``video_url`` (the whole file)."""
    content: list[dict] = []
    media = iter(request.media)
    for part in content_parts(request.prompt):
        if part["type"] == "text":
            content.append(part)
            continue
        item = next(media, None)
        if item is None:
            raise MeraError(f"{request.task} id={request.id}: the prompt has more media "
                            f"placeholders than media items")
        kind = f"{item.kind}_url"
        content.append({"type": kind, kind: {"url": item.data_uri(max_pixels)}})
    return [{"role": "user", "content": content}]

