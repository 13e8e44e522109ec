"""AQUARIA: questions about one or two audio clips (``audio_2`` may be absent), four
options (private). The prompt names the clips ``<audio_1>``/``<audio_2>``; the official
``doc_to_text`` rewrites both to ``<audio>`` (the task's placeholder_rewrites), and the
clips are passed in field order. The raw records' music metadata
(``meta.audio.music_*``) is dropped by the official ``exclude_fields``."""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

META_FEATURES = {
    "id": datasets.Value("int32"),
    "categories": {"task_type": datasets.Value("string")},
    "audio": {"synt_source": datasets.List(datasets.Value("string"))},
}


class AQUARIA(MeraBuilder):
    TASK_KEY = "aquaria"
    META_FEATURES = META_FEATURES
