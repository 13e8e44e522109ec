"""The bundled ruSLUn sample: a spoken-command task (intent + slots as JSON) over short
synthesised clips standing in for speech. Golds are JSON written with single quotes, as
the official data writes them; one intent is CamelCase (the official metric never
matches it after the prediction is lowercased). The raw test keeps its answers (the
card calls the task public; the Hub test answers are blanked, so a run on the Hub copy
cannot score locally)."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.av_common import clip, write_av
from mera_multi_hf.demo.sample_data.common import Sample, number

NAME = "ruSLUn"
PROMPT = (
    "Не обязательно все слоты присутствуют в запросе.\nАудиофайл: <audio>\nВопрос:\n"
    "{question}\n\nКратко сформулируй ответ.\n\n{annotation}"
)
QUESTION = (
    "Послушай запрос пользователя, определи его намерение (intent) и выдели все слоты "
    "(slots). Ответ дай в формате JSON."
)
ANNOTATION = (
    "Намерения и их слоты:\nweather/find: [location, datetime]\n"
    "alarm/set_alarm: [datetime]\nPlayMusic: [artist, genre]\n"
    'Формат: {"intent": намерение, "slots": [{тип слота: значение}, ...]}'
)
# (clip, speaker, gold JSON with single quotes)
ITEMS = [
    (
        ("tone", 500),
        "спикер_1",
        "{'intent': 'weather/find', 'slots': [{'location': 'москве'}, {'datetime': 'завтра'}]}",
    ),
    (
        ("tone", 700),
        "спикер_2",
        "{'intent': 'alarm/set_alarm', 'slots': [{'datetime': 'семь утра'}]}",
    ),
    (("chirp", 200), "спикер_1", "{'intent': 'PlayMusic', 'slots': [{'genre': 'джаз'}]}"),
    (("beeps", 2), "спикер_3", "{'intent': 'weather/find', 'slots': []}"),
    (("noise", 2), "спикер_2", "{'intent': 'alarm/set_alarm', 'slots': [{'datetime': 'полночь'}]}"),
    (("tone", 300), "спикер_3", "{'intent': 'weather/find', 'slots': [{'location': 'сочи'}]}"),
    # shots
    (
        ("tone", 900),
        "спикер_1",
        "{'intent': 'alarm/set_alarm', 'slots': [{'datetime': 'восемь вечера'}]}",
    ),
    (("chirp", 400), "спикер_2", "{'intent': 'weather/find', 'slots': [{'location': 'казани'}]}"),
    (("beeps", 4), "спикер_3", "{'intent': 'PlayMusic', 'slots': [{'artist': 'земфира'}]}"),
]
TEST_ITEMS = 6


def _clips() -> dict:
    return {
        f"samples/audio_{i}.wav": clip(kind, value, seconds=0.3, seed=i)
        for i, ((kind, value), _, _) in enumerate(ITEMS, 1)
    }


def _records(items, first: int) -> list[dict]:
    return [
        {
            "instruction": PROMPT,
            "inputs": {
                "audio": f"samples/audio_{first + i}.wav",
                "question": QUESTION,
                "annotation": ANNOTATION,
            },
            "outputs": gold,
            "meta": {"speaker": speaker},
        }
        for i, (_, speaker, gold) in enumerate(items)
    ]


def sample() -> Sample:
    test = number(_records(ITEMS[:TEST_ITEMS], 1))
    shots = number(_records(ITEMS[TEST_ITEMS:], TEST_ITEMS + 1), first_id=len(test) + 1)
    example = {**shots[0], "meta": {**shots[0]["meta"], "id": 100}}
    return Sample(
        NAME,
        (
            "Понимание голосовых команд: намерение и слоты в формате JSON.",
            "Spoken language understanding: the intent and slots as JSON.",
        ),
        "Определение намерения и слотов голосового запроса.",
        "json",
        ["Audio perception", "Information extraction"],
        test,
        shots,
        example,
        _clips(),
        public=True,
        prompts={"task_context": {"default": ["Не обязательно все слоты присутствуют в запросе."]}},
    )


def write_sample(out_dir):
    return write_av(sample(), out_dir, "audio", {"Intent Exact Match": 0.9069, "Slots F1": 0.305})
