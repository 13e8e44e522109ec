"""Foundation: the task registry, building the Hub layout, loading from every source."""
from __future__ import annotations

import json
import re

import datasets
import pytest
import yaml
from PIL import Image, ImageChops

from mera_multi_hf import TASKS, MeraError, get_task, load_task, render_prompt
from mera_multi_hf.cli import main
from mera_multi_hf.hub import builder_class
from mera_multi_hf.sample_data import bundled_sample, write_sample
from mera_multi_hf.tasks import resolve_tasks

SPEC_CLASS_NAMES = {
    "ruHHH_Image", "ruHHH_Video", "ruCLEVR", "ruCommonVQA", "WEIRD", "ruNaturalScienceVQA",
    "LabTabVQA", "RealVQA", "ruMathVQA", "ruTiE_Image", "SchoolScienceVQA", "UniScienceVQA",
    "ruEnvAQA", "ruSLUn", "AQUARIA", "ruTiE_Audio", "CommonVideoQA", "RealVideoQA"}


def test_registry_declares_all_18_tasks():
    assert {t.class_name for t in TASKS.values()} == SPEC_CLASS_NAMES
    assert sum(t.public for t in TASKS.values()) == 7
    assert {t.modality for t in TASKS.values()} == {"image", "audio", "video"}
    hhh = get_task("ruHHH-Image")
    assert hhh.key == "ruhhh_image" and hhh.has_groups and hhh.choices == ("A", "B")
    assert get_task("UniScienceVQA").domains[-1] == "Social_Sciences"
    assert [t.key for t in resolve_tasks("audio")] == ["ruenvaqa", "ruslun", "aquaria", "rutie_audio"]
    with pytest.raises(MeraError, match="unknown task 'nope'"):
        get_task("nope")


def test_tasks_command_prints_every_task(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    for task in TASKS.values():
        assert re.search(rf"^{task.key}\s+{task.class_name}\s+{task.modality}", out, re.M)


def test_bundled_sample_is_what_the_generator_writes(tmp_path):
    fresh = write_sample(tmp_path / "s")
    shipped = bundled_sample()
    for name in ("test.json", "shots.json", "raw_dataset_meta.json"):
        assert json.loads((fresh / name).read_text()) == json.loads((shipped / name).read_text())
    for image in (shipped / "samples").iterdir():
        with Image.open(image) as a, Image.open(fresh / "samples" / image.name) as b:
            assert ImageChops.difference(a.convert("RGB"), b.convert("RGB")).getbbox() is None


def test_sample_covers_categories_groups_and_prompts():
    test = json.loads((bundled_sample() / "test.json").read_text())["data"]
    prompts = json.loads((bundled_sample() / "raw_dataset_meta.json").read_text())["prompts"]
    assert len(prompts) == 10
    pairs = {(r["inputs"]["image"], r["inputs"]["question"]) for r in test}
    assert len(pairs) >= 8
    cats = {r["meta"]["categories"]["category"] for r in test}
    assert cats == {"empathetic", "etiquette", "harmless", "helpful", "honest", "open"}
    sizes = {}
    for r in test:
        sizes[r["meta"]["group_id"]] = sizes.get(r["meta"]["group_id"], 0) + 1
    assert {1, 3, 6} <= set(sizes.values())


def _card(folder):
    text = (folder / "README.md").read_text(encoding="utf-8")
    head = text.split("---\n")[1]
    return yaml.safe_load(head), text


def test_build_writes_hub_layout_that_load_dataset_reads(raw_sample, tmp_path, capsys):
    out = tmp_path / "hub" / "ruHHH-Image"
    assert main(["build", "ruhhh_image", "--raw", str(raw_sample), "--out", str(out)]) == 0
    assert "wrote ruhhh_image" in capsys.readouterr().out
    assert sorted(p.name for p in (out / "data").iterdir()) == [
        "shots-00000-of-00001.parquet", "test-00000-of-00001.parquet"]
    card, text = _card(out)
    assert card["language"] == ["ru"] and card["license"] == "mit"
    assert card["pretty_name"] == "ruHHH-Image"
    assert "visual-question-answering" in card["task_categories"]
    assert card["configs"][0]["data_files"] == [
        {"split": "test", "path": "data/test-*"}, {"split": "shots", "path": "data/shots-*"}]
    assert {f["name"] for f in card["dataset_info"]["features"]} == {
        "instruction", "inputs", "outputs", "meta"}
    assert {s["name"]: s["num_examples"] for s in card["dataset_info"]["splits"]} == {
        "test": 26, "shots": 6}
    assert "# ruHHH_Image" in text

    exported = datasets.load_dataset(str(out))
    from_raw = load_task("ruhhh_image", source=raw_sample)
    features = builder_class(get_task("ruhhh_image")).features()
    for split in ("test", "shots"):
        assert exported[split].features == features
        assert exported[split].to_list() == from_raw[split].to_list()
    first = exported["test"][0]
    assert isinstance(first["inputs"]["image"], Image.Image)
    assert set(first["meta"]["image"]) == {"source", "type", "content", "context"}
    # the int instruction of the raw record is resolved from the prompt list
    prompts = json.loads((raw_sample / "raw_dataset_meta.json").read_text())["prompts"]
    assert first["instruction"] == prompts[first["meta"]["id"] % 10]


def test_group_ids_derived_when_missing(raw_sample):
    shots = load_task("ruhhh_image", source=raw_sample, split="shots")
    by_question = {}
    for ex in shots:
        by_question.setdefault(ex["inputs"]["question"], set()).add(ex["meta"]["group_id"])
    assert all(len(g) == 1 for g in by_question.values())
    assert len({next(iter(g)) for g in by_question.values()}) == len(by_question)


def _hub_style_copy(dsd, folder):
    """What the published Hub copy looks like: origin/image_content names, no group_id."""
    (folder / "data").mkdir(parents=True)
    for split, ds in dsd.items():
        rows = ds.cast_column("inputs", {**ds.features["inputs"],
                                         "image": datasets.Image(decode=False)}).to_list()
        for row in rows:
            image = row["meta"]["image"]
            row["meta"] = {"id": row["meta"]["id"], "categories": row["meta"]["categories"],
                           "image": {"origin": image["source"], "type": image["type"],
                                     "image_content": image["content"],
                                     "context": image["context"]}}
        hub = datasets.Dataset.from_list(rows).cast_column("inputs", {
            **ds.features["inputs"], "image": datasets.Image()})
        hub.to_parquet(str(folder / "data" / f"{split}-00000-of-00001.parquet"))
    return folder


def test_hub_copy_names_are_normalised(raw_sample, tmp_path):
    ours = load_task("ruhhh_image", source=raw_sample)
    hub_dir = _hub_style_copy(ours, tmp_path / "hub-copy")
    theirs = load_task("ruhhh_image", source=hub_dir)
    for split in ours:
        assert theirs[split].features == ours[split].features
        assert theirs[split].to_list() == ours[split].to_list()


def test_render_prompt_fills_text_and_keeps_media_slots(raw_sample):
    ds = load_task("ruhhh_image", source=raw_sample, split="test")
    ex = ds[3]
    text, media = render_prompt("ruhhh_image", ex)
    assert text.count("<image>") == 1 and "{" not in text
    assert ex["inputs"]["question"] in text and ex["inputs"]["option_b"] in text
    assert [name for name, _ in media] == ["image"]
    # an instruction that never places the image still gets it, first
    ex = dict(ex, instruction="Вопрос: {question} A. {option_a} B. {option_b}")
    text, media = render_prompt("ruhhh_image", ex)
    assert text.startswith("<image>\nВопрос:") and len(media) == 1


def test_load_task_rejects_missing_source_and_split(raw_sample, tmp_path):
    with pytest.raises(MeraError, match="is not a folder"):
        load_task("ruhhh_image", source=str(tmp_path / "nowhere"))
    with pytest.raises(MeraError, match="no split 'train'"):
        load_task("ruhhh_image", source=raw_sample, split="train")


def test_push_offline_fails_clearly_and_keeps_the_export(raw_sample, tmp_path, capsys,
                                                         monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "hub"
    code = main(["build", "ruhhh_image", "--raw", str(raw_sample), "--out", str(out),
                 "--push", "someone/ruHHH-Image-test"])
    err = capsys.readouterr().err
    assert code == 2 and "could not publish" in err and "Traceback" not in err
    assert (out / "README.md").is_file()
