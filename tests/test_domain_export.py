"""The export of a domain-split task: datasets builds each domain config, the configs
sharing one reading of the raw folder. The exported rows are checked against the raw
records themselves (not against files this code wrote earlier), and every media file is
counted as the real reader reads it and the real decode check checks it."""

from __future__ import annotations

import copy
import hashlib
import json
import random
import shutil
from collections import Counter
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from mera_multi_hf.cli.main import main
from mera_multi_hf.data.builders import builder_class
from mera_multi_hf.data.media_checks import MEDIA_CHECKS
from mera_multi_hf.data.raw import dataset as raw_dataset
from mera_multi_hf.data.raw import record_domain
from mera_multi_hf.data.raw import records as raw_records
from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.tasks.table import get_task

TASK = get_task("runaturalsciencevqa")
SIZES = {"biology": 130, "chemistry": 7, "physics": 12, "earth_science": 5}  # test records


def _load(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["data"]


def _write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def _raw_folder(root: Path, per_domain: bool) -> dict[str, list[dict]]:
    """The bundled sample with a test split of SIZES records in shuffled domain order, each
    with a picture of its own; the single-folder form, or the official per-domain layout.
    Returns split -> the raw records in raw order."""
    sample = bundled_sample(TASK.key)
    shutil.copytree(sample, root)
    templates = {record_domain(r["meta"], TASK.domains): r for r in _load(sample / "test.json")}
    order = [domain for domain, n in SIZES.items() for _ in range(n)]
    random.Random(0).shuffle(order)
    test = []
    for i, domain in enumerate(order):
        record = copy.deepcopy(templates[domain])
        record["meta"]["id"] = 100 + i
        record["inputs"]["image"] = f"samples/own{i}.png"
        Image.new("RGB", (4 + i % 7, 3 + i // 7), (i % 251, 40, 90)).save(
            root / record["inputs"]["image"]
        )
        test.append(record)
    splits = {"test": test, "shots": _load(sample / "shots.json")}
    for split, records in splits.items():
        doc = {**json.loads((sample / f"{split}.json").read_text()), "data": records}
        if not per_domain:
            _write(root / f"{split}.json", doc)
            continue
        (root / f"{split}.json").unlink()
        for domain in TASK.domains:
            _write(
                root / domain / f"{split}.json",
                {
                    **doc,
                    "data": [
                        r for r in records if record_domain(r["meta"], TASK.domains) == domain
                    ],
                },
            )
    return splits


def _count_media(monkeypatch) -> tuple[list, list, list]:
    """Lists the real reader and the real image check append to: media paths read, split
    files read, and the hash of every picture checked (a build with --num-proc 1: checks
    in this process, where the lists are)."""
    media_reads, split_reads, checked = [], [], []
    read, check = raw_records.read_inside, MEDIA_CHECKS["image"]

    def counted_read(root, relative, limit):
        media_reads.append(relative)
        return read(root, relative, limit)

    def counted_split_read(root, relative, limit):
        split_reads.append(relative)
        return read(root, relative, limit)

    def counted_check(data, limits):
        checked.append(hashlib.sha1(data).hexdigest())
        return check(data, limits)

    monkeypatch.setattr(raw_records, "read_inside", counted_read)
    monkeypatch.setattr(raw_dataset, "read_inside", counted_split_read)
    monkeypatch.setitem(MEDIA_CHECKS, "image", counted_check)
    return media_reads, split_reads, checked


def _rows(folder: Path, split: str) -> tuple[list[dict], list[str]]:
    shards = sorted(folder.glob(f"{split}-*.parquet"))
    return [row for s in shards for row in pq.read_table(s).to_pylist()], [s.name for s in shards]


@pytest.mark.parametrize("per_domain", [False, True], ids=["single-folder", "per-domain"])
def test_each_domain_config_holds_its_raw_records_in_raw_order(per_domain, tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    splits = _raw_folder(raw, per_domain)
    media_reads, split_reads, checked = _count_media(monkeypatch)
    out = tmp_path / "export"
    assert (
        main(
            [
                "build",
                TASK.key,
                "--raw",
                str(raw),
                "--out",
                str(out),
                "--max-shard-size",
                "1KB",
                "--num-proc",
                "1",
            ]
        )
        == 0
    )
    records = [r for split in splits.values() for r in split]
    pictures = [r["inputs"]["image"] for r in records]
    # every picture read once and decode-checked once, every split file read once
    assert Counter(media_reads) == Counter(pictures)
    assert Counter(checked) == Counter(
        hashlib.sha1((raw / p).read_bytes()).hexdigest() for p in pictures
    )
    assert sorted(split_reads) == sorted(set(split_reads))
    features = builder_class(TASK).features()
    for domain in TASK.domains:
        for split, raw_records_ in splits.items():
            rows, names = _rows(out / domain, split)
            mine = [r for r in raw_records_ if record_domain(r["meta"], TASK.domains) == domain]
            assert [row["meta"]["id"] for row in rows] == [r["meta"]["id"] for r in mine]
            for row, record in zip(rows, mine):
                assert row["instruction"] == record["instruction"]
                assert row["outputs"] == record["outputs"] and row["meta"]["domain"] == domain
                image = row["inputs"].pop("image")
                assert image["bytes"] == (raw / record["inputs"]["image"]).read_bytes()
                assert row["inputs"] == {k: v for k, v in record["inputs"].items() if k != "image"}
            assert names == [
                f"{split}-{i:05d}-of-{len(names):05d}.parquet" for i in range(len(names))
            ]
            schema = pq.read_schema(out / domain / names[0])
            assert datasets.Features.from_arrow_schema(schema) == features
    assert len(_rows(out / "biology", "test")[1]) > 1  # datasets' own max_shard_size at work
    card = yaml.safe_load((out / "README.md").read_text(encoding="utf-8").split("---\n")[1])
    assert [c["config_name"] for c in card["configs"]] == [*TASK.domains, "all"]
    sizes = {
        c["config_name"]: {s["name"]: s["num_examples"] for s in c["splits"]}
        for c in card["dataset_info"]
    }
    assert sizes["all"] == {"test": sum(SIZES.values()), "shots": len(splits["shots"])}
    assert {d: sizes[d]["test"] for d in TASK.domains} == SIZES


def test_problems_of_a_folder_read_domain_by_domain_are_each_reported_once(tmp_path, capsys):
    """The single-folder form read domain config by domain config: a record naming no
    known domain, a broken picture, ids repeated across domains and across splits are each
    one problem, all reported at once; the file's notes are said once too."""
    from mera_multi_hf.core.errors import DataValidationError
    from mera_multi_hf.data.publish import export_raw

    raw = tmp_path / "raw"
    splits = _raw_folder(raw, per_domain=False)
    test, shots = splits["test"], splits["shots"]
    by_domain = {
        d: [r for r in test if record_domain(r["meta"], TASK.domains) == d] for d in TASK.domains
    }
    test[0]["meta"]["categories"]["domain"] = "astrology"
    unknown = test[0]["meta"]["id"]
    broken = raw / by_domain["chemistry"][1]["inputs"]["image"]
    broken.write_bytes(b"not a picture")
    by_domain["physics"][2]["meta"]["id"] = by_domain["biology"][3]["meta"]["id"]
    shots[0]["meta"]["id"] = by_domain["earth_science"][0]["meta"]["id"]
    _write(raw / "test.json", {"data": test})  # no "access": a note, not a problem
    _write(raw / "shots.json", {"data": shots})
    with pytest.raises(DataValidationError) as err:
        export_raw(TASK, raw, tmp_path / "export")
    problems = [(p.example_id, p.field) for p in err.value.problems]
    assert sorted(problems, key=str) == sorted(
        [
            (unknown, "meta.domain"),
            (by_domain["chemistry"][1]["meta"]["id"], "inputs.image"),
            (by_domain["biology"][3]["meta"]["id"], "meta.id"),
            (shots[0]["meta"]["id"], "meta.id"),
        ],
        key=str,
    ), str(err.value)
    assert "'astrology' is not one of biology" in str(err.value)
    assert not (tmp_path / "export").exists()
    test[0]["meta"]["categories"]["domain"] = "biology"
    broken.unlink()
    test.remove(by_domain["chemistry"][1])
    test.remove(by_domain["physics"][2])
    _write(raw / "test.json", {"data": test})
    _write(raw / "shots.json", {"data": shots[1:]})
    assert main(["build", TASK.key, "--raw", str(raw), "--out", str(tmp_path / "export")]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "note:" in line]
    assert len(notes) == 1 and 'test.json: no "access" key' in notes[0], notes
