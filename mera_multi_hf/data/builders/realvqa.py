"""RealVQA: short answers about real photos, some questions unanswerable from the picture.

``meta.categories.class`` is excluded on export by the metadata.
"""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

STRINGS = datasets.List(datasets.Value("string"))
META_FEATURES = {
    "id": datasets.Value("int32"),
    "categories": {"question_topic": STRINGS, "domain": STRINGS},
    "image": {key: STRINGS for key in ("source", "type", "content", "context")},
}


class RealVQA(MeraBuilder):
    TASK_KEY = "realvqa"
    META_FEATURES = META_FEATURES
