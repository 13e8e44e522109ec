"""CommonVideoQA: questions about everyday videos, four options (public).

The video is stored as the whole file (``datasets.Video(decode=False)``); frames are
sampled by the runner (``--max-frames``), the official harness passes the file."""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

STRINGS = datasets.List(datasets.Value("string"))
META_FEATURES = {
    "id": datasets.Value("int32"),
    "categories": {"category": datasets.Value("string")},
    "video": {key: STRINGS for key in ("type", "context", "domain", "source", "content")},
}


class CommonVideoQA(MeraBuilder):
    TASK_KEY = "commonvideoqa"
    META_FEATURES = META_FEATURES
