"""Exports carry the media features of the official upload notebooks, so that the
official harness reads a copy made here as it reads the Hub copy; load_task still hands
users decoded pictures and undecoded audio/video."""

from __future__ import annotations

import io
import json

import datasets
import pyarrow.parquet as pq
import pytest
from PIL import Image

from mera_multi_hf import load_task
from mera_multi_hf.data.publish import export_raw
from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.tasks.table import get_task

# The official rule restated as data. datasets/<Task>/upload_dataset_to_HF.ipynb declares
# every media input as: images datasets.Image(decode=False), audio datasets.Audio(),
# video datasets.Video(decode=True) -- stored in a file's features JSON as below.
# multimodal_tasks/load_media.py then reads image["bytes"] (an undecoded image),
# an audio clip decoded ({"array", "sampling_rate"}), video._hf_encoded["bytes"].
NOTEBOOK_FEATURE_JSON = {
    "image": {"decode": False, "_type": "Image"},
    "audio": {"_type": "Audio"},  # decode true, the default
    "video": {"_type": "Video"},  # decode true, the default
}
CASES = [("ruhhh_image", "image"), ("ruenvaqa", "audio"), ("commonvideoqa", "video")]


def _export(key, tmp_path):
    return export_raw(get_task(key), bundled_sample(key), tmp_path / key)


@pytest.mark.parametrize("key, field", CASES)
def test_exports_declare_the_notebooks_media_features(key, field, tmp_path):
    out = _export(key, tmp_path)
    kind = get_task(key).modality
    for shard in sorted(out.rglob("*.parquet")):
        stored = json.loads(pq.read_schema(shard).metadata[b"huggingface"])
        assert stored["info"]["features"]["inputs"][field] == NOTEBOOK_FEATURE_JSON[kind]
    # a reader with torchcodec gets exactly the features the official Hub copy has
    official = {
        "image": datasets.Image(decode=False),
        "audio": datasets.Audio(),
        "video": datasets.Video(decode=True),
    }[kind]
    plain = datasets.load_dataset(str(out), split="test")
    assert plain.features["inputs"][field] == official
    card = (out / "README.md").read_text(encoding="utf-8")
    assert {
        "image": "dtype:\n        image:\n          decode: false",
        "audio": "dtype: audio",
        "video": "dtype: video",
    }[kind] in card


def test_the_official_image_loader_reads_an_export(tmp_path):
    out = _export("ruhhh_image", tmp_path)
    row = datasets.load_dataset(str(out), split="test")[0]
    # load_media.get_image: Image.open(io.BytesIO(image_json["bytes"])).convert("RGB")
    picture = Image.open(io.BytesIO(row["inputs"]["image"]["bytes"])).convert("RGB")
    assert picture.size[0] > 0


@pytest.mark.parametrize("key, field", CASES)
def test_load_task_hands_out_decoded_pictures_and_media_bytes(key, field, tmp_path):
    ds = load_task(key, source=_export(key, tmp_path), split="test")
    value = ds[0]["inputs"][field]
    if get_task(key).modality == "image":
        assert isinstance(value, Image.Image)
    else:  # no torchcodec needed: the clip's own bytes
        assert isinstance(value["bytes"], bytes) and value["bytes"]
