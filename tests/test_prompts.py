"""render_prompt against the official doc_to_text, as input -> output pairs worked out by
hand from the official task code (multimodal_tasks/<task>/utils.py and the task YAMLs):
``instruction.format(**inputs)`` for every task; ruTiE's *_gen.yaml first escapes every
brace except the input fields' and strips the result; AQUARIA's utils.py turns
``<audio_1>``/``<audio_2>`` into ``<audio>``; a missing optional option prints ``None``."""

from __future__ import annotations

import pytest

from mera_multi_hf import TASKS, MeraError, render_prompt
from mera_multi_hf.tasks.prompts import content_parts

OPTS4 = {"option_a": "кот", "option_b": "пёс", "option_c": "ёж", "option_d": "сом"}

# (task, instruction, text inputs, the prompt the official code gives), by hand.
PROMPT_TABLE = [
    (
        "ruclevr",
        "<image>\nВопрос: {question}\nОтвет:",
        {"question": "Сколько кубов?"},
        "<image>\nВопрос: Сколько кубов?\nОтвет:",
    ),
    # spaces and line breaks around the fields stay exactly (no strip outside ruTiE)
    (
        "ruhhh_image",
        " <image> {question}  \nA. {option_a}\nB. {option_b}\n",
        {"question": " Что лучше? ", "option_a": "да", "option_b": "нет"},
        " <image>  Что лучше?   \nA. да\nB. нет\n",
    ),
    # ruTiE: braces that are no field are literal; the whole text is stripped
    (
        "rutie_image",
        "  {контекст} <image>\n{question}\nA) {option_a} B) {option_b} "
        'C) {option_c} D) {option_d}\n{"ответ": 1}\n ',
        {"question": "Кто?", **OPTS4},
        '{контекст} <image>\nКто?\nA) кот B) пёс C) ёж D) сом\n{"ответ": 1}',
    ),
    # rutie_audio_gen.yaml un-escapes the four options only: {question} stays literal
    (
        "rutie_audio",
        "\n<audio> {question} {}: {option_a}/{option_b}/{option_c}/{option_d} ",
        OPTS4,
        "<audio> {question} {}: кот/пёс/ёж/сом",
    ),
    # AQUARIA: both numbered audio placeholders print as <audio>
    (
        "aquaria",
        "<audio_1> и <audio_2>\n{question}\nA. {option_a}\nD. {option_d}",
        {"question": "Где шум?", **OPTS4},
        "<audio> и <audio>\nГде шум?\nA. кот\nD. сом",
    ),
    # UniScienceVQA: an option the record leaves out prints as None
    (
        "unisciencevqa",
        "<image>{question} ({annotation})\nA. {option_a}\nJ. {option_j}",
        {
            "question": "Сколько?",
            "annotation": "число",
            "option_a": "1",
            **{f"option_{c}": None for c in "bcdefghij"},
        },
        "<image>Сколько? (число)\nA. 1\nJ. None",
    ),
    ("rumathvqa", "<image>\n{annotation}", {"annotation": "Найдите x."}, "<image>\nНайдите x."),
    (
        "ruslun",
        "<audio>{question}\n{annotation}",
        {"question": "Поставь будильник", "annotation": "intent, slots"},
        "<audio>Поставь будильник\nintent, slots",
    ),
]


@pytest.mark.parametrize("key, instruction, text, expected", PROMPT_TABLE)
def test_render_prompt_gives_the_official_text(key, instruction, text, expected):
    task = TASKS[key]
    record = {
        "instruction": instruction,
        "inputs": {**{m: f"<{m}>" for m in task.media_fields}, **text},
        "outputs": "",
        "meta": {"id": 7},
    }
    prompt, media = render_prompt(task, record)
    assert prompt == expected
    assert [name for name, _ in media] == list(task.media_fields)  # field order


def _record(task) -> dict:
    """A record shaped as the task's raw format, with spaces around the placeholders."""
    media = {name: f"<{name}>" for name in task.media_fields}
    text = {name: f"  {name} значение\n" for name in task.text_fields}
    slots = " ".join(f"<{name}>" for name in task.media_fields)
    fields = "\n".join(f"{name}: {{{name}}}" for name in task.text_fields)
    return {
        "instruction": f" Задание про {slots} и\n{fields}\nОтвет: ",
        "inputs": {**media, **text},
        "outputs": "",
        "meta": {"id": 7},
    }


def test_prompt_parts_keep_the_text_verbatim():
    record = _record(TASKS["ruhhh_image"])
    text, _ = render_prompt("ruhhh_image", record)
    parts = content_parts(text)
    assert "".join(p.get("text", f"<{p['type']}>") for p in parts) == text
    assert parts[0] == {"type": "text", "text": " Задание про "}


@pytest.mark.parametrize(
    "instruction",
    [
        "{question:d}",
        "{option_a:{question}}",
        "{question!x}",
        "{question!r}",
        "{0}",
        "{}",
        "{question.__class__}",
        "{question[0]}",
        "{nope}",
        "{question",
        "question}",
    ],
)
def test_unsafe_or_broken_templates_are_refused_with_the_id(instruction):
    record = {
        "instruction": instruction,
        "inputs": {"image": "<image>", "question": "q", "option_a": "a", "option_b": "b"},
        "outputs": "A",
        "meta": {"id": 42},
    }
    with pytest.raises(MeraError, match=r"ruhhh_image id=42, field instruction"):
        render_prompt("ruhhh_image", record)


def test_unmentioned_media_still_reaches_the_model():
    record = {
        "instruction": "Вопрос: {question}",
        "inputs": {"image": "<image>", "question": "q", "option_a": "a", "option_b": "b"},
        "outputs": "A",
        "meta": {"id": 1},
    }
    text, media = render_prompt("ruhhh_image", record)
    assert text == "<image>\nВопрос: q" and [n for n, _ in media] == ["image"]
