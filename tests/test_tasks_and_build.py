"""Foundation: the task registry, building the Hub layout, loading from every source."""

from __future__ import annotations

import io
import json
import os
import re

import datasets
import pytest
import yaml
from PIL import Image, ImageChops

from mera_multi_hf import TASKS, MeraError, get_task, load_task, render_prompt
from mera_multi_hf.cli.main import main
from mera_multi_hf.core.outputs import MARKER
from mera_multi_hf.data.publish import export_raw, push
from mera_multi_hf.demo.sample_data import bundled_sample, write_sample
from mera_multi_hf.tasks.table import resolve_tasks

SPEC_CLASS_NAMES = {
    "ruHHH_Image",
    "ruHHH_Video",
    "ruCLEVR",
    "ruCommonVQA",
    "WEIRD",
    "ruNaturalScienceVQA",
    "LabTabVQA",
    "RealVQA",
    "ruMathVQA",
    "ruTiE_Image",
    "SchoolScienceVQA",
    "UniScienceVQA",
    "ruEnvAQA",
    "ruSLUn",
    "AQUARIA",
    "ruTiE_Audio",
    "CommonVideoQA",
    "RealVideoQA",
}


def test_registry_declares_all_18_tasks():
    assert {t.class_name for t in TASKS.values()} == SPEC_CLASS_NAMES
    assert sum(t.public for t in TASKS.values()) == 7
    assert {t.modality for t in TASKS.values()} == {"image", "audio", "video"}
    hhh = get_task("ruHHH-Image")
    assert hhh.key == "ruhhh_image" and hhh.has_groups and hhh.choices == ("A", "B")
    assert get_task("UniScienceVQA").domains[-1] == "Social_Sciences"
    assert [t.key for t in resolve_tasks("audio")] == [
        "ruenvaqa",
        "ruslun",
        "aquaria",
        "rutie_audio",
    ]
    with pytest.raises(MeraError, match="unknown task 'nope'"):
        get_task("nope")


def test_tasks_command_prints_every_task(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    for task in TASKS.values():
        assert re.search(rf"^{task.key}\s+{task.class_name}\s+{task.modality}", out, re.M)


SAMPLE_FILES = (
    "test.json",
    "shots.json",
    "raw_dataset_meta.json",
    "raw_readme_en.json",
    "raw_readme_ru.json",
)

# The exported schema, written out (not read back from the builder under test).
STRING = datasets.Value("string")
EXPECTED_FEATURES = datasets.Features(
    {
        "instruction": STRING,
        # the official notebook's Image(decode=False): the harness's get_image reads image["bytes"]
        "inputs": {
            "image": datasets.Image(decode=False),
            "question": STRING,
            "option_a": STRING,
            "option_b": STRING,
        },
        "outputs": STRING,
        "meta": {
            "id": datasets.Value("int32"),
            "group_id": datasets.Value("int32"),
            "image": {
                "source": datasets.List(STRING),
                "type": datasets.List(STRING),
                "content": datasets.List(STRING),
                "context": datasets.List(STRING),
            },
            "categories": {"category": STRING, "subcategory": STRING},
        },
    }
)


def test_bundled_sample_is_what_the_generator_writes(tmp_path):
    fresh = write_sample(tmp_path / "s")
    shipped = bundled_sample()
    for name in SAMPLE_FILES:
        assert json.loads((fresh / name).read_text()) == json.loads((shipped / name).read_text())
    assert sorted(p.name for p in (shipped / "samples").iterdir()) == sorted(
        p.name for p in (fresh / "samples").iterdir()
    )
    for image in (shipped / "samples").iterdir():
        with Image.open(image) as a, Image.open(fresh / "samples" / image.name) as b:
            assert ImageChops.difference(a.convert("RGB"), b.convert("RGB")).getbbox() is None


def test_sample_is_in_the_published_official_layout():
    folder = bundled_sample()
    test_doc = json.loads((folder / "test.json").read_text())
    test, shots = test_doc["data"], json.loads((folder / "shots.json").read_text())["data"]
    meta = json.loads((folder / "raw_dataset_meta.json").read_text())
    assert test_doc["access"] == "private" and meta["license"] == "MERA_private"
    assert {r["outputs"] for r in test} == {"A", "B"}  # demo answers stay in the raw file
    assert [r["meta"]["id"] for r in test + shots] == list(range(1, len(test) + len(shots) + 1))
    assert all(isinstance(r["instruction"], str) for r in test + shots)
    assert isinstance(meta["prompts"], dict) and meta["dataset_size"] == "len(DATA)"
    assert meta["synt_source_models"].startswith("list(set(")
    assert meta["exclude_fields"] == {"meta": {"image": ["synt_source"]}}
    assert (
        {"Exact match", "Group Exact match"} == set(meta["metrics"]) == set(meta["human_benchmark"])
    )
    assert isinstance(shots[0]["meta"]["image"]["source"], str)  # strings and lists both occur
    pairs = {(r["inputs"]["image"], r["inputs"]["question"]) for r in test}
    assert len(pairs) >= 8 and len({r["instruction"] for r in test}) >= 10
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
        "shots-00000-of-00001.parquet",
        "test-00000-of-00001.parquet",
    ]
    card, text = _card(out)
    assert card["language"] == ["ru"] and card["license"] == "other"
    assert card["license_name"] == "mera-private" and card["pretty_name"] == "ruHHH-Image"
    assert "visual-question-answering" in card["task_categories"]
    assert card["configs"][0]["data_files"] == [
        {"split": "test", "path": "data/test-*"},
        {"split": "shots", "path": "data/shots-*"},
    ]
    assert {s["name"]: s["num_examples"] for s in card["dataset_info"]["splits"]} == {
        "test": 26,
        "shots": 6,
    }
    assert "mera-internal-with-answers" not in card["tags"]

    exported = datasets.load_dataset(str(out))
    with_answers = export_raw(
        get_task("ruhhh_image"), raw_sample, tmp_path / "internal", include_private_answers=True
    )
    internal = datasets.load_dataset(str(with_answers))
    raw = {
        r["meta"]["id"]: r
        for split in ("test", "shots")
        for r in json.loads((raw_sample / f"{split}.json").read_text())["data"]
    }
    for split in ("test", "shots"):
        assert exported[split].features == EXPECTED_FEATURES
        assert (
            exported[split].remove_columns("outputs").to_list()
            == internal[split].remove_columns("outputs").to_list()
        )
        for row in internal[split]:
            record = raw[row["meta"]["id"]]
            assert row["instruction"] == record["instruction"]
            assert row["outputs"] == record["outputs"] in ("A", "B")
    assert set(exported["test"]["outputs"]) == {""}  # private: blanked by default
    assert exported["shots"]["outputs"] == internal["shots"]["outputs"]
    first = exported["test"][0]
    assert isinstance(Image.open(io.BytesIO(first["inputs"]["image"]["bytes"])), Image.Image)
    assert first["meta"]["image"] == {
        "source": ["mera-multi-hf sample"],
        "type": ["graphics"],
        "content": ["object"],
        "context": ["no_context"],
    }
    shot = exported["shots"][0]["meta"]["image"]  # written as plain strings in the raw file
    assert shot["source"] == ["mera-multi-hf sample"] and shot["context"] == ["no_context"]


def test_card_is_built_from_the_metadata_and_readmes(raw_sample, tmp_path):
    out = export_raw(get_task("ruhhh_image"), raw_sample, tmp_path / "o")
    _, text = _card(out)
    meta = json.loads((raw_sample / "raw_dataset_meta.json").read_text())
    assert meta["description"]["en"] in text and meta["description"]["ru"] in text
    assert "## Task description" in text and "### Описание задачи" in text
    assert "ruHHH-Image here is a small demo" in text and '{meta["dataset_name"]}' not in text
    assert "Evaluated skills: Ethics, Common everyday knowledge, Scene understanding" in text
    assert "- `question` [str] — The question text." in text  # "default" -> standard text
    assert "- `category` [str] — The ethics category." in text  # a custom description
    assert "- `option_b` [str] — Вариант ответа B." in text
    assert "- `Group Exact match`: Examples are grouped" in text
    assert "- Exact match: 0.0" in text and "Contributors: mera-multi-hf maintainers" in text
    assert "License: MERA_private" in text
    assert "Dataset size (metadata, computed): 26; generators used: Pillow." in text
    assert '"image": "samples/example.png"' in text  # the data example, raw format
    assert "INTERNAL" not in text


def test_documented_form_int_instructions_index_the_prompt_list(raw_sample, tmp_path):
    meta_path = raw_sample / "raw_dataset_meta.json"
    meta = json.loads(meta_path.read_text())
    prompts = [
        f"<image>\nШаблон {n}: {{question}}\nA. {{option_a}}\nB. {{option_b}}\nОтвет:"
        for n in range(10)
    ]
    meta.update(prompts=prompts, dataset_size=26, synt_source_models=["x"])
    meta_path.write_text(json.dumps(meta, ensure_ascii=False))
    for split in ("test", "shots"):
        path = raw_sample / f"{split}.json"
        doc = json.loads(path.read_text())
        for record in doc["data"]:
            record["instruction"] = record["meta"]["id"] % 10
        path.write_text(json.dumps(doc, ensure_ascii=False))
    out = export_raw(get_task("ruhhh_image"), raw_sample, tmp_path / "o")
    test = datasets.load_dataset(str(out), split="test")
    assert test["instruction"] == [prompts[m["id"] % 10] for m in test["meta"]]
    assert "resolved from a list of 10 prompts" in _card(out)[1]


def test_internal_export_keeps_answers_is_marked_and_never_pushed(
    raw_sample, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "internal"
    assert (
        main(
            [
                "build",
                "ruhhh_image",
                "--raw",
                str(raw_sample),
                "--out",
                str(out),
                "--internal-with-answers",
            ]
        )
        == 0
    )
    assert "INTERNAL" in capsys.readouterr().out
    card, text = _card(out)
    assert "mera-internal-with-answers" in card["tags"] and "INTERNAL EXPORT" in text
    assert set(datasets.load_dataset(str(out), split="test")["outputs"]) == {"A", "B"}
    with pytest.raises(MeraError, match="internal export .* never pushed"):
        push(out, "someone/leak")  # refused before any Hub call (offline would say otherwise)
    (out / MARKER).unlink()  # the card alone still marks it
    with pytest.raises(MeraError, match="never pushed"):
        push(out, "someone/leak")
    code = main(
        [
            "build",
            "ruhhh_image",
            "--raw",
            str(raw_sample),
            "--out",
            str(tmp_path / "p"),
            "--internal-with-answers",
            "--push",
            "someone/leak",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "never published" in err and not (tmp_path / "p").exists()


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
        rows = ds.cast_column(
            "inputs", {**ds.features["inputs"], "image": datasets.Image(decode=False)}
        ).to_list()
        for row in rows:
            image = row["meta"]["image"]
            row["meta"] = {
                "id": row["meta"]["id"],
                "categories": row["meta"]["categories"],
                "image": {
                    "origin": image["source"],
                    "type": image["type"],
                    "image_content": image["content"],
                    "context": image["context"],
                },
            }
        hub = datasets.Dataset.from_list(rows).cast_column(
            "inputs", {**ds.features["inputs"], "image": datasets.Image()}
        )
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


def test_push_offline_fails_clearly_and_keeps_the_export(raw_sample, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "hub"
    code = main(
        [
            "build",
            "ruhhh_image",
            "--raw",
            str(raw_sample),
            "--out",
            str(out),
            "--push",
            "someone/ruHHH-Image-test",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "could not publish" in err and "Traceback" not in err
    assert (out / "README.md").is_file()


def _set_question(raw_folder, text):
    doc = json.loads((raw_folder / "test.json").read_text(encoding="utf-8"))
    doc["data"][0]["inputs"]["question"] = text
    (raw_folder / "test.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def test_equally_named_exports_in_different_folders_load_their_own_data(raw_sample, tmp_path):
    # datasets keys a local folder whose card has a configs: block by the folder's name and
    # its relative file patterns: two export/ folders would share one cache entry.
    task = get_task("ruhhh_image")
    first, second = tmp_path / "a" / "export", tmp_path / "b" / "export"
    _set_question(raw_sample, "Первый вопрос?")
    export_raw(task, raw_sample, first)
    _set_question(raw_sample, "Второй вопрос?")
    export_raw(task, raw_sample, second)
    assert "configs:" in (first / "README.md").read_text(encoding="utf-8")
    a = load_task(task, source=first, split="test")
    b = load_task(task, source=second, split="test")
    assert a[0]["inputs"]["question"] == "Первый вопрос?"
    assert b[0]["inputs"]["question"] == "Второй вопрос?"
    # one cache per folder and content: a second load reuses it, prepares nothing again
    arrow = [f["filename"] for f in a.cache_files]
    stamps = [os.stat(f).st_mtime_ns for f in arrow]
    again = load_task(task, source=first, split="test")
    assert [f["filename"] for f in again.cache_files] == arrow
    assert [os.stat(f).st_mtime_ns for f in arrow] == stamps
    # the folder rebuilt with other data in place: read afresh, not from the old cache
    _set_question(raw_sample, "Третий вопрос?")
    export_raw(task, raw_sample, first)
    assert load_task(task, source=first, split="test")[0]["inputs"]["question"] == "Третий вопрос?"


def test_a_push_sends_only_the_files_the_exports_marker_lists(raw_sample, tmp_path):
    from mera_multi_hf.core.outputs import OutputFolder
    from mera_multi_hf.data.publish import upload_files

    out = tmp_path / "export"
    assert main(["build", "ruhhh_image", "--raw", str(raw_sample), "--out", str(out)]) == 0
    (out / "private_answers.csv").write_text("id,outputs\n1,A\n")  # a user's file beside it
    (out / "data" / "notes.txt").write_text("mine")
    (out / "linked.md").symlink_to(raw_sample / "test.json")
    listed = sorted(OutputFolder(out, kind="export").owned())
    sent = upload_files(out)
    assert sent == listed and "README.md" in sent and any(n.endswith(".parquet") for n in sent)
    assert not {"private_answers.csv", "data/notes.txt", "linked.md", MARKER} & set(sent)
    assert all((out / name).is_file() for name in sent)
    elsewhere = tmp_path / "elsewhere"  # a listed folder replaced by a link: nothing in it goes
    (out / "data").rename(elsewhere)
    (out / "data").symlink_to(elsewhere)
    assert upload_files(out) == [n for n in listed if not n.startswith("data/")]
    (out / MARKER).unlink()  # no marker: nothing of ours to send, refused before any call
    with pytest.raises(MeraError, match="no export made by this tool"):
        upload_files(out)
