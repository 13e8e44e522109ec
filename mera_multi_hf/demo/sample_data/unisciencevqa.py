"""The bundled UniScienceVQA sample: university-level questions in its six domains,
mixed: some with options (three to six of them, A-F; the rest absent), some with a
short free answer and no options at all; ``annotation`` gives the answer format. Each
record names its domain in ``meta.domain`` (the official records name none); every
domain has test and shots examples, as every domain config of the Hub copy has both."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.common import Sample, number, shapes_picture

NAME = "UniScienceVQA"
SHORT = "Ознакомьтесь с изображением <image> и ответьте на вопрос. {question} {annotation}\nОтвет:"
# An option template lists six options: a question with fewer prints "None" for the rest,
# exactly as the official instruction.format(**inputs) does.
CHOICE = (
    "Изображение: <image>\n{question}\nA. {option_a}\nB. {option_b}\nC. {option_c}\n"
    "D. {option_d}\nE. {option_e}\nF. {option_f}\n{annotation}\nОтвет:"
)
LETTER = "В ответе укажите только букву."
NUMBER = "В ответе напишите только число."
PICTURES = {
    "graph": [
        ("circle", "чёрный", 16, 16, 5),
        ("circle", "чёрный", 48, 16, 5),
        ("circle", "чёрный", 32, 48, 5),
    ],
    "chart": [
        ("square", "синий", 16, 44, 8),
        ("square", "синий", 34, 36, 8),
        ("square", "синий", 50, 28, 8),
    ],
    "pill": [("circle", "белый", 32, 32, 14), ("square", "красный", 32, 32, 4)],
}
# (domain, subdomain, picture, question, options or None, gold, annotation)
ITEMS = [
    ("Fundamental_Sciences", "Mathematics", "graph", "Сколько вершин у графа?", None, "3", NUMBER),
    (
        "Fundamental_Sciences",
        "Physics",
        "chart",
        "Как меняется величина на графике?",
        ("растёт", "падает", "постоянна"),
        "A",
        LETTER,
    ),
    (
        "Applied sciences",
        "Computer science",
        "graph",
        "Сколько рёбер нужно, чтобы граф стал полным?",
        None,
        "3",
        NUMBER,
    ),
    (
        "Business",
        "Finance",
        "chart",
        "Какой столбец самый высокий?",
        ("левый", "средний", "правый", "все равны", "нет столбцов"),
        "C",
        LETTER,
    ),
    (
        "Health_and_Medicine",
        "Pharmacology",
        "pill",
        "Какой формы таблетка?",
        ("квадратная", "треугольная", "круглая", "овальная"),
        "C",
        LETTER,
    ),
    (
        "Social_Sciences",
        "Sociology",
        "chart",
        "Сколько групп сравнивается на диаграмме?",
        None,
        "3",
        NUMBER,
    ),
    (
        "Cultural_Studies",
        "Art",
        "pill",
        "Сколько цветов использовано в рисунке?",
        ("один", "два", "три", "четыре", "пять", "шесть"),
        "B",
        LETTER,
    ),
    (
        "Applied_Sciences",
        "Engineering",
        "chart",
        "Сколько столбцов на диаграмме?",
        None,
        "3",
        NUMBER,
    ),
    # shots
    ("Business", "Finance", "chart", "Сколько столбцов выше левого?", None, "2", NUMBER),
    (
        "Health_and_Medicine",
        "Pharmacology",
        "pill",
        "Какого цвета таблетка?",
        ("белого", "зелёного", "синего"),
        "A",
        LETTER,
    ),
    ("Fundamental_Sciences", "Mathematics", "graph", "Сколько вершин у графа?", None, "3", NUMBER),
    (
        "Cultural_Studies",
        "Art",
        "graph",
        "Какие фигуры изображены?",
        ("квадраты", "круги", "треугольники", "линии"),
        "B",
        LETTER,
    ),
    (
        "Applied_Sciences",
        "Engineering",
        "chart",
        "Сколько столбцов ниже правого?",
        None,
        "2",
        NUMBER,
    ),
    ("Social_Sciences", "Sociology", "graph", "Сколько точек на схеме?", None, "3", NUMBER),
]
TEST_ITEMS = 8


def _record(item) -> dict:
    domain, subdomain, picture, question, options, gold, annotation = item
    inputs = {"image": f"samples/{picture}.png", "question": question, "annotation": annotation}
    inputs.update({f"option_{c}": o for c, o in zip("abcdefghij", options or ())})
    return {
        "instruction": CHOICE if options else SHORT,
        "inputs": inputs,
        "outputs": gold,
        "meta": {
            "domain": domain,
            "categories": {
                "subdomain": subdomain,
                "type_answer": "single choice" if options else "short answer",
            },
            "image": {"source": "drawing", "type": "visual", "content": "riddle"},
        },
    }


def sample() -> Sample:
    records = number([_record(item) for item in ITEMS])
    example = _record(ITEMS[0])
    example["meta"] = {"id": 100, **example["meta"]}
    return Sample(
        NAME,
        (
            "Вопросы университетского уровня по картинке: с вариантами или с коротким ответом.",
            "University-level questions on a picture: with options or a short answer.",
        ),
        "Ответ на вопрос по изображению: буква варианта или короткий ответ.",
        "short",
        ["Expert domain knowledge", "Mathematical reasoning"],
        records[:TEST_ITEMS],
        records[TEST_ITEMS:],
        example,
        {f"samples/{p}.png": shapes_picture(s) for p, s in PICTURES.items()},
        domains=[
            "Fundamental sciences",
            "Social sciences",
            "Cultural studies",
            "Health and medicine",
            "Business",
            "Applied sciences",
        ],
        field_texts={"inputs.annotation": ("Формат ответа.", "The answer format.")},
        prompts={"task_context": {"default": ["Вопрос требует знаний университетского уровня."]}},
    )
