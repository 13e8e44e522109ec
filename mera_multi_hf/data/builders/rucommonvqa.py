"""ruCommonVQA: short free answers about everyday photos; the gold is a list of acceptable answers.

On the Hub ``outputs`` is a list of strings (the upload notebook wraps a single answer
in a list); a prediction matching any one of them counts. The task declares
``gold_list``, so ``outputs`` is typed as a list and a raw record may give one answer
(a string, read as a list of one) or several (a list).
"""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

META_FEATURES = {
    "id": datasets.Value("int32"),
    "categories": {"question_type": datasets.Value("string")},
    "complexity": datasets.Value("string"),
    "image": {"source": datasets.List(datasets.Value("string"))},
}


class RuCommonVQA(MeraBuilder):
    TASK_KEY = "rucommonvqa"
    META_FEATURES = META_FEATURES
