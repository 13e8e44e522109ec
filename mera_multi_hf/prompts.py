"""The prompt a model sees: the task's official ``doc_to_text``, with media placeholders
left in place, and its split into interleaved text and media parts."""
from __future__ import annotations

import re

from .errors import MeraError
from .tasks import TaskSpec, get_task

MEDIA_SLOT = re.compile(r"<((?:image|audio|video)(?:_\d+)?)>")


def text_inputs(task: TaskSpec, example: dict) -> dict:
    return {name: example["inputs"].get(name) or "" for name in task.text_fields}


def render_prompt(task: TaskSpec | str, example: dict) -> tuple[str, list[tuple[str, object]]]:
    """The text the model sees and its media items, in the order of their placeholders.

    ``instruction.format`` fills the text fields; media placeholders (``<image>``,
    ``<audio_2>``) stay in the text. A media field the instruction never mentions gets a
    placeholder at the start of the prompt so that no item is silently dropped.
    """
    task = get_task(task) if isinstance(task, str) else task
    try:
        text = example["instruction"].format(**text_inputs(task, example))
    except (KeyError, IndexError, ValueError) as err:
        raise MeraError(f"{task.key} id={example['meta']['id']}, field instruction: "
                        f"cannot fill the template ({err!r})") from None
    present = [f for f in task.media_fields if example["inputs"].get(f) is not None]
    mentioned = [m.group(1) for m in MEDIA_SLOT.finditer(text)]
    missing = [f for f in present if f not in mentioned]
    if missing:
        text = "".join(f"<{f}>" for f in missing) + "\n" + text
        mentioned = missing + mentioned
    media = [(name, example["inputs"][name]) for name in mentioned if name in present]
    return text, media




def content_parts(prompt: str) -> list[dict]:
    """The prompt split at its media placeholders into chat content parts, in order, as
    the official harness interleaves them: every text part verbatim (its spaces and line
    breaks kept), empty ones dropped.
    ``"<image>\\nQ?"`` -> ``[{"type": "image"}, {"type": "text", "text": "\\nQ?"}]``.
    """
    parts: list[dict] = []
    pos = 0
    for match in MEDIA_SLOT.finditer(prompt):
        if match.start() > pos:
            parts.append({"type": "text", "text": prompt[pos:match.start()]})
        parts.append({"type": match.group(1).split("_")[0]})
        pos = match.end()
    if pos < len(prompt):
        parts.append({"type": "text", "text": prompt[pos:]})
    return parts


def plain_prompt(prompt: str, media_token: str | None) -> str:
    """For models without a chat template: placeholders become the processor's media
    token (or disappear for a text-only model)."""
    return MEDIA_SLOT.sub(media_token or "", prompt)
