"""The bundled ruTiE-Audio sample: three short dialogues (three turns each) in the test
split and one of four in the shots, over synthesised clips; no question field, only the
options (as the official data). The ids agree with ``meta.question_id`` /
``meta.dialog_id`` by the official arithmetic (id = first + 500 * dialog + question; the
smallest test id is 1, not the packer's 11); one gold is a Cyrillic letter. The instruction holds the literal ``<context>`` and
braces that the official ruTiE prompt rule keeps."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.av_common import clip, options, write_av
from mera_multi_hf.demo.sample_data.common import Sample

NAME = "ruTiE-Audio"
PROMPT = (
    "С вами ведут диалог посредством аудиосообщений. Освежите в памяти {контекст} "
    "предыдущей беседы: <context>. Внимательно прослушайте аудио: <audio>. Выберите "
    "наиболее правильный вариант ответной реакции, указав только букву.\nA. {option_a}\n"
    "B. {option_b}\nC. {option_c}\nD. {option_d}\nОтвет:"
)
CLIPS = {
    "one": clip("beeps", 1),
    "two": clip("beeps", 2),
    "three": clip("beeps", 3),
    "tone": clip("tone", 440),
}
COUNTS = ("один сигнал", "два сигнала", "три сигнала", "ни одного")
# dialogues of (clip, options, gold)
DIALOGUES = [
    [
        ("one", COUNTS, "A"),
        ("two", COUNTS, "B"),
        (
            "three",
            ("столько же, сколько в первом", "больше, чем во втором", "меньше", "тишина"),
            "Б",
        ),
    ],
    [
        ("tone", ("тон", "шум", "речь", "тишина"), "A"),
        ("three", COUNTS, "C"),
        ("tone", ("тот же тон, что в начале", "другой тон", "шум", "речь"), "A"),
    ],
    [
        ("two", COUNTS, "B"),
        ("two", ("так же, как раньше", "больше", "меньше", "тишина"), "A"),
        ("one", COUNTS, "A"),
    ],
]
SHOTS = [
    [
        ("one", COUNTS, "A"),
        ("two", COUNTS, "B"),
        ("three", COUNTS, "C"),
        ("tone", ("тон", "шум", "речь", "тишина"), "A"),
    ]
]


def _records(dialogues) -> list[dict]:
    return [
        {
            "instruction": PROMPT,
            "inputs": {"audio": f"samples/{name}.wav", **options(opts)},
            "outputs": gold,
            "meta": {
                "question_id": q,
                "dialog_id": d,
                "type": "Вводная категория",
                "turing_imitation": "memory",
                "unified_category": "context",
                "nonunified_category": "Память",
                "short_context": int(q > 0),
                "long_context": 0,
                "audio": {"type": "synthetic"},
            },
        }
        for d, dialogue in enumerate(dialogues)
        for q, (name, opts, gold) in enumerate(dialogue)
    ]


def _numbered(records: list[dict], first_id: int) -> list[dict]:
    """Ids that the official process_docs maps back to each record's meta position:
    first_id + 500 * dialog_id + question_id."""
    for r in records:
        r["meta"] = {
            "id": first_id + 500 * r["meta"]["dialog_id"] + r["meta"]["question_id"],
            **r["meta"],
        }
    return records


def sample() -> Sample:
    test = _numbered(_records(DIALOGUES), 1)  # the smallest id is not the packer's 11
    shots = _numbered(_records(SHOTS), 2001)
    example = {**test[0], "meta": {**test[0]["meta"], "id": 100}}
    return Sample(
        NAME,
        (
            "Короткие диалоги с аудиосообщениями: каждый ответ опирается на предыдущие.",
            "Short dialogues of audio messages: each answer relies on the earlier ones.",
        ),
        "Выбор реакции в диалоге с учётом контекста беседы.",
        "letter",
        ["Audio perception", "Topic understanding"],
        test,
        shots,
        example,
        {f"samples/{n}.wav": c for n, c in CLIPS.items()},
        prompts={"task_context": {"default": ["Задача опирается на контекст диалога."]}},
    )


def write_sample(out_dir):
    return write_av(sample(), out_dir, "audio", {"Exact match": 0.446})
