"""The bundled ruNaturalScienceVQA sample: natural-science questions in four domains, with
a ``context`` text (sometimes empty) and options A-D. One raw folder holds every domain;
each record names its own in ``meta.categories.domain``, as the official records do.
The domains have different sizes, so the size weighting of the task score shows."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.common import Sample, number, shapes_picture

NAME = "ruNaturalScienceVQA"
PROMPT = (
    "Дано: вопрос с вариантами ответа, изображение и, возможно, пояснение. Ответьте "
    "буквой правильного варианта (A, B, C или D) без пояснений. Изображение: <image>. "
    "Пояснение: {context} Вопрос: {question} A. {option_a} B. {option_b} C. {option_c} "
    "D. {option_d} Ответ:"
)
PICTURES = {
    "leaf": [("circle", "зелёный", 32, 32, 18)],
    "flask": [("triangle", "синий", 32, 36, 18)],
    "magnet": [("square", "красный", 20, 32, 10), ("square", "синий", 44, 32, 10)],
    "planet": [("circle", "синий", 32, 32, 20), ("circle", "белый", 26, 26, 5)],
}
# (domain, subdomain, picture, context, question, options, gold)
ITEMS = [
    (
        "biology",
        "Plants",
        "leaf",
        "Листья большинства растений зелёные из-за хлорофилла.",
        "Какое вещество придаёт листу цвет?",
        ("крахмал", "хлорофилл", "вода", "соль"),
        "B",
    ),
    (
        "biology",
        "Plants",
        "leaf",
        "",
        "Что растения получают с помощью листьев?",
        ("свет", "песок", "камни", "металл"),
        "A",
    ),
    (
        "biology",
        "Cells",
        "leaf",
        "",
        "Где в клетке растения идёт фотосинтез?",
        ("в ядре", "в вакуоли", "в стенке", "в хлоропластах"),
        "D",
    ),
    (
        "chemistry",
        "Solutions",
        "flask",
        "В колбе раствор поваренной соли в воде.",
        "Что здесь растворитель?",
        ("соль", "вода", "колба", "воздух"),
        "B",
    ),
    (
        "chemistry",
        "Matter",
        "flask",
        "",
        "Какое из веществ — жидкость при комнатной температуре?",
        ("железо", "кислород", "вода", "соль"),
        "C",
    ),
    (
        "physics",
        "Magnets",
        "magnet",
        "Синий и красный — разные полюса магнита.",
        "Что сделают разные полюса двух магнитов?",
        ("оттолкнутся", "притянутся", "нагреются", "ничего"),
        "B",
    ),
    (
        "physics",
        "Forces",
        "magnet",
        "",
        "Какой металл притягивает магнит?",
        ("медь", "алюминий", "железо", "золото"),
        "C",
    ),
    (
        "earth_science",
        "Space",
        "planet",
        "",
        "Какая планета изображена голубой с облаками?",
        ("Земля", "Марс", "Венера", "Меркурий"),
        "A",
    ),
    # shots
    (
        "biology",
        "Plants",
        "leaf",
        "",
        "Какого цвета обычно лист летом?",
        ("красного", "зелёного", "синего", "чёрного"),
        "B",
    ),
    (
        "chemistry",
        "Matter",
        "flask",
        "",
        "Что кипит при 100 °C на уровне моря?",
        ("вода", "спирт", "ртуть", "масло"),
        "A",
    ),
    (
        "physics",
        "Magnets",
        "magnet",
        "",
        "Сколько полюсов у магнита?",
        ("один", "три", "четыре", "два"),
        "D",
    ),
    (
        "earth_science",
        "Space",
        "planet",
        "",
        "Вокруг чего вращается Земля?",
        ("вокруг Луны", "вокруг Марса", "вокруг Солнца", "ни вокруг чего"),
        "C",
    ),
]
TEST_ITEMS = 8


def _record(item) -> dict:
    domain, subdomain, picture, context, question, options, gold = item
    return {
        "instruction": PROMPT,
        "inputs": {
            "image": f"samples/{picture}.png",
            "context": context,
            "question": question,
            **dict(zip(("option_a", "option_b", "option_c", "option_d"), options)),
        },
        "outputs": gold,
        "meta": {"categories": {"domain": domain, "subdomain": subdomain}},
    }


def sample() -> Sample:
    records = number([_record(item) for item in ITEMS])
    example = _record(ITEMS[0])
    example["meta"] = {"id": 100, **example["meta"]}
    return Sample(
        NAME,
        (
            "Школьные вопросы по естественным наукам с картинкой и пояснением.",
            "School natural-science questions with a picture and a context text.",
        ),
        "Выбор ответа на вопрос по естественным наукам.",
        "letter",
        ["Expert domain knowledge", "Scheme recognition"],
        records[:TEST_ITEMS],
        records[TEST_ITEMS:],
        example,
        {f"samples/{p}.png": shapes_picture(s) for p, s in PICTURES.items()},
        public=True,
        domains=["biology", "chemistry", "earth_science", "physics"],
        field_texts={"inputs.context": ("Пояснение к картинке.", "A context text.")},
        prompts={"task_context": {"default": ["Изображение относится к естественным наукам."]}},
    )
