"""The bundled ruTiE-Image sample: three short dialogues (three questions each) in the
test split and one of four in the shots. The ids agree with ``meta.question_id`` /
``meta.dialog_id`` by the official arithmetic (id = first + 500 * dialog + question), and
the smallest test id is 1, not the official packer's 11; some golds are Cyrillic letters ("Б"), as in the official data. The
instruction holds literal braces, which the official ruTiE prompt rule keeps."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.common import Sample, shapes_picture

NAME = "ruTiE-Image"
PROMPT = (
    "Вам придётся помнить {контекст} беседы, которую с вами ведут текстом и картинками. "
    "Сопоставьте картинку <image> и вопрос с предыдущей беседой и выберите верный "
    "вариант. Выведите одну букву.\nВопрос:\n{question}\nA. {option_a}\nB. {option_b}\n"
    "C. {option_c}\nD. {option_d}\nОтвет:"
)
PICTURES = {
    "sun": [("circle", "жёлтый", 32, 32, 16)],
    "house": [("square", "красный", 32, 40, 14), ("triangle", "серый", 32, 18, 14)],
    "cat": [
        ("circle", "серый", 32, 38, 14),
        ("triangle", "серый", 22, 18, 6),
        ("triangle", "серый", 42, 18, 6),
    ],
}
# dialogues of (picture, question, options, gold)
DIALOGUES = [
    [
        ("sun", "Привет! Что на картинке?", ("луна", "солнце", "мяч", "лампа"), "Б"),
        ("sun", "Какого оно цвета?", ("жёлтого", "синего", "зелёного", "чёрного"), "A"),
        (
            "sun",
            "О чём мы говорили в первом вопросе?",
            ("о доме", "о кошке", "о солнце", "ни о чём"),
            "C",
        ),
    ],
    [
        ("house", "Посмотри: что это?", ("дом", "машина", "дерево", "река"), "A"),
        ("house", "Какого цвета стены?", ("синего", "красного", "белого", "жёлтого"), "Б"),
        ("house", "А крыша такого же цвета, как стены?", ("да", "почти", "не видно", "нет"), "D"),
    ],
    [
        ("cat", "Кто это?", ("собака", "птица", "кошка", "рыба"), "В"),
        ("cat", "Сколько у неё ушей на рисунке?", ("одно", "два", "три", "ни одного"), "B"),
        ("cat", "Как её можно назвать?", ("Мурка", "Шарик", "Кеша", "Бобик"), "A"),
    ],
]
SHOTS = [
    [
        ("sun", "Что светит днём?", ("фонарь", "солнце", "свеча", "луна"), "B"),
        ("house", "Где живут люди?", ("в доме", "в реке", "в облаке", "в море"), "A"),
        ("cat", "Кто говорит «мяу»?", ("корова", "кошка", "утка", "собака"), "Б"),
        ("sun", "Что было на первой картинке?", ("дом", "кошка", "солнце", "река"), "C"),
    ]
]


def _records(dialogues) -> list[dict]:
    out = []
    for dialog_id, dialogue in enumerate(dialogues):
        for question_id, (picture, question, options, gold) in enumerate(dialogue):
            out.append(
                {
                    "instruction": PROMPT,
                    "inputs": {
                        "image": f"samples/{picture}.png",
                        "question": question,
                        **dict(zip(("option_a", "option_b", "option_c", "option_d"), options)),
                    },
                    "outputs": gold,
                    "meta": {
                        "question_id": question_id,
                        "dialog_id": dialog_id,
                        "type": "Вводная категория",
                        "unified_category": "context",
                        "nonunified_category": "Память",
                        "turing_imitation": "memory",
                        "short_context": int(question_id > 0),
                        "long_context": 0,
                        "image": {"type": "drawing"},
                    },
                }
            )
    return out


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
            "Короткие диалоги с картинками: каждый вопрос опирается на предыдущие.",
            "Short dialogues with pictures: each question relies on the earlier ones.",
        ),
        "Выбор ответа в диалоге с учётом контекста беседы.",
        "letter",
        ["Common everyday knowledge", "Topic understanding"],
        test,
        shots,
        example,
        {f"samples/{p}.png": shapes_picture(s) for p, s in PICTURES.items()},
        prompts={"task_context": {"default": ["Задача опирается на контекст диалога."]}},
    )
