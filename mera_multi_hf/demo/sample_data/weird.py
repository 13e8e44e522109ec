"""The bundled WEIRD sample: is the drawing normal or weird? Pictures come in pairs."""

from __future__ import annotations

from PIL import Image, ImageDraw

from mera_multi_hf.demo.sample_data.common import Sample, number

NAME = "WEIRD"
PROMPT = (
    "Внимательно рассмотрите изображение.\n<image>\nВопрос: {question} Странные "
    "изображения противоречат здравому смыслу, нормальные ему соответствуют. Ответьте "
    "одной буквой, A или B.\nA. {option_a}\nB. {option_b}\nОтвет:"
)
QUESTION = "Это изображение странное или нормальное?"


def scene(sky, sun, ground) -> Image.Image:
    """A landscape: sky colour, sun colour, ground colour."""
    img = Image.new("RGB", (64, 64), sky)
    d = ImageDraw.Draw(img)
    d.rectangle((0, 44, 64, 64), fill=ground)
    d.ellipse((40, 6, 56, 22), fill=sun)
    return img


# picture name -> (sky, sun, ground, weird?, group, subgroup, pair)
PICTURES = {
    "sun_yellow": ((150, 200, 250), (250, 210, 40), (60, 150, 60), False, "Nature", "Sky", "p1"),
    "sun_green": ((150, 200, 250), (40, 200, 60), (60, 150, 60), True, "Nature", "Sky", "p1"),
    "grass_green": (
        (160, 210, 250),
        (250, 220, 60),
        (50, 160, 50),
        False,
        "Nature",
        "Ground",
        "p2",
    ),
    "grass_blue": ((160, 210, 250), (250, 220, 60), (40, 60, 220), True, "Nature", "Ground", "p2"),
    "night_dark": ((20, 20, 60), (230, 230, 230), (30, 60, 30), False, "Time", "Night", "p3"),
    "night_sun": ((20, 20, 60), (250, 200, 30), (30, 60, 30), True, "Time", "Night", "p3"),
}
TEST = [
    "sun_yellow",
    "sun_green",
    "grass_green",
    "grass_blue",
    "night_dark",
    "night_sun",
    "grass_blue",
    "sun_yellow",
]
SHOTS = ["night_sun", "grass_green", "sun_green", "night_dark"]


def _record(n: int, name: str) -> dict:
    *_, weird, group, subgroup, pair = PICTURES[name]
    swap = n % 2 == 1  # the "weird" option alternates between A and B
    options = ("странное", "нормальное") if swap else ("нормальное", "странное")
    return {
        "instruction": PROMPT,
        "inputs": {
            "image": f"samples/{name}.png",
            "question": QUESTION,
            "option_a": options[0],
            "option_b": options[1],
        },
        "outputs": "AB"[options.index("странное" if weird else "нормальное")],
        "meta": {
            "categories": {
                "commonsense_violation_group": group,
                "commonsense_violation_subgroup": subgroup,
            },
            "caption": f"A drawn landscape ({name.replace('_', ' ')}).",
            "pair_id": pair,
            "image": {"synt_source": ["Pillow"], "source": "drawing"},
        },
    }


def sample() -> Sample:
    records = number([_record(n, name) for n, name in enumerate(TEST + SHOTS)])
    example = {**_record(0, "sun_green"), "meta": {"id": 100, **_record(0, "sun_green")["meta"]}}
    return Sample(
        NAME,
        (
            "Нужно определить, нормальное изображение или странное.",
            "Tell whether a picture is normal or weird.",
        ),
        "Бинарная классификация изображений: нормальное или странное.",
        "letter",
        ["Common everyday knowledge", "Physical property understanding"],
        records[: len(TEST)],
        records[len(TEST) :],
        example,
        {f"samples/{name}.png": scene(*spec[:3]) for name, spec in PICTURES.items()},
        public=True,
        exclude_fields={"meta": ["caption"]},
        prompts={"task_context": {"default": ["Странное изображение противоречит реальности."]}},
    )
