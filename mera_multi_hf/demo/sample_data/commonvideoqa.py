"""The bundled CommonVideoQA sample: questions about short clips of moving circles, four
options each (public: the test answers are kept). One clip is a QuickTime .mov."""

from __future__ import annotations

from mera_multi_hf.demo.sample_data.av_common import write_av
from mera_multi_hf.demo.sample_data.common import Sample, number
from mera_multi_hf.demo.sample_data.video_common import (
    MOVIES,
    QUESTIONS,
    four_option_records,
    movies,
)

NAME = "CommonVideoQA"
PROMPT = (
    "Вопрос: {question} \nA. {option_a}\nB. {option_b}\nC. {option_c}\nD. {option_d}\n"
    "Выбери верный ответ и напиши только его букву. Для этого посмотри видео  <video>. "
    "Какой твой выбор?"
)
TEST_ITEMS = 6


def sample() -> Sample:
    test = number(four_option_records(PROMPT, QUESTIONS[:TEST_ITEMS]))
    shots = number(four_option_records(PROMPT, QUESTIONS[TEST_ITEMS:]), first_id=len(test) + 1)
    example = {**shots[0], "meta": {**shots[0]["meta"], "id": 100}}
    return Sample(
        NAME,
        (
            "Вопросы о коротких видео с движущимися кругами.",
            "Questions about short videos of moving circles.",
        ),
        "Выбор ответа на вопрос о видео.",
        "letter",
        ["Video perception", "Counting"],
        test,
        shots,
        example,
        movies(MOVIES),
        public=True,
        prompts={"task_context": {"default": ["Видео нужно для ответа."]}},
    )


def write_sample(out_dir):
    return write_av(sample(), out_dir, "video", {"Exact match": 0.9575})
