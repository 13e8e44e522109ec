"""ruCommonVQA: short free answers about everyday photos; the gold is a list of acceptable answers.

On the Hub ``outputs`` is a list of strings (the upload notebook wraps a single answer
in a list); a prediction matching any one of them counts. A raw record may give one
answer (a string) or several (a list); both become the list here.
"""
import json

import datasets

from mera_multi_hf.builder import MeraBuilder

META_FEATURES = {
    "id": datasets.Value("int32"),
    "categories": {"question_type": datasets.Value("string")},
    "complexity": datasets.Value("string"),
    "image": {"source": datasets.List(datasets.Value("string"))},
}


def answer_list(outputs) -> list[str]:
    """The gold as a list: the raw reader passes a list of answers on as its JSON text,
    a single answer as it is, and a hidden one as "" (no answers)."""
    if isinstance(outputs, list):
        return outputs
    if outputs in (None, ""):
        return []
    if outputs.startswith("["):
        try:
            parsed = json.loads(outputs)
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and all(isinstance(a, str) for a in parsed):
            return parsed
    return [outputs]


class RuCommonVQA(MeraBuilder):
    TASK_KEY = "rucommonvqa"
    META_FEATURES = META_FEATURES

    @classmethod
    def features(cls) -> datasets.Features:
        features = super().features()
        if cls.task().gold_list:
            features["outputs"] = datasets.List(datasets.Value("string"))
        return features

    def _generate_examples(self, split):
        for key, example in super()._generate_examples(split):
            example["outputs"] = answer_list(example["outputs"])
            yield key, example
