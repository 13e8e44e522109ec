"""The bundled LabTabVQA sample: pictures of small lab tables, seven options A-G."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.common import Sample, number, text_picture

NAME = "LabTabVQA"
PROMPT = (
    "На основании изображения <image> ответьте на вопрос.\n{question}\nA. {option_a}\n"
    "B. {option_b}\nC. {option_c}\nD. {option_d}\nE. {option_e}\nF. {option_f}\n"
    "G. {option_g}\nОтветьте только буквой варианта."
)
TABLES = {
    "t1": ["Test|Value|Norm", "HGB|135|120-160", "WBC|11.2|4-9", "PLT|250|180-320"],
    "t2": ["Test|Value|Norm", "GLU|5.1|3.9-5.5", "CHOL|6.4|<5.2", "ALT|30|<41", "AST|52|<40"],
    "t3": ["Test|Value", "Na|140", "K|4.1"],
}
OPTIONS = ("0", "1", "2", "3", "4", "5", "6")
# (table, question, gold letter, options, question type)
ITEMS = [
    ("t1", "Сколько показателей в таблице?", "D", OPTIONS, "Подсчёт"),
    (
        "t1",
        "Какой показатель выше нормы?",
        "B",
        ("HGB", "WBC", "PLT", "Na", "GLU", "ALT", "нет такого"),
        "Поиск",
    ),
    ("t1", "Сколько столбцов в таблице?", "D", OPTIONS, "Структура"),
    ("t2", "Сколько показателей выше нормы?", "C", OPTIONS, "Подсчёт"),
    ("t2", "Какое значение у GLU?", "A", ("5.1", "6.4", "30", "52", "3.9", "5.5", "4.1"), "Поиск"),
    (
        "t2",
        "Какой показатель указан последним?",
        "E",
        ("GLU", "CHOL", "ALT", "HGB", "AST", "K", "Na"),
        "Структура",
    ),
    ("t3", "Сколько строк с показателями?", "C", OPTIONS, "Подсчёт"),
    ("t3", "Какое значение у K?", "G", ("140", "4", "41", "14", "1.4", "0.41", "4.1"), "Поиск"),
    # shots
    (
        "t1",
        "Какое значение у PLT?",
        "F",
        ("135", "11.2", "120", "160", "320", "250", "180"),
        "Поиск",
    ),
    ("t2", "Сколько столбцов в таблице?", "D", OPTIONS, "Структура"),
    (
        "t3",
        "Какой показатель указан первым?",
        "A",
        ("Na", "K", "GLU", "HGB", "ALT", "AST", "PLT"),
        "Структура",
    ),
    ("t2", "Сколько показателей в таблице?", "E", OPTIONS, "Подсчёт"),
]
TEST_ITEMS = 8


def _record(item) -> dict:
    table, question, gold, options, question_type = item
    rows = TABLES[table]
    return {
        "instruction": PROMPT,
        "inputs": {
            "image": f"samples/{table}.png",
            "question": question,
            **{f"option_{c}": o for c, o in zip("abcdefg", options)},
        },
        "outputs": gold,
        "meta": {
            "rows": len(rows),
            "columns": len(rows[0].split("|")),
            "categories": {
                "question_type": question_type,
                "question_text": question,
                "question_source": "human",
            },
            "image": {
                "synt_source": ["Pillow"],
                "source": ["drawing"],
                "type": ["systematic"],
                "content": ["info"],
                "context": ["no_context"],
            },
        },
    }


def sample() -> Sample:
    records = number([_record(item) for item in ITEMS])
    example = _record(("t3", "Сколько столбцов в таблице?", "C", OPTIONS, "Структура"))
    example["meta"] = {"id": 100, **example["meta"]}
    return Sample(
        NAME,
        (
            "Вопросы по изображениям таблиц с результатами анализов, семь вариантов ответа.",
            "Questions on pictures of lab result tables, seven options each.",
        ),
        "Выбор одного из семи вариантов ответа по изображению таблицы.",
        "letter",
        ["Text recognition (OCR)", "Static counting"],
        records[:TEST_ITEMS],
        records[TEST_ITEMS:],
        example,
        {f"samples/{t}.png": text_picture(rows, grid=True) for t, rows in TABLES.items()},
        prompts={"task_context": {"default": ["Таблица содержит данные, нужные для ответа."]}},
    )
