"""The bundled ruCommonVQA sample: short answers about simple drawings; a gold may list
several acceptable answers (a number as digits and as a word, two word forms)."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.common import Sample, number, shapes_picture

NAME = "ruCommonVQA"
PROMPT = (
    "Внимательно посмотрите на картинку <image>.\nОтветьте на вопрос коротко: одним "
    "словом или числом, без рассуждений.\nВопрос: {question}\nОтвет:"
)
PICTURES = {
    "samples/image0001.png": [
        ("circle", "красный", 16, 20, 8),
        ("circle", "синий", 44, 20, 8),
        ("circle", "зелёный", 30, 46, 8),
    ],
    "samples/image0002.png": [("square", "красный", 32, 32, 14)],
    "samples/image0003.png": [("triangle", "жёлтый", 32, 32, 16)],
    "samples/image0004.png": [("square", "синий", 18, 32, 9), ("circle", "синий", 46, 32, 9)],
    "samples/example.png": [("circle", "серый", 32, 32, 12)],
}
# (picture, question, answers, question_type, complexity)
ITEMS = [
    ("0001", "Сколько кругов на картинке?", ["3", "три"], "counting", "simple"),
    ("0001", "Какого цвета нижний круг?", ["зелёный", "зеленый"], "color", "simple"),
    ("0002", "Есть ли на картинке квадрат?", "Да", "binary", "simple"),
    ("0002", "Какого цвета фигура?", ["красный", "красного"], "color", "simple"),
    ("0003", "Какая фигура нарисована?", ["треугольник"], "other", "simple"),
    ("0003", "Есть ли на картинке круг?", "Нет", "binary", "simple"),
    ("0004", "Сколько фигур синего цвета?", ["2", "две", "два"], "counting", "complex"),
    ("0004", "Какая фигура справа?", ["круг", "окружность"], "other", "complex"),
    # shots
    ("0001", "Какого цвета левый круг?", ["красный"], "color", "simple"),
    ("0002", "Сколько квадратов на картинке?", ["1", "один"], "counting", "simple"),
    ("0003", "Фигура жёлтая?", "Да", "binary", "simple"),
    ("0004", "Какая фигура слева?", ["квадрат"], "other", "complex"),
]
TEST_ITEMS = 8


def _record(item) -> dict:
    picture, question, answers, question_type, complexity = item
    return {
        "instruction": PROMPT,
        "inputs": {"image": f"samples/image{picture}.png", "question": question},
        "outputs": answers,
        "meta": {
            "categories": {"question_type": question_type},
            "complexity": complexity,
            "image": {"source": ["drawing"]},
        },
    }


def sample() -> Sample:
    records = number([_record(item) for item in ITEMS])
    example = _record(("0001", "Сколько серых кругов?", ["1", "один"], "counting", "simple"))
    example["inputs"]["image"] = "samples/example.png"
    example["meta"] = {"id": 100, **example["meta"]}
    return Sample(
        NAME,
        (
            "Короткие ответы на вопросы о простых рисунках; правильных ответов может быть "
            "несколько.",
            "Short answers to questions about simple drawings; a question may "
            "have several acceptable answers.",
        ),
        "Ответ на вопрос по изображению одним словом или числом.",
        "short",
        ["Object recognition", "Static counting"],
        records[:TEST_ITEMS],
        records[TEST_ITEMS:],
        example,
        {p: shapes_picture(s) for p, s in PICTURES.items()},
        public=True,
        prompts={"task_context": {"default": ["Вопрос прямо связан с содержанием картинки."]}},
    )
