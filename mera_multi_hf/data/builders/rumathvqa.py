"""ruMathVQA: a school maths problem drawn in the picture; ``annotation`` says the answer format.

The inputs are the image and the annotation only (no question text): the problem is
in the picture.
"""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

META_FEATURES = {
    "id": datasets.Value("int32"),
    "categories": {"topic": datasets.Value("string")},
    "image": {key: datasets.Value("string") for key in ("source", "type", "content")},
}


class RuMathVQA(MeraBuilder):
    TASK_KEY = "rumathvqa"
    META_FEATURES = META_FEATURES
