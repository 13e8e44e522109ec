"""ruCLEVR: questions about rendered scenes of geometric objects; a word or a number answers."""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

META_FEATURES = {
    "id": datasets.Value("int32"),
    "question_type": datasets.Value("string"),
    "image": {
        "synt_source": datasets.List(datasets.Value("string")),
        "type": datasets.List(datasets.Value("string")),
    },
}


class RuCLEVR(MeraBuilder):
    TASK_KEY = "ruclevr"
    META_FEATURES = META_FEATURES
