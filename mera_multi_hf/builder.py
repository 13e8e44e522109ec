"""The generic MERA builder: raw MERA folder -> typed `datasets` splits.

Each task's module in dataset_scripts/ subclasses :class:`MeraBuilder` and declares its
``meta`` features and how to normalise a record's meta; everything else comes from the
task's declaration in :mod:`mera_multi_hf.tasks`.
"""
from __future__ import annotations

import datasets

from .raw import RawDataset
from .tasks import CITATION, TaskSpec, get_task

MEDIA_FEATURES = {
    "image": lambda: datasets.Image(),
    "audio": lambda: datasets.Audio(decode=False),
    "video": lambda: datasets.Video(decode=False),
}


def task_features(task: TaskSpec, meta_features: dict) -> datasets.Features:
    inputs = {name: MEDIA_FEATURES[task.modality]() for name in task.media_fields}
    inputs.update({name: datasets.Value("string") for name in task.text_fields})
    return datasets.Features({
        "instruction": datasets.Value("string"),
        "inputs": inputs,
        "outputs": datasets.Value("string"),
        "meta": meta_features,
    })


class MeraBuilder(datasets.GeneratorBasedBuilder):
    """Build one MERA task from its raw folder (``data_dir``), streaming record by record."""

    TASK_KEY: str = ""
    META_FEATURES: dict = {}

    @staticmethod
    def normalize_meta(meta: dict) -> dict:
        return dict(meta)

    @classmethod
    def task(cls) -> TaskSpec:
        return get_task(cls.TASK_KEY)

    @classmethod
    def features(cls) -> datasets.Features:
        return task_features(cls.task(), cls.META_FEATURES)

    def _info(self) -> datasets.DatasetInfo:
        task = self.task()
        return datasets.DatasetInfo(
            description=f"MERA Multi task {task.class_name} ({task.modality}), "
                        f"built from the raw MERA layout by mera-multi-hf.",
            features=self.features(),
            homepage="https://mera.a-ai.ru/",
            license="mit",
            citation=CITATION,
        )

    def _split_generators(self, dl_manager):
        self.raw = RawDataset(self.task(), self.config.data_dir, self.normalize_meta)
        return [datasets.SplitGenerator(name=split, gen_kwargs={"split": split})
                for split in self.raw.splits()]

    def _generate_examples(self, split):
        for example in self.raw.records(split):
            yield example["meta"]["id"], example
