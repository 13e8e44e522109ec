"""What the bundled samples share: small Pillow pictures, the raw MERA layout writer and
the metadata / card text every raw folder carries. Each task's module holds its own
records (the project's own Russian texts) and calls :func:`write_raw`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

COLOURS = {
    "красный": (210, 40, 40),
    "зелёный": (40, 160, 60),
    "синий": (40, 70, 200),
    "жёлтый": (235, 200, 30),
    "серый": (130, 130, 130),
    "белый": (255, 255, 255),
    "чёрный": (20, 20, 20),
}


def shapes_picture(shapes, size: int = 64, background=(235, 238, 242)) -> Image.Image:
    """Circles, squares and triangles: (shape, colour name, x, y, radius) each."""
    img = Image.new("RGB", (size, size), background)
    d = ImageDraw.Draw(img)
    for shape, colour, x, y, r in shapes:
        box, fill = (x - r, y - r, x + r, y + r), COLOURS[colour]
        if shape == "circle":
            d.ellipse(box, fill=fill)
        elif shape == "square":
            d.rectangle(box, fill=fill)
        else:
            d.polygon((x, y - r, x + r, y + r, x - r, y + r), fill=fill)
    return img


def text_picture(
    lines: list[str], width: int = 120, line_height: int = 14, grid: bool = False
) -> Image.Image:
    """Lines of Latin letters and digits (a table when ``grid``: cells split by "|")."""
    font = ImageFont.load_default(size=11)
    img = Image.new("RGB", (width, 6 + line_height * len(lines)), (255, 255, 255))
    d = ImageDraw.Draw(img)
    for row, line in enumerate(lines):
        cells = line.split("|") if grid else [line]
        cell_width = width // len(cells)
        for col, text in enumerate(cells):
            x, y = 3 + col * cell_width, 3 + row * line_height
            if grid:
                d.rectangle(
                    (x - 3, y - 3, x - 3 + cell_width, y - 3 + line_height), outline=(0, 0, 0)
                )
            d.text((x, y), text, fill=(0, 0, 0), font=font)
    return img


@dataclass
class Sample:
    """One bundled raw folder: its records, pictures and the card material."""

    name: str  # the folder name, the official dataset name
    description: tuple[str, str]  # (ru, en)
    task_description: str
    task_type: str  # letter | short
    skills: list[str]
    test: list[dict]
    shots: list[dict]
    example: dict  # data_example: a record of its own, not from the test
    pictures: dict[str, Image.Image]
    public: bool = False
    prompts: list[str] | dict = field(default_factory=dict)
    exclude_fields: dict = field(default_factory=dict)
    domains: list[str] = field(default_factory=list)
    field_texts: dict = field(default_factory=dict)  # "inputs.context" -> (ru, en)


def _descriptions(tree, texts: dict, prefix: str = "") -> dict:
    """data_field_descriptions: "default" except the fields the sample describes."""
    if isinstance(tree, dict):
        return {k: _descriptions(v, texts, f"{prefix}{k}.") for k, v in tree.items()}
    ru, en = texts.get(prefix[:-1], ("default", "default"))
    return {"ru": ru, "en": en}


def dataset_meta(sample: Sample) -> dict:
    """raw_dataset_meta.json in the official shape."""
    return {
        "dataset_name": sample.name,
        "license": "CC-BY-4.0" if sample.public else "MERA_private",
        "dataset_size": "len(DATA)",
        "description": dict(zip(("ru", "en"), sample.description)),
        "modalities": ["text", "image"],
        "skills": sample.skills,
        "domains": sample.domains,
        "universal_domains": [],
        "synt_source_models": ["Pillow"],
        "data_example": sample.example,
        "data_field_descriptions": _descriptions(sample.example, sample.field_texts),
        "task_type": sample.task_type,
        "task_description": sample.task_description,
        "prompts": sample.prompts,
        "exclude_fields": sample.exclude_fields,
        "metrics": {"Exact match": {"ru": "default", "en": "default"}},
        "human_benchmark": {"Exact match": 0.0},
    }


def readmes(sample: Sample) -> tuple[dict, dict]:
    en = {
        "Task description": '{meta["dataset_name"]} here is a small demo made by '
        f"mera-multi-hf. {sample.description[1]}",
        "Motivation": "It lets the pipeline (build, run, score, submit) be tried offline in "
        "seconds; it says nothing about the quality of a model.",
        "Dataset creation": "The pictures are simple drawings made with Pillow; the texts "
        "were written by the project.",
        "Human baseline": "Not measured on this demo sample; the value is a placeholder.",
        "Contributors": "mera-multi-hf maintainers",
    }
    ru = {
        "Описание задачи": '{meta["dataset_name"]} здесь — маленькая демонстрационная '
        f"выборка mera-multi-hf. {sample.description[0]}",
        "Мотивация": "Выборка позволяет за секунды и без сети проверить сборку, запуск, "
        "подсчёт метрик и сабмит; о качестве модели она ничего не говорит.",
        "Создание датасета": "Картинки нарисованы с помощью Pillow, тексты написаны "
        "авторами проекта.",
        "Human baseline": "На демонстрационной выборке не замерялся; значение — заглушка.",
        "Авторы": "Разработчики mera-multi-hf",
    }
    return en, ru


def number(records: list[dict], first_id: int = 1) -> list[dict]:
    """Ids from ``first_id`` in order (one numbering runs across test and shots)."""
    for offset, record in enumerate(records):
        record["meta"] = {"id": first_id + offset, **record["meta"]}
    return records


def write_raw(sample: Sample, out_dir: str | Path) -> Path:
    out = Path(out_dir)
    (out / "samples").mkdir(parents=True, exist_ok=True)
    for path, picture in sample.pictures.items():
        picture.save(out / path, optimize=False)

    def dump(obj, name):
        (out / name).write_text(
            json.dumps(obj, ensure_ascii=False, indent=4) + "\n", encoding="utf-8"
        )

    access = "public" if sample.public else "private"
    dump({"access": access, "data": sample.test}, "test.json")
    dump({"data": sample.shots}, "shots.json")
    dump(dataset_meta(sample), "raw_dataset_meta.json")
    en, ru = readmes(sample)
    dump(en, "raw_readme_en.json")
    dump(ru, "raw_readme_ru.json")
    return out
