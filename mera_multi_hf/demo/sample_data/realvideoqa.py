"""The bundled RealVideoQA sample: the moving-circle clips with RealVideoQA's prompt
(the question quoted inside it); private, as the official task."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.av_common import write_av
from mera_multi_hf.demo.sample_data.common import Sample, number
from mera_multi_hf.demo.sample_data.video_common import (
    MOVIES,
    QUESTIONS,
    four_option_records,
    movies,
)

NAME = "RealVideoQA"
PROMPT = (
    'Посмотри <video>. Затем ответь на вопрос "{question}", выбрав правильный вариант. '
    "Не пиши ничего, кроме буквы.\nA. {option_a}\nB. {option_b}\nC. {option_c}\n"
    "D. {option_d}"
)
ORDER = (4, 0, 3, 1, 8, 5, 2, 6, 7)  # another order of the shared questions
TEST_ITEMS = 6


def sample() -> Sample:
    items = [QUESTIONS[i] for i in ORDER]
    test = number(four_option_records(PROMPT, items[:TEST_ITEMS]))
    shots = number(four_option_records(PROMPT, items[TEST_ITEMS:]), first_id=len(test) + 1)
    example = {**shots[0], "meta": {**shots[0]["meta"], "id": 100}}
    return Sample(
        NAME,
        (
            "Вопросы о коротких видео: цвет, движение, счёт.",
            "Questions about short videos: colour, motion, counting.",
        ),
        "Выбор ответа на вопрос о видео.",
        "letter",
        ["Video perception", "Counting"],
        test,
        shots,
        example,
        movies(MOVIES),
        prompts={"task_context": {"default": ["Видео нужно для ответа."]}},
    )


def write_sample(out_dir):
    return write_av(sample(), out_dir, "video", {"Exact match": 0.9583})
