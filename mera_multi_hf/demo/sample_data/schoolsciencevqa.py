"""The bundled SchoolScienceVQA sample: school questions in several of its seven domains,
options A-D and a ``context`` text. One raw folder holds every domain; each record
names its own in ``meta.categories.domain`` (official form). ``hint`` and
``explanation`` are in the raw records and excluded by the metadata. Every domain has
test and shots examples, as every domain config of the Hub copy has both splits."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.common import Sample, number, shapes_picture

NAME = "SchoolScienceVQA"
PROMPT = (
    "Дано: вопрос с четырьмя вариантами ответа, изображение и, возможно, пояснение. "
    "Напишите букву правильного ответа (A, B, C или D).\nИзображение: <image>.\n"
    "Пояснение: {context}\nВопрос: {question}\nA. {option_a}\nB. {option_b}\n"
    "C. {option_c}\nD. {option_d}\nОтвет: "
)
PICTURES = {
    "coins": [("circle", "жёлтый", 20, 32, 9), ("circle", "жёлтый", 44, 32, 9)],
    "flag": [
        ("square", "белый", 32, 16, 8),
        ("square", "синий", 32, 32, 8),
        ("square", "красный", 32, 48, 8),
    ],
    "drop": [("circle", "синий", 32, 36, 12), ("triangle", "синий", 32, 20, 8)],
    "cell": [("circle", "зелёный", 32, 32, 20), ("circle", "серый", 32, 32, 6)],
}
# (domain, difficulty, picture, context, question, options, gold)
ITEMS = [
    (
        "economics",
        1,
        "coins",
        "",
        "Как называется то, что изображено, в экономике?",
        ("товар", "деньги", "труд", "налог"),
        "B",
    ),
    (
        "economics",
        2,
        "coins",
        "Цена выросла, а спрос упал.",
        "Что описано?",
        ("закон спроса", "инфляция", "налог", "кредит"),
        "A",
    ),
    (
        "history_ru",
        1,
        "flag",
        "",
        "Флаг какой страны изображён?",
        ("Франции", "Италии", "России", "Германии"),
        "C",
    ),
    (
        "history_all",
        2,
        "flag",
        "",
        "В каком веке появились государственные флаги в Европе?",
        ("в I веке", "в X веке", "во II веке", "в Новое время"),
        "D",
    ),
    (
        "chemistry",
        1,
        "drop",
        "",
        "Какая формула у вещества капли?",
        ("H2O", "CO2", "O2", "NaCl"),
        "A",
    ),
    (
        "physics",
        2,
        "drop",
        "Капля падает с высоты.",
        "Какая сила заставляет каплю падать?",
        ("трение", "упругость", "тяжесть", "магнитная"),
        "C",
    ),
    (
        "biology",
        1,
        "cell",
        "",
        "Что изображено в центре клетки?",
        ("ядро", "стенка", "хлоропласт", "вакуоль"),
        "A",
    ),
    (
        "earth_science",
        3,
        "drop",
        "",
        "Как называется круговорот капли в природе?",
        ("круговорот воды", "эрозия", "выветривание", "прилив"),
        "A",
    ),
    # shots
    (
        "economics",
        1,
        "coins",
        "",
        "Сколько монет на рисунке?",
        ("одна", "две", "три", "четыре"),
        "B",
    ),
    ("history_ru", 2, "flag", "", "Сколько полос на флаге?", ("две", "четыре", "три", "пять"), "C"),
    (
        "biology",
        1,
        "cell",
        "",
        "Какого цвета клетка на рисунке?",
        ("красного", "синего", "жёлтого", "зелёного"),
        "D",
    ),
    (
        "physics",
        1,
        "drop",
        "",
        "В каком состоянии вода в капле?",
        ("жидком", "твёрдом", "газообразном", "плазме"),
        "A",
    ),
    (
        "chemistry",
        2,
        "drop",
        "",
        "Из каких элементов состоит вода?",
        ("водород и кислород", "углерод и кислород", "натрий и хлор", "азот"),
        "A",
    ),
    (
        "earth_science",
        1,
        "drop",
        "",
        "Откуда падают капли дождя?",
        ("из облаков", "из земли", "из моря напрямую", "с гор"),
        "A",
    ),
    (
        "history_all",
        1,
        "flag",
        "",
        "Что обычно изображают на флаге?",
        ("символы страны", "рецепты", "погоду", "расписание"),
        "A",
    ),
]
TEST_ITEMS = 8


def _record(item) -> dict:
    domain, difficulty, picture, context, question, options, gold = item
    return {
        "instruction": PROMPT,
        "inputs": {
            "image": f"samples/{picture}.png",
            "context": context,
            "question": question,
            **dict(zip(("option_a", "option_b", "option_c", "option_d"), options)),
        },
        "outputs": gold,
        "meta": {
            "image": {"type": ["visual"], "source": ["drawing"]},
            "hint": "Подумайте, что изображено.",
            "explanation": "См. учебник.",
            "categories": {"domain": domain, "question_difficulty": difficulty},
        },
    }


def sample() -> Sample:
    records = number([_record(item) for item in ITEMS])
    example = _record(ITEMS[4])
    example["meta"] = {"id": 100, **example["meta"]}
    return Sample(
        NAME,
        (
            "Школьные вопросы по естественным и гуманитарным наукам с картинкой.",
            "School questions on sciences, history and economics with a picture.",
        ),
        "Выбор ответа на школьный вопрос по изображению.",
        "letter",
        ["Expert domain knowledge", "Scheme recognition"],
        records[:TEST_ITEMS],
        records[TEST_ITEMS:],
        example,
        {f"samples/{p}.png": shapes_picture(s) for p, s in PICTURES.items()},
        domains=[
            "biology",
            "chemistry",
            "earth_science",
            "economics",
            "history_all",
            "history_ru",
            "physics",
        ],
        exclude_fields={"meta": ["hint", "explanation"]},
        field_texts={"inputs.context": ("Пояснение к картинке.", "A context text.")},
        prompts={"task_context": {"default": ["Изображение нужно для ответа на вопрос."]}},
    )
