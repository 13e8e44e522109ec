"""The bundled ruMathVQA sample: the problem is in the picture (digits and signs drawn
with Pillow); ``annotation`` says how to write the answer. No question text."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.common import Sample, number, text_picture

NAME = "ruMathVQA"
PROMPT = "Решите задачу, изображённую на рисунке <image>. {annotation}\nОтвет:"
INTEGER = "Запишите ответ целым числом без единиц измерения."
# (picture lines, answer, annotation, topic)
ITEMS = [
    (["12 + 30 = ?"], "42", INTEGER, "arithmetic"),
    (["7 * 8 = ?"], "56", INTEGER, "arithmetic"),
    (["x + 5 = 12", "x = ?"], "7", INTEGER, "equations"),
    (
        ["Rectangle 6 x 4", "Area = ?"],
        "24",
        "Запишите площадь целым числом в см^2 без единиц.",
        "geometry",
    ),
    (["1/2 + 1/4 = ?"], "3/4", "Запишите ответ несократимой дробью вида a/b.", "fractions"),
    (["Square, side 5", "Perimeter = ?"], "20", INTEGER, "geometry"),
    (["2x = 18", "x = ?"], "9", INTEGER, "equations"),
    (["0.5 + 0.25 = ?"], "0,75", "Запишите ответ десятичной дробью через запятую.", "fractions"),
    # shots
    (["100 - 37 = ?"], "63", INTEGER, "arithmetic"),
    (["3x - 3 = 9", "x = ?"], "4", INTEGER, "equations"),
    (["Triangle 3, 4, 5", "Perimeter = ?"], "12", INTEGER, "geometry"),
    (["1/3 + 1/3 = ?"], "2/3", "Запишите ответ несократимой дробью вида a/b.", "fractions"),
]
TEST_ITEMS = 8


def _record(n: int, item) -> dict:
    _, answer, annotation, topic = item
    return {
        "instruction": PROMPT,
        "inputs": {"image": f"samples/image{n:04d}.png", "annotation": annotation},
        "outputs": answer,
        "meta": {
            "categories": {"topic": topic},
            "image": {"source": "drawing", "type": "visual", "content": "riddle"},
        },
    }


def sample() -> Sample:
    records = number([_record(n, item) for n, item in enumerate(ITEMS, 1)])
    example_item = (["9 : 3 = ?"], "3", INTEGER, "arithmetic")
    example = _record(0, example_item)
    example["meta"] = {"id": 100, **example["meta"]}
    pictures = {
        f"samples/image{n:04d}.png": text_picture(item[0])
        for n, item in enumerate([example_item] + ITEMS)
    }
    return Sample(
        NAME,
        (
            "Школьные задачи по математике, условие которых нарисовано на картинке.",
            "School maths problems whose statement is drawn in the picture.",
        ),
        "Решение математической задачи по изображению.",
        "short",
        ["Mathematical reasoning", "Text recognition (OCR)"],
        records[:TEST_ITEMS],
        records[TEST_ITEMS:],
        example,
        pictures,
        field_texts={"inputs.annotation": ("Формат ответа.", "The answer format.")},
        prompts={"task_context": {"default": ["Изображение содержит условие задачи."]}},
    )
