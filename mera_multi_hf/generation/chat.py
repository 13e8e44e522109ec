"""Requests as chat messages: for a processor's chat template and for the chat-completions
API (the project's own server parses them back: ``runner.serve.prompt_from_openai``).

A dialogue request (ruTiE) becomes several turns: each earlier question as a user
message with its media, the model's earlier answer as an assistant message, then the
question asked now.
"""

from __future__ import annotations

from mera_multi_hf.generation.request import Request
from mera_multi_hf.tasks.prompts import content_parts


def turn_parts(text: str, media: list) -> list[dict]:
    """``text`` split at its media placeholders, verbatim, with one media part per item of
    ``media``: a placeholder with no item left (a question without its optional
    picture) is dropped, as the official harness drops placeholders when it places the
    media; an item with no placeholder goes first, as render_prompt places it."""
    parts, used = [], 0
    for part in content_parts(text):
        if part["type"] == "text":
            parts.append(part)
        elif used < len(media):
            parts.append({"type": media[used].kind})
            used += 1
    return [{"type": m.kind} for m in media[used:]] + parts


def _turns(request: Request):
    """(role, text, media) of every message of the request, in order."""
    for turn in request.history:
        yield "user", turn.text, turn.media
        yield "assistant", turn.answer, []
    yield "user", request.prompt, request.media


def plain_dialogue(request: Request) -> str:
    """A dialogue as one text (models without a chat template): each earlier question
    followed by its answer, a blank line between turns, then the question asked now."""
    return "".join(f"{turn.text} {turn.answer}\n\n" for turn in request.history) + request.prompt


def chat_messages(request: Request) -> list[dict]:
    """The request as chat messages, media as typed parts (for ``apply_chat_template``;
    the media go to the processor in :meth:`Request.all_media` order)."""
    return [
        {
            "role": role,
            "content": turn_parts(text, media)
            if role == "user"
            else [{"type": "text", "text": text}],
        }
        for role, text, media in _turns(request)
    ]


def _api_content(text: str, media: list, max_pixels: int | None) -> list[dict]:
    items = iter(media)
    content = []
    for part in turn_parts(text, media):
        if part["type"] == "text":
            content.append(part)
        else:
            item = next(items)
            kind = f"{item.kind}_url"
            content.append({"type": kind, kind: {"url": item.data_uri(max_pixels)}})
    return content


def openai_messages(request: Request, max_pixels: int | None = None) -> list[dict]:
    """The request in the chat-completions format, as the official harness sends it to an
    API server (``--pass_multimodal_args_to_chat_history``): user messages whose content
    alternates the prompt's text parts (verbatim) and its media, each media item where
    its placeholder stood, as a base64 data URI: ``image_url``, ``audio_url`` (a WAV at
    the clip's own rate) or ``video_url`` (the whole file)."""
    return [
        {"role": role, "content": _api_content(text, media, max_pixels) if role == "user" else text}
        for role, text, media in _turns(request)
    ]
