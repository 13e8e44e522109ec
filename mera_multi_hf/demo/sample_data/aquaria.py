"""The bundled AQUARIA sample: questions over one or two synthesised clips. The prompt
names them ``<audio_1>`` and ``<audio_2>`` (the official prompt rewrites both to
``<audio>``); a one-clip question has no ``audio_2``. Records carry the music metadata
that the official ``exclude_fields`` drops on export."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.av_common import clip, options, write_av
from mera_multi_hf.demo.sample_data.common import Sample, number

NAME = "AQUARIA"
TWO = (
    "Задание содержит две аудиозаписи и вопрос к ним с четырьмя вариантами ответа. "
    "Прослушайте аудио: <audio_1>, <audio_2>. Прочитайте вопрос и напишите букву "
    "правильного ответа: {question}\nA) {option_a}\nB) {option_b}\nC) {option_c}\n"
    "D) {option_d}\n\nОтвет:"
)
ONE = (
    "Прослушайте аудиозапись <audio_1> и ответьте на вопрос: {question}\nA) {option_a}\n"
    "B) {option_b}\nC) {option_c}\nD) {option_d}\n\nОтвет:"
)
CLIPS = {
    "low": clip("tone", 220),
    "high": clip("tone", 1760),
    "noise": clip("noise", seed=2),
    "beeps": clip("beeps", 2),
    "silence": clip("silence", seconds=0.2),
}
COMPARE = ("первая выше", "вторая выше", "они одинаковые", "обе беззвучны")
# (clip 1, clip 2 or None, question, options, gold, task type)
ITEMS = [
    ("low", "high", "Какая запись звучит выше?", COMPARE, "B", "Audio comparison"),
    ("high", "low", "Какая запись звучит выше?", COMPARE, "A", "Audio comparison"),
    ("noise", None, "Что слышно на записи?", ("музыка", "шум", "речь", "тишина"), "B", "Audio QA"),
    (
        "beeps",
        "silence",
        "На какой записи есть сигналы?",
        ("на первой", "на второй", "на обеих", "ни на одной"),
        "A",
        "Audio comparison",
    ),
    ("silence", None, "Есть ли звук на записи?", ("да", "нет", "речь", "музыка"), "B", "Audio QA"),
    (
        "low",
        "low",
        "Чем различаются записи?",
        ("громкостью", "высотой", "ничем", "длиной"),
        "C",
        "Audio comparison",
    ),
    # shots
    (
        "high",
        None,
        "Какой это звук?",
        ("высокий тон", "низкий тон", "шум", "тишина"),
        "A",
        "Audio QA",
    ),
    (
        "noise",
        "beeps",
        "На какой записи шум?",
        ("на первой", "на второй", "на обеих", "ни на одной"),
        "A",
        "Audio comparison",
    ),
    (
        "low",
        None,
        "Какой это звук?",
        ("высокий тон", "низкий тон", "шум", "тишина"),
        "B",
        "Audio QA",
    ),
]
TEST_ITEMS = 6
MUSIC = {"music_genre": "none", "music_vocal": "none", "music_origin": "none"}


def _records(items) -> list[dict]:
    out = []
    for first, second, question, opts, gold, kind in items:
        inputs = {
            "question": question,
            "audio_1": f"samples/{first}.wav",
            "audio_2": f"samples/{second}.wav" if second else None,
            **options(opts),
        }
        out.append(
            {
                "instruction": TWO if second else ONE,
                "inputs": inputs,
                "outputs": gold,
                "meta": {
                    "categories": {"task_type": kind},
                    "audio": {**MUSIC, "synt_source": ["numpy"]},
                },
            }
        )
    return out


def sample() -> Sample:
    test = number(_records(ITEMS[:TEST_ITEMS]))
    shots = number(_records(ITEMS[TEST_ITEMS:]), first_id=len(test) + 1)
    example = {**test[0], "meta": {**test[0]["meta"], "id": 100}}
    return Sample(
        NAME,
        (
            "Вопросы к одной или двум синтезированным аудиозаписям.",
            "Questions about one or two synthesised clips.",
        ),
        "Выбор ответа на вопрос об одной или двух аудиозаписях.",
        "letter",
        ["Audio perception", "Comparison"],
        test,
        shots,
        example,
        {f"samples/{n}.wav": c for n, c in CLIPS.items()},
        exclude_fields={"meta": {"audio": ["music_genre", "music_vocal", "music_origin"]}},
        prompts={"task_context": {"default": ["Аудиозаписи нужны для ответа."]}},
    )


def write_sample(out_dir):
    return write_av(sample(), out_dir, "audio", {"Exact match": 0.9766})
