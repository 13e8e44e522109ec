"""ToyColours' builder: what colour is the picture? Three options, A-C.

As a builder of the package's own (mera_multi_hf/data/builders/*.py): the task's ``meta``
features; everything else comes from the declaration (../tasks.py). ``group_id`` is
derived from the declaration's ``group_by`` (same picture, one group) and kept in meta.
"""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

META_FEATURES = {
    "id": datasets.Value("int32"),
    "shade": datasets.Value("string"),
    "group_id": datasets.Value("int32"),
}


class ToyColours(MeraBuilder):
    TASK_KEY = "toy_colours"
    META_FEATURES = META_FEATURES
