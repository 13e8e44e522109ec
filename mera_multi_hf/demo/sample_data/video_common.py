"""What the three video samples share: short clips of moving circles (PyAV), the video
metadata lists of the official Hub features, and the records of a four-option task."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.av_common import movie, options

# name -> (colour, direction, count, container)
MOVIES = {
    "red_right": ("красный", 1, 1, "mp4"),
    "blue_left": ("синий", -1, 1, "mp4"),
    "green_still": ("зелёный", 0, 1, "mp4"),
    "yellow_two": ("жёлтый", 1, 2, "mp4"),
    "red_three": ("красный", 0, 3, "mp4"),
    "blue_right": ("синий", 1, 1, "mov"),
}
VIDEO_META = {
    "source": ["generated"],
    "type": ["visual"],
    "content": ["object", "action"],
    "context": ["no_context", "without_sound"],
    "domain": ["shapes"],
}
COLOURS = ("красный", "синий", "зелёный", "жёлтый")
SIDES = ("вправо", "влево", "стоит на месте", "вверх")
COUNT = ("один", "два", "три", "четыре")


def movies(names) -> dict:
    """Sample path -> the clip, for the named movies."""
    return {
        f"samples/{n}.{MOVIES[n][3]}": movie(*MOVIES[n][:3], container=MOVIES[n][3]) for n in names
    }


def path(name: str) -> str:
    return f"samples/{name}.{MOVIES[name][3]}"


def four_option_records(prompt: str, items) -> list[dict]:
    """(movie, question, options, gold, category) -> raw records of CommonVideoQA's shape."""
    return [
        {
            "instruction": prompt,
            "inputs": {"video": path(name), "question": question, **options(opts)},
            "outputs": gold,
            "meta": {"categories": {"category": category}, "video": dict(VIDEO_META)},
        }
        for name, question, opts, gold, category in items
    ]


# (movie, question, options, gold, category): what the moving-circle clips answer
QUESTIONS = [
    ("red_right", "Какого цвета круг на видео?", COLOURS, "A", "colour"),
    ("blue_left", "Куда движется круг?", SIDES, "B", "motion"),
    (
        "green_still",
        "Что делает круг на видео?",
        ("катится вправо", "катится влево", "стоит на месте", "исчезает"),
        "C",
        "motion",
    ),
    ("yellow_two", "Сколько кругов на видео?", COUNT, "B", "counting"),
    ("red_three", "Сколько кругов на видео?", COUNT, "C", "counting"),
    ("blue_right", "Куда движется синий круг?", SIDES, "A", "motion"),
    ("green_still", "Какого цвета круг?", COLOURS, "C", "colour"),
    ("yellow_two", "Какого цвета круги?", COLOURS, "D", "colour"),
    ("blue_left", "Сколько кругов на видео?", COUNT, "A", "counting"),
]
