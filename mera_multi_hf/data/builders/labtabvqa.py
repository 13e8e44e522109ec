"""LabTabVQA: questions on pictures of medical lab tables, seven options A-G."""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

STRINGS = datasets.List(datasets.Value("string"))
META_FEATURES = {
    "id": datasets.Value("int32"),
    "rows": datasets.Value("int32"),
    "columns": datasets.Value("int32"),
    "categories": {
        "question_type": datasets.Value("string"),
        "question_text": datasets.Value("string"),
        "question_source": datasets.Value("string"),
    },
    "image": {key: STRINGS for key in ("synt_source", "source", "type", "content", "context")},
}


class LabTabVQA(MeraBuilder):
    TASK_KEY = "labtabvqa"
    META_FEATURES = META_FEATURES
