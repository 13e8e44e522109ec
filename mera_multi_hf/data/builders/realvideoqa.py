"""RealVideoQA: questions about real-life videos, four options (private).

Same shape as CommonVideoQA; exact match is strict (the official YAML sets no
ignore_case / ignore_punctuation)."""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

STRINGS = datasets.List(datasets.Value("string"))
META_FEATURES = {
    "id": datasets.Value("int32"),
    "categories": {"category": datasets.Value("string")},
    "video": {key: STRINGS for key in ("type", "context", "domain", "source", "content")},
}


class RealVideoQA(MeraBuilder):
    TASK_KEY = "realvideoqa"
    META_FEATURES = META_FEATURES
