"""WEIRD: is the picture normal or weird (against common sense)? Two options, A or B.

Pictures come in pairs (``pair_id``); ``caption`` is excluded on export by the metadata.
"""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

META_FEATURES = {
    "id": datasets.Value("int32"),
    "categories": {
        "commonsense_violation_group": datasets.Value("string"),
        "commonsense_violation_subgroup": datasets.Value("string"),
    },
    "pair_id": datasets.Value("string"),
    "image": {
        "synt_source": datasets.List(datasets.Value("string")),
        "source": datasets.Value("string"),
    },
}


class WEIRD(MeraBuilder):
    TASK_KEY = "weird"
    META_FEATURES = META_FEATURES
