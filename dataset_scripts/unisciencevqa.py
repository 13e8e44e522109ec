"""UniScienceVQA: university-level questions with a picture, mixed: options (up to ten,
A-J) or a short free answer, ``annotation`` saying the answer format; six domain configs.

A short-answer record has no options at all, and an option question may have fewer
than ten: the task declares the options ``optional_text``, so the missing ones stay
empty (None), and a template that names one prints "None", as the official
``instruction.format(**inputs)`` does. The gold is a letter or a short answer, compared
by exact match either way. Domains as in ruNaturalScienceVQA (its builder's
``with_domain``): a raw folder holds one folder per domain config (the official layout),
or one test.json whose records name their domain in ``meta.domain`` ("Applied sciences"
and "Applied_Sciences" both work).
"""
import datasets

from mera_multi_hf.builder import MeraBuilder
from mera_multi_hf.hub import dataset_module
from mera_multi_hf.tasks import get_task

with_domain = dataset_module(get_task("runaturalsciencevqa")).with_domain

META_FEATURES = {
    "id": datasets.Value("int32"),
    "domain": datasets.Value("string"),
    "categories": {"type_answer": datasets.Value("string"), "subdomain": datasets.Value("string")},
    "image": {key: datasets.Value("string") for key in ("source", "type", "content")},
}


def normalize_meta(meta: dict) -> dict:
    return with_domain(meta, get_task("unisciencevqa").domains)


class UniScienceVQA(MeraBuilder):
    TASK_KEY = "unisciencevqa"
    META_FEATURES = META_FEATURES
    normalize_meta = staticmethod(normalize_meta)
