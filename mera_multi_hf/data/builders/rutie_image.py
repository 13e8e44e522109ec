"""ruTiE-Image: three dialogues of questions with pictures, options A-D, asked in order.

``meta.question_id`` (the place in its dialogue, from 0) and ``meta.dialog_id`` say
where a question stands; the official harness derives both from ``id`` when they are
absent (500 questions per dialogue, counted from the smallest id of the split), which
the dialogue runner does for a copy that lacks them. Gold letters may be Cyrillic
("Б"), as in the official data.
"""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

INT = datasets.Value("int32")
STRING = datasets.Value("string")
META_FEATURES = {
    "id": INT,
    "question_id": INT,
    "dialog_id": INT,
    "type": STRING,
    "unified_category": STRING,
    "nonunified_category": STRING,
    "turing_imitation": STRING,
    "short_context": INT,
    "long_context": INT,
    "image": {"type": STRING},
}


class RuTiEImage(MeraBuilder):
    TASK_KEY = "rutie_image"
    META_FEATURES = META_FEATURES
