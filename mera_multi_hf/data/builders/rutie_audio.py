"""ruTiE-Audio: three dialogues of audio messages, options A-D and no question field,
asked in order (the dialogue machinery of ruTiE-Image).

``meta.question_id`` / ``meta.dialog_id`` place a turn when given (the project's raw
folders carry them); the official harness derives both from ``id`` (500 questions per
dialogue, counted from the smallest id of the split), which the dialogue runner does for
a copy that lacks them, such as the Hub copy. Gold letters may be Cyrillic."""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

INT = datasets.Value("int32")
STRING = datasets.Value("string")
META_FEATURES = {
    "id": INT,
    "question_id": INT,
    "dialog_id": INT,
    "type": STRING,
    "turing_imitation": STRING,
    "unified_category": STRING,
    "nonunified_category": STRING,
    "short_context": INT,
    "long_context": INT,
    "audio": {"type": STRING},
}


class RuTiEAudio(MeraBuilder):
    TASK_KEY = "rutie_audio"
    META_FEATURES = META_FEATURES
