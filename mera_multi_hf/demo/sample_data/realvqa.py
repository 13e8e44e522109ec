"""The bundled RealVQA sample: short answers about drawings; some questions cannot be
answered from the picture, and the gold says so."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.common import Sample, number, shapes_picture

NAME = "RealVQA"
PROMPT = (
    "Внимательно посмотрите на картинку <image>.\nОтветьте на вопрос кратко, словом в той "
    "же форме, что в вопросе. Если ответить по картинке нельзя, так и напишите.\n\n"
    "Вопрос: {question}\n\nОтвет:"
)
PICTURES = {
    "samples/image0001.png": [("circle", "жёлтый", 32, 20, 10), ("square", "зелёный", 32, 50, 10)],
    "samples/image0002.png": [
        ("triangle", "красный", 20, 32, 10),
        ("triangle", "красный", 44, 32, 10),
    ],
    "samples/image0003.png": [("square", "чёрный", 32, 32, 20), ("circle", "белый", 32, 32, 6)],
    "samples/example.png": [("circle", "синий", 32, 32, 14)],
}
CANNOT = "нельзя ответить"
# (picture, question, answer, topics, domains)
ITEMS = [
    ("0001", "Что находится над квадратом?", "круг", ["spatial"], ["other"]),
    ("0001", "Какого цвета квадрат?", "зелёный", ["color"], ["other"]),
    ("0001", "Сколько лет человеку на картинке?", CANNOT, ["unanswerable"], ["people"]),
    ("0002", "Сколько треугольников?", "два", ["counting"], ["other"]),
    ("0002", "В каком городе сделан снимок?", CANNOT, ["unanswerable"], ["places"]),
    ("0003", "Какого цвета круг?", "белый", ["color"], ["other"]),
    ("0003", "Что внутри квадрата?", "круг", ["spatial"], ["other"]),
    ("0003", "Кто нарисовал эту картинку?", CANNOT, ["unanswerable"], ["people"]),
    # shots
    ("0002", "Какого цвета треугольники?", "красные", ["color"], ["other"]),
    ("0001", "Что находится под кругом?", "квадрат", ["spatial"], ["other"]),
    ("0003", "Какая погода на улице?", CANNOT, ["unanswerable"], ["nature"]),
    ("0003", "Сколько кругов?", "один", ["counting"], ["other"]),
]
TEST_ITEMS = 8


def _record(item) -> dict:
    picture, question, answer, topics, domains = item
    return {
        "instruction": PROMPT,
        "inputs": {"image": f"samples/image{picture}.png", "question": question},
        "outputs": answer,
        "meta": {
            "categories": {"question_topic": topics, "domain": domains, "class": "main"},
            "image": {
                "source": ["drawing"],
                "type": ["visual"],
                "content": ["object"],
                "context": ["no_context"],
            },
        },
    }


def sample() -> Sample:
    records = number([_record(item) for item in ITEMS])
    example = _record(("0001", "Какого цвета круг?", "синий", ["color"], ["other"]))
    example["inputs"]["image"] = "samples/example.png"
    example["meta"] = {"id": 100, **example["meta"]}
    return Sample(
        NAME,
        (
            "Короткие ответы по картинке; если ответа на картинке нет, нужно так и сказать.",
            "Short answers from the picture; when it does not hold the answer, say so.",
        ),
        "Ответ на вопрос по изображению или отказ, если ответа нет.",
        "short",
        ["Object recognition", "Common everyday knowledge"],
        records[:TEST_ITEMS],
        records[TEST_ITEMS:],
        example,
        {p: shapes_picture(s) for p, s in PICTURES.items()},
        exclude_fields={"meta": {"categories": ["class"]}},
        prompts={"task_context": {"default": ["Если информации не хватает, честно скажи."]}},
    )
