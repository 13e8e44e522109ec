"""The generic MERA builder: raw MERA folder -> typed `datasets` splits.

Each task's module in mera_multi_hf/data/builders/ subclasses :class:`MeraBuilder` and declares its
``meta`` features and how to normalise a record's meta; everything else comes from the
task's declaration in :mod:`mera_multi_hf.tasks.table`. Every normalised meta is checked
against the declared features (types, integer ranges) before Arrow sees it, so a bad
value is a problem naming its field, never a failed write.
"""

from __future__ import annotations

import functools

import datasets
import numpy as np
import pyarrow as pa
from datasets.arrow_writer import get_arrow_writer_batch_size_from_features
from datasets.builder import Key

from mera_multi_hf.data.media_decode import UndecodedAudio
from mera_multi_hf.data.raw import FieldError, RawDataset, named_domain, record_domain
from mera_multi_hf.tasks.declarations import CITATION
from mera_multi_hf.tasks.spec import TaskSpec
from mera_multi_hf.tasks.table import TASKS, get_task

ALL_DOMAINS = "all"  # a domain-split task's default config: every domain at once

# datasets patches a builder's modules for streaming (open, os.path and pathlib swapped for
# fsspec versions) each time a builder is made, importing scipy.io and pandas on the way:
# 0.4 s of every build. These builders read a local folder through raw.files.read_inside, never
# through the patched names, so their modules say they are done (builders.builder_class too).
_patched_for_streaming = True

# What exports write: the media features of every official upload notebook
# (datasets/<Task>/upload_dataset_to_HF.ipynb), so that the official harness reads a copy
# made here as it reads the Hub copy (docs/official-protocol.md, "Export features").
MEDIA_FEATURES = {
    "image": lambda: datasets.Image(decode=False),
    # Audio(): the clip's bytes stored as they are, written without a codec
    "audio": lambda: UndecodedAudio(decode=True),
    "video": lambda: datasets.Video(decode=True),
}
# What load_task hands out (the same Arrow data): decoded pictures; audio and video as
# bytes, whose decoding would need torchcodec (the runner reads bytes, not these labels).
LOADED_MEDIA_FEATURES = {
    "image": lambda: datasets.Image(),
    "audio": lambda: UndecodedAudio(),
    "video": lambda: datasets.Video(decode=False),
}


def task_features(task: TaskSpec, meta_features: dict, media=None) -> datasets.Features:
    """The task's schema (``media``: MEDIA_FEATURES, the exported form, by default):
    ``outputs`` is a list of acceptable answers where the task declares ``gold_list``
    (as the Hub copy of ruCommonVQA has it), else a string."""
    media = media or MEDIA_FEATURES
    inputs = {name: media[task.modality]() for name in task.media_fields}
    inputs.update({name: datasets.Value("string") for name in task.text_fields})
    answer = datasets.Value("string")
    return datasets.Features(
        {
            "instruction": datasets.Value("string"),
            "inputs": inputs,
            "outputs": datasets.List(answer) if task.gold_list else answer,
            "meta": meta_features,
        }
    )


@functools.cache
def _int_range(dtype: str) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _check_scalar(value, dtype: str, field: str) -> None:
    if dtype == "string":
        if not isinstance(value, str):
            raise FieldError(field, f"must be a string, got {type(value).__name__}")
    elif dtype.startswith(("int", "uint")):
        if not isinstance(value, int) or isinstance(value, bool):
            raise FieldError(field, f"must be an integer, got {type(value).__name__}")
        low, high = _int_range(dtype)
        if not low <= value <= high:
            raise FieldError(field, f"{value} is out of range for {dtype} ({low}..{high})")
    elif dtype == "bool" and not isinstance(value, bool):
        raise FieldError(field, f"must be true or false, got {type(value).__name__}")
    elif dtype.startswith("float") and (
        not isinstance(value, (int, float)) or isinstance(value, bool)
    ):
        raise FieldError(field, f"must be a number, got {type(value).__name__}")


def check_features(value, feature, field: str) -> None:
    """Raise FieldError (dotted field name) where ``value`` does not fit ``feature``.
    None is accepted anywhere (a missing value; the builder fills derived ones)."""
    if value is None:
        return
    if isinstance(feature, dict):
        if not isinstance(value, dict):
            raise FieldError(field, f"must be an object, got {type(value).__name__}")
        for key, sub in feature.items():
            check_features(value.get(key), sub, f"{field}.{key}")
    elif isinstance(feature, (datasets.List, datasets.LargeList, datasets.Sequence, list)):
        inner = feature[0] if isinstance(feature, list) else feature.feature
        if not isinstance(value, list):
            raise FieldError(field, f"must be a list, got {type(value).__name__}")
        for item in value:
            check_features(item, inner, field)
    elif isinstance(feature, datasets.Value):
        _check_scalar(value, feature.dtype, field)


def with_domain(meta: dict, domains: tuple[str, ...]) -> dict:
    """The meta with ``domain`` set to the task's name of the example's domain config
    ("Earth science", "earth_science" -> "earth_science"), read from ``meta.domain`` or,
    as the official records of the science tasks write it, ``meta.categories.domain``;
    a missing or unknown one is a problem in ``meta.domain``."""
    domain = record_domain(meta, domains)
    if domain is None:
        raise FieldError(
            "meta.domain",
            f"{named_domain(meta)!r:.80} is not one of "
            f"{', '.join(domains)} (each record names its domain in meta.domain)",
        )
    return {**meta, "domain": domain}


def encoded_table(
    features: datasets.Features, media_fields: tuple, rows: list, schema: pa.Schema | None = None
) -> pa.Table:
    """Checked examples as one Arrow table of ``features``: the media values encoded by
    their feature, the rest (plain JSON values, their types already checked) converted by
    Arrow in one call. datasets' generic per-example encoding (a recursive walk of every
    value, looking for NumPy and torch objects) cost the build more than its own checks;
    a value Arrow will not take as it is goes through that encoding instead. ``schema``:
    ``features.arrow_schema``, which datasets computes anew on each call, given once."""
    inputs, schema = features["inputs"], schema or features.arrow_schema
    for row in rows:
        media = row["inputs"]
        for name in media_fields:
            if media[name] is not None:
                media[name] = inputs[name].encode_example(media[name])
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        encoded = [features.encode_example(row) for row in rows]
        return pa.Table.from_pylist(encoded, schema=schema)


class MeraBuilder(datasets.ArrowBasedBuilder):
    """Build one MERA task from its raw folder (``data_dir``), streaming record by record.

    ``raw_options`` (set on the instance before ``download_and_prepare``) go to
    :class:`~mera_multi_hf.data.raw.RawDataset`: ``limits``, ``include_private_answers``,
    ``workers``. ``raw``: the reading of the raw folder; set it to another config's builder's
    before ``download_and_prepare`` to build the domain configs from one reading (every
    file read and checked once, ids unique across the domains).
    """

    TASK_KEY: str = ""
    META_FEATURES: dict = {}
    raw_options: dict = {}
    raw: RawDataset | None = None

    def __init_subclass__(cls, **kwargs):
        """A domain-split task's builder gets one config per domain and the default
        ``all`` (every domain), as the Hub copy has them."""
        super().__init_subclass__(**kwargs)
        task = TASKS.get(cls.TASK_KEY)
        if task is not None and task.domains and "BUILDER_CONFIGS" not in cls.__dict__:
            cls.BUILDER_CONFIGS = [datasets.BuilderConfig(name=ALL_DOMAINS)] + [
                datasets.BuilderConfig(name=domain) for domain in task.domains
            ]
            cls.DEFAULT_CONFIG_NAME = ALL_DOMAINS

    @staticmethod
    def normalize_meta(meta: dict) -> dict:
        return dict(meta)

    @classmethod
    def checked_meta(cls, meta: dict) -> dict:
        """The task's normalised meta (with ``domain`` for a domain-split task), checked
        against its declared features."""
        out = cls.normalize_meta(meta)
        if cls.task().domains:
            out = with_domain(out, cls.task().domains)
        check_features(out, cls.META_FEATURES, "meta")
        return out

    @classmethod
    def task(cls) -> TaskSpec:
        return get_task(cls.TASK_KEY)

    @classmethod
    def features(cls) -> datasets.Features:
        """The exported schema (the official notebooks' media features)."""
        return task_features(cls.task(), cls.META_FEATURES)

    @classmethod
    def loaded_features(cls) -> datasets.Features:
        """The schema load_task hands out: the same storage, other media labels."""
        return task_features(cls.task(), cls.META_FEATURES, LOADED_MEDIA_FEATURES)

    def _info(self) -> datasets.DatasetInfo:
        task = self.task()
        return datasets.DatasetInfo(
            description=f"MERA Multi task {task.class_name} ({task.modality}), "
            f"built from the raw MERA layout by mera-multi-hf.",
            features=self.features(),
            homepage="https://mera.a-ai.ru/",
            citation=CITATION,
        )

    def _split_generators(self, dl_manager):
        if self.raw is None:
            self.raw = RawDataset(
                self.task(), self.config.data_dir, self.checked_meta, **self.raw_options
            )
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"split": split})
            for split in self.raw.splits()
        ]

    def _generate_tables(self, split):
        """The split's examples, a writer batch at a time (the rows of one row group, so
        shards end where datasets' example-by-example writer ends them). A domain config
        takes its domain's records, picked before their media is read."""
        domain = self.config.name if self.config.name in self.task().domains else None
        features, media_fields = self.info.features, self.task().media_fields
        schema = features.arrow_schema
        size = (
            self._writer_batch_size
            or get_arrow_writer_batch_size_from_features(features)
            or datasets.config.DEFAULT_MAX_BATCH_SIZE
        )
        rows: list = []
        for example in self.raw.records(split, domain):
            rows.append(example)
            if len(rows) == size:
                table = encoded_table(features, media_fields, rows, schema)
                yield Key(0, example["meta"]["id"]), table
                rows = []
        if rows:
            yield (
                Key(0, rows[-1]["meta"]["id"]),
                encoded_table(features, media_fields, rows, schema),
            )
