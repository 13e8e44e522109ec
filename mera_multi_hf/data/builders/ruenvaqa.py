"""ruEnvAQA: questions about environmental sounds and music, four options (public).

The audio is stored undecoded (``datasets.Audio(decode=False)``): the runner decodes it
and resamples it to what the model's feature extractor wants."""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

STRING = datasets.Value("string")
META_FEATURES = {
    "id": datasets.Value("int32"),
    "categories": {"task_type": STRING, "source_dataset": STRING, "knowledge": STRING},
}


class RuEnvAQA(MeraBuilder):
    TASK_KEY = "ruenvaqa"
    META_FEATURES = META_FEATURES
