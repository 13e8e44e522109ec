"""An export's card says how its media are stored (as the official Hub copy stores them)
and its one-line cast gives them decoded (pictures) or as bytes (audio, video): the card's
last python block, run on the export it describes."""

from __future__ import annotations

import re

import datasets
import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.tasks.table import get_task


@pytest.mark.parametrize(
    "key, stored",
    [("ruhhh_image", "`datasets.Image(decode=False)`"), ("aquaria", "`datasets.Audio()`")],
)
def test_the_cards_cast_reads_the_media(tmp_path, monkeypatch, key, stored):
    task = get_task(key)
    out = tmp_path / task.class_name
    assert main(["build", key, "--raw", "sample", "--out", str(out)]) == 0
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f"stored as the official Hub copy stores them: `inputs.{task.media_fields[0]}`" in card
    assert stored in card and f'load_task("{key}", source=PATH)' in card
    block = re.findall(r"^```python\n(.*?)^```$", card, flags=re.DOTALL | re.MULTILINE)[-1]
    assert "cast_column" in block
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(block.replace(f'"{task.hub_id}"', f'"{task.class_name}"'), namespace)
    first = namespace["ds"][0]["inputs"]
    if task.modality == "image":
        assert first["image"].size[0] > 0  # a decoded picture
    else:
        assert all(isinstance(first[name]["bytes"], bytes) for name in task.media_fields)
    # without the cast, what the card says is stored
    raw = datasets.load_dataset(str(out), split="test").features["inputs"]
    assert raw[task.media_fields[0]].decode is (task.modality != "image")
