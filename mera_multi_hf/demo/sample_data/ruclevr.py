"""The bundled ruCLEVR sample: scenes of coloured shapes, answered by a word or a number.
Its records use the documented raw form: ``instruction`` is an index into ``prompts``."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.common import Sample, number, shapes_picture

NAME = "ruCLEVR"
PROMPTS = [
    "Изображение:\n<image>\nВопрос: {question}\nОтветь одним словом или числом.\nОтвет:",
    "<image>\nНа картинке геометрические фигуры. {question}\nОтвет:",
    "Посмотри на сцену <image> и ответь на вопрос одним словом: {question}",
    "Вопрос о фигурах на изображении <image>: {question}\nНапиши только ответ.",
    "<image>\n{question}\nОтвет дай числом или словом в начальной форме.",
    "Сцена: <image>\nЗадание: {question}\nКраткий ответ:",
    "Рассмотри изображение <image>. {question} Ответь кратко.",
    "<image> Вопрос: {question} Ответ (одно слово или число):",
    "На изображении <image> показаны фигуры разного цвета и формы.\n{question}\nОтвет:",
    "Ответь на вопрос по картинке.\n<image>\n{question}",
]
SCENES = {
    "samples/image0001.png": [
        ("circle", "красный", 16, 16, 7),
        ("square", "синий", 46, 16, 7),
        ("triangle", "зелёный", 32, 46, 9),
    ],
    "samples/image0002.png": [("square", "жёлтый", 20, 40, 10), ("square", "серый", 46, 22, 8)],
    "samples/image0003.png": [
        ("circle", "синий", 14, 32, 6),
        ("circle", "синий", 32, 32, 6),
        ("circle", "красный", 50, 32, 6),
    ],
    "samples/example.png": [("triangle", "красный", 32, 32, 12)],
}
# (scene, question, answer, question_type)
ITEMS = [
    ("0001", "Сколько всего фигур на изображении?", "3", "count"),
    ("0001", "Какого цвета треугольник?", "зелёный", "query_color"),
    ("0001", "Есть ли на изображении жёлтая фигура?", "нет", "exist"),
    ("0002", "Какой формы серая фигура?", "квадрат", "query_shape"),
    ("0002", "Сколько квадратов на изображении?", "2", "count"),
    ("0003", "Сколько синих кругов?", "2", "count"),
    ("0003", "Какого цвета правый круг?", "красный", "query_color"),
    ("0003", "Все ли фигуры круглые?", "да", "binary"),
    # shots
    ("0001", "Какой формы синяя фигура?", "квадрат", "query_shape"),
    ("0002", "Есть ли на изображении круг?", "нет", "exist"),
    ("0003", "Сколько всего фигур?", "3", "count"),
    ("0002", "Какого цвета большой квадрат?", "жёлтый", "query_color"),
]
TEST_ITEMS = 8


def _record(n, item) -> dict:
    scene, question, answer, question_type = item
    return {
        "instruction": n % len(PROMPTS),
        "inputs": {"image": f"samples/image{scene}.png", "question": question},
        "outputs": answer,
        "meta": {
            "question_type": question_type,
            "image": {"synt_source": ["Pillow"], "type": ["generated"]},
        },
    }


def sample() -> Sample:
    records = number([_record(n, item) for n, item in enumerate(ITEMS)])
    example = _record(0, ("0001", "Сколько треугольников?", "1", "count"))
    example["inputs"]["image"] = "samples/example.png"
    example["meta"] = {"id": 100, **example["meta"]}
    return Sample(
        NAME,
        (
            "Вопросы о сценах из простых геометрических фигур.",
            "Questions about scenes of simple geometric shapes.",
        ),
        "Ответ на вопрос о фигурах, их цвете, форме и количестве.",
        "short",
        ["Static counting", "Spatial object relationship"],
        records[:TEST_ITEMS],
        records[TEST_ITEMS:],
        example,
        {p: shapes_picture(s) for p, s in SCENES.items()},
        public=True,
        prompts=PROMPTS,
    )
