"""The prompt a model sees: the task's official ``doc_to_text``, with media placeholders
left in place, and its split into interleaved text and media parts."""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Mapping

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.tasks.spec import TaskSpec
from mera_multi_hf.tasks.table import get_task

MEDIA_SLOT = re.compile(r"<((?:image|audio|video)(?:_\d+)?)>")


def _escape_braces_except_fields(instruction: str, fields: list[str]) -> str:
    """ruTiE's rule: every brace is literal except the ``{field}`` of a text input."""
    text = instruction.replace("{", "{{").replace("}", "}}")
    for name in fields:
        text = text.replace("{{" + name + "}}", "{" + name + "}")
    return text


# Prompt rules a task may declare (TaskSpec.prompt_rules): "before" rules rewrite the
# instruction before it is filled, "after" rules the filled text.
RULES_BEFORE = {"escape_braces_except_fields": _escape_braces_except_fields}
RULES_AFTER = {"strip": str.strip}


@functools.lru_cache(maxsize=1024)  # a task has ~10 prompts: parse each once
def placeholders(template: str) -> tuple[tuple[str, str, str | None], ...]:
    """The (name, format spec, conversion) of each {field} of a str.format template
    (ValueError: not a valid template)."""
    try:
        return tuple(
            (name, spec or "", conv)
            for _, name, spec, conv in string.Formatter().parse(template)
            if name is not None
        )
    except ValueError as err:
        raise ValueError(f"not a valid format template: {err}") from None


def _shown(name: str, spec: str, conv: str | None) -> str:
    return "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"


def placeholder_problems(template: str, fields) -> list[str]:
    """Why the template's placeholders are not plain ``{field}`` names of ``fields`` (the
    raw reader's check, naming the text fields a prompt may use)."""
    out = []
    for name, spec, conv in placeholders(template):
        shown = _shown(name, spec, conv)
        if not name or name.isdigit():
            out.append(f"positional placeholder {shown}: name an input field instead")
        elif name not in fields:
            out.append(
                f"placeholder {shown} is not an input field (text fields: {', '.join(fields)})"
            )
        elif conv or spec:
            out.append(f"placeholder {shown}: conversions and format specs are not allowed")
    return out


def _check_template(task: TaskSpec, instruction: str, inputs: dict) -> None:
    """Only plain ``{field}`` placeholders of the example's inputs: a format spec, a
    conversion, an attribute or an index would read or print more than the field."""
    for name, spec, conversion in placeholders(instruction):
        if name not in inputs or spec or conversion:
            why = "not an input field" if name not in inputs else "only plain {field} is allowed"
            raise ValueError(f"placeholder {_shown(name, spec, conversion)}: {why}")


def fill_instruction(task: TaskSpec, example: dict) -> str:
    """The official ``doc_to_text``: ``instruction.format(**inputs)`` over every input (a
    missing option prints as ``None``, as the official code does), with the task's rules."""
    inputs = dict(example["inputs"])
    for name in task.media_fields:  # media are not text: their placeholder stays as is
        inputs[name] = f"<{name}>"
    instruction = example["instruction"]
    text_names = [name for name in inputs if name not in task.media_fields]
    for rule in task.prompt_rules:
        if rule in RULES_BEFORE:
            instruction = RULES_BEFORE[rule](instruction, text_names)
    try:
        _check_template(task, instruction, inputs)
        text = instruction.format(**inputs)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as err:
        example_id = (example.get("meta") or {}).get("id")
        raise MeraError(
            f"{task.key} id={example_id}, field instruction: cannot fill the template ({err})"
        ) from None
    for rule in task.prompt_rules:
        if rule in RULES_AFTER:
            text = RULES_AFTER[rule](text)
    for old, new in task.placeholder_rewrites:
        text = text.replace(old, new)
    return text


def render_prompt(task: TaskSpec | str, example: dict) -> tuple[str, list[tuple[str, object]]]:
    """The text the model sees and its media items.

    The text is the task's official ``doc_to_text`` (:func:`fill_instruction`); media
    placeholders (``<image>``, ``<audio_2>``) stay in it. The media come in field order,
    as the official ``doc_to_image``/``doc_to_audio`` pass them. A present media field the
    prompt never mentions gets a placeholder at the start, so no item is silently dropped
    (the official harness would fail on the count mismatch).
    """
    task = task if isinstance(task, TaskSpec) else get_task(task)
    if (
        not isinstance(example, Mapping)
        or not isinstance(example.get("instruction"), str)
        or not isinstance(example.get("inputs"), Mapping)
    ):
        raise MeraError(
            f"render_prompt: the example must be a row of {task.key}: an object "
            "with an `instruction` string and an `inputs` object (load_task gives "
            "such rows)"
        )
    text = fill_instruction(task, example)
    present = [f for f in task.media_fields if example["inputs"].get(f) is not None]
    slots = len(MEDIA_SLOT.findall(text))
    if slots < len(present):
        text = "".join(f"<{f}>" for f in present[slots:]) + "\n" + text
    return text, [(name, example["inputs"][name]) for name in present]


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
            parts.append({"type": "text", "text": prompt[pos : match.start()]})
        parts.append({"type": match.group(1).split("_")[0]})
        pos = match.end()
    if pos < len(prompt):
        parts.append({"type": "text", "text": prompt[pos:]})
    return parts


def plain_prompt(prompt: str, media_token: str | None) -> str:
    """For models without a chat template: placeholders become the processor's media
    token (or disappear for a text-only model)."""
    return MEDIA_SLOT.sub(media_token or "", prompt)
