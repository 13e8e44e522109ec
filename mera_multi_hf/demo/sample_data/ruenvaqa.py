"""The bundled ruEnvAQA sample: questions about short synthesised sounds (tones, a
chirp, noise, beeps, silence), four options each. Public: the test answers are kept.
One clip is stereo at 22.05 kHz, so a run has to mix it down and resample it."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.av_common import clip, options, write_av
from mera_multi_hf.demo.sample_data.common import Sample, number

NAME = "ruEnvAQA"
PROMPT = (
    "Прослушайте аудиозапись.<audio> Прочитайте вопрос к аудио, оцените варианты ответа "
    "и выберите один правильный. Дайте ответ буквой без пояснений.\n\nВопрос: {question}\n"
    "A. {option_a}\nB. {option_b}\nC. {option_c}\nD. {option_d}\n\nОтвет:"
)
CLIPS = {
    "high": clip("tone", 1760),
    "low": clip("tone", 220),
    "noise": clip("noise", seed=1),
    "beeps": clip("beeps", 3),
    "silence": clip("silence"),
    "chirp": clip("chirp", 300, rate=22_050, channels=2),
}
WHAT = ("высокий ровный тон", "низкий ровный тон", "шум", "тишина")
# (clip, question, options, gold, task type, knowledge)
ITEMS = [
    ("high", "Какой звук слышен на записи?", WHAT, "A", "Audio scene classification"),
    ("low", "Какой звук слышен на записи?", WHAT, "B", "Audio scene classification"),
    (
        "noise",
        "На что больше всего похожа запись?",
        ("на пение птиц", "на шум помех", "на речь", "на музыку"),
        "B",
        "Audio QA",
    ),
    (
        "beeps",
        "Сколько коротких сигналов на записи?",
        ("один", "два", "три", "пять"),
        "C",
        "Audio QA",
    ),
    (
        "silence",
        "Есть ли на записи звук?",
        ("да, громкий", "да, тихий", "есть речь", "нет, тишина"),
        "D",
        "Audio QA",
    ),
    (
        "chirp",
        "Как меняется высота звука?",
        ("растёт", "падает", "не меняется", "звука нет"),
        "A",
        "Audio QA",
    ),
    # shots
    (
        "low",
        "Высокий или низкий этот тон?",
        ("высокий", "низкий", "средний", "звука нет"),
        "B",
        "Audio QA",
    ),
    (
        "high",
        "Высокий или низкий этот тон?",
        ("высокий", "низкий", "средний", "звука нет"),
        "A",
        "Audio QA",
    ),
    ("silence", "Что слышно на записи?", WHAT, "D", "Audio scene classification"),
]
TEST_ITEMS = 6


def _records(items) -> list[dict]:
    return [
        {
            "instruction": PROMPT,
            "inputs": {"question": question, "audio": f"samples/{name}.wav", **options(opts)},
            "outputs": gold,
            "meta": {
                "categories": {
                    "task_type": kind,
                    "source_dataset": "mera-multi-hf",
                    "knowledge": "common",
                }
            },
        }
        for name, question, opts, gold, kind in items
    ]


def sample() -> Sample:
    test = number(_records(ITEMS[:TEST_ITEMS]))
    shots = number(_records(ITEMS[TEST_ITEMS:]), first_id=len(test) + 1)
    example = {**shots[0], "meta": {**shots[0]["meta"], "id": 100}}
    return Sample(
        NAME,
        ("Вопросы о коротких синтезированных звуках.", "Questions about short synthesised sounds."),
        "Выбор ответа на вопрос об аудиозаписи.",
        "letter",
        ["Audio perception", "Common everyday knowledge"],
        test,
        shots,
        example,
        {f"samples/{n}.wav": c for n, c in CLIPS.items()},
        public=True,
        prompts={"task_context": {"default": ["Аудиозапись нужна для ответа."]}},
    )


def write_sample(out_dir):
    return write_av(sample(), out_dir, "audio", {"Exact match": 0.9497})
