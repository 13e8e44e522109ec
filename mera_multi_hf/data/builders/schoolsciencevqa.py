"""SchoolScienceVQA: school questions (natural sciences, history, economics) with a picture,
a ``context`` text and options A-D; seven domain configs on the Hub.

Domains as in ruNaturalScienceVQA
(``mera_multi_hf.data.builder.with_domain``): the official raw
layout has one folder per domain (``<domain>/test.json``), and the records name theirs in
``meta.categories.domain`` too. ``meta.hint`` and ``meta.explanation`` are
excluded on export by the metadata.
"""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

META_FEATURES = {
    "id": datasets.Value("int32"),
    "domain": datasets.Value("string"),
    "categories": {
        "question_difficulty": datasets.Value("int32"),
        "domain": datasets.Value("string"),
    },
    "image": {
        "source": datasets.List(datasets.Value("string")),
        "type": datasets.List(datasets.Value("string")),
    },
}


class SchoolScienceVQA(MeraBuilder):
    TASK_KEY = "schoolsciencevqa"
    META_FEATURES = META_FEATURES
