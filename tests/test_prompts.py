"""render_prompt against the official doc_to_text of every task, restated here from the
official task code (multimodal_tasks/<task>/utils.py and the YAMLs), not imported from
the code under test."""
from __future__ import annotations

import pytest

from mera_multi_hf import TASKS, MeraError, render_prompt
from mera_multi_hf.prompts import content_parts


def official_doc_to_text(task_key: str, doc: dict) -> str:
    """The official rule of each task, written out by hand."""
    inputs = doc["inputs"]
    if task_key in ("rutie_image", "rutie_audio"):
        # rutie_vision_gen.yaml / rutie_audio_gen.yaml: every brace escaped except the
        # question and the options, then format, then strip
        text = doc["instruction"].replace("{", "{{").replace("}", "}}")
        for name in ("question", "option_a", "option_b", "option_c", "option_d"):
            text = text.replace("{{" + name + "}}", "{" + name + "}")
        return text.format(**inputs).strip()
    text = doc["instruction"].format(**inputs)
    if task_key == "aquaria":  # aquaria/utils.py: <audio_1>, <audio_2> -> <audio>
        for i in (1, 2):
            text = text.replace(f"<audio_{i}>", "<audio>")
    return text


def _record(task) -> dict:
    """A record shaped as the task's raw format, with spaces around the placeholders
    and a missing optional field (the official code prints None for it)."""
    media = {name: f"<{name}>" for name in task.media_fields}
    text = {name: f"  {name} значение\n" for name in task.text_fields}
    if task.text_fields and task.text_fields[-1].startswith("option_"):
        text[task.text_fields[-1]] = None
    slots = " ".join(f"<{name}>" for name in task.media_fields)
    fields = "\n".join(f"{name}: {{{name}}}" for name in task.text_fields)
    instruction = f" Задание {{литерал}} про {slots} и\n{fields}\nОтвет: "
    if not task.dialogue:
        instruction = instruction.replace("{литерал}", "")
    return {"instruction": instruction, "inputs": {**media, **text}, "outputs": "",
            "meta": {"id": 7}}


@pytest.mark.parametrize("key", sorted(TASKS))
def test_render_prompt_is_the_official_doc_to_text(key):
    task = TASKS[key]
    record = _record(task)
    text, media = render_prompt(task, record)
    assert text == official_doc_to_text(key, record)
    assert [name for name, _ in media] == list(task.media_fields)  # field order


def test_prompt_parts_keep_the_text_verbatim():
    record = _record(TASKS["ruhhh_image"])
    text, _ = render_prompt("ruhhh_image", record)
    parts = content_parts(text)
    assert "".join(p.get("text", f"<{p['type']}>") for p in parts) == text
    assert parts[0] == {"type": "text", "text": " Задание  про "}


@pytest.mark.parametrize("instruction", [
    "{question:d}", "{option_a:{question}}", "{question!x}", "{question!r}", "{0}", "{}",
    "{question.__class__}", "{question[0]}", "{nope}", "{question", "question}",
])
def test_unsafe_or_broken_templates_are_refused_with_the_id(instruction):
    record = {"instruction": instruction, "inputs": {"image": "<image>", "question": "q",
                                                    "option_a": "a", "option_b": "b"},
              "outputs": "A", "meta": {"id": 42}}
    with pytest.raises(MeraError, match=r"ruhhh_image id=42, field instruction"):
        render_prompt("ruhhh_image", record)


def test_unmentioned_media_still_reaches_the_model():
    record = {"instruction": "Вопрос: {question}", "inputs": {"image": "<image>",
              "question": "q", "option_a": "a", "option_b": "b"}, "outputs": "A", "meta": {"id": 1}}
    text, media = render_prompt("ruhhh_image", record)
    assert text == "<image>\nВопрос: q" and [n for n, _ in media] == ["image"]
