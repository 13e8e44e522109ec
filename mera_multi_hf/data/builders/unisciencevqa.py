"""UniScienceVQA: university-level questions with a picture, mixed: options (up to ten,
A-J) or a short free answer, ``annotation`` saying the answer format; six domain configs.

A short-answer record has no options at all, and an option question may have fewer
than ten: the task declares the options ``optional_text``, so the missing ones stay
empty (None), and a template that names one prints "None", as the official
``instruction.format(**inputs)`` does. The gold is a letter or a short answer, compared
by exact match either way. Domains as in ruNaturalScienceVQA
(``mera_multi_hf.data.builder.with_domain``): a raw folder holds one folder per domain config (the official layout),
or one test.json whose records name their domain in ``meta.domain`` ("Applied sciences"
and "Applied_Sciences" both work).
"""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

META_FEATURES = {
    "id": datasets.Value("int32"),
    "domain": datasets.Value("string"),
    "categories": {"type_answer": datasets.Value("string"), "subdomain": datasets.Value("string")},
    "image": {key: datasets.Value("string") for key in ("source", "type", "content")},
}


class UniScienceVQA(MeraBuilder):
    TASK_KEY = "unisciencevqa"
    META_FEATURES = META_FEATURES
