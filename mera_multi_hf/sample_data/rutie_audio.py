"""The bundled ruTiE-Audio sample: three short dialogues (three turns each) in the test
split and one of four in the shots, over synthesised clips; no question field, only the
options (as the official data). ``meta.question_id`` / ``meta.dialog_id`` place each
turn; one gold is a Cyrillic letter. The instruction holds the literal ``<context>`` and
braces that the official ruTiE prompt rule keeps."""
from __future__ import annotations

from .av_common import clip, options, write_av
from .common import Sample, number

NAME = "ruTiE-Audio"
PROMPT = ("С вами ведут диалог посредством аудиосообщений. Освежите в памяти {контекст} "
          "предыдущей беседы: <context>. Внимательно прослушайте аудио: <audio>. Выберите "
          "наиболее правильный вариант ответной реакции, указав только букву.\nA. {option_a}\n"
          "B. {option_b}\nC. {option_c}\nD. {option_d}\nОтвет:")
CLIPS = {"one": clip("beeps", 1), "two": clip("beeps", 2), "three": clip("beeps", 3),
         "tone": clip("tone", 440)}
COUNTS = ("один сигнал", "два сигнала", "три сигнала", "ни одного")
# dialogues of (clip, options, gold)
DIALOGUES = [
    [("one", COUNTS, "A"), ("two", COUNTS, "B"),
     ("three", ("столько же, сколько в первом", "больше, чем во втором", "меньше", "тишина"), "Б")],
    [("tone", ("тон", "шум", "речь", "тишина"), "A"), ("three", COUNTS, "C"),
     ("tone", ("тот же тон, что в начале", "другой тон", "шум", "речь"), "A")],
    [("two", COUNTS, "B"), ("two", ("так же, как раньше", "больше", "меньше", "тишина"), "A"),
     ("one", COUNTS, "A")],
]
SHOTS = [[("one", COUNTS, "A"), ("two", COUNTS, "B"), ("three", COUNTS, "C"),
          ("tone", ("тон", "шум", "речь", "тишина"), "A")]]


def _records(dialogues) -> list[dict]:
    return [{"instruction": PROMPT,
             "inputs": {"audio": f"samples/{name}.wav", **options(opts)}, "outputs": gold,
             "meta": {"question_id": q, "dialog_id": d, "type": "Вводная категория",
                      "turing_imitation": "memory", "unified_category": "context",
                      "nonunified_category": "Память", "short_context": int(q > 0),
                      "long_context": 0, "audio": {"type": "synthetic"}}}
            for d, dialogue in enumerate(dialogues) for q, (name, opts, gold) in enumerate(dialogue)]


def sample() -> Sample:
    test = number(_records(DIALOGUES))
    shots = number(_records(SHOTS), first_id=len(test) + 1)
    example = {**test[0], "meta": {**test[0]["meta"], "id": 100}}
    return Sample(
        NAME, ("Короткие диалоги с аудиосообщениями: каждый ответ опирается на предыдущие.",
               "Short dialogues of audio messages: each answer relies on the earlier ones."),
        "Выбор реакции в диалоге с учётом контекста беседы.", "letter",
        ["Audio perception", "Topic understanding"], test, shots, example,
        {f"samples/{n}.wav": c for n, c in CLIPS.items()},
        prompts={"task_context": {"default": ["Задача опирается на контекст диалога."]}})


def write_sample(out_dir):
    return write_av(sample(), out_dir, "audio", {"Exact match": 0.446})
