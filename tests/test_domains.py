"""Domain-split tasks: one config per domain, loaded as one task with meta.domain."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from mera_multi_hf import get_task, load_task
from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import DataValidationError
from mera_multi_hf.data.examples import make_examples
from mera_multi_hf.data.raw import domain_key
from mera_multi_hf.data.sources import source_kind
from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.tasks.table import TASKS

DOMAIN_SIZES = {"biology": 3, "chemistry": 5, "physics": 1, "earth_science": 2}


def _science_rows(domain, n, first_id):
    return [
        {
            "instruction": "<image>\\n{context}\\n{question}\\nA. {option_a}\\nB. {option_b}\\n"
            "C. {option_c}\\nD. {option_d}\\nОтвет:",
            "inputs": {
                "image": None,
                "question": f"Вопрос {domain} {i}",
                "context": "",
                "option_a": "да",
                "option_b": "нет",
                "option_c": "иногда",
                "option_d": "никогда",
            },
            "outputs": "ABCD"[i % 4],
            "meta": {"id": first_id + i},
        }
        for i in range(n)
    ]


@pytest.fixture
def science_folder(tmp_path):
    """ruNaturalScienceVQA in the Hub's layout: one config (folder of Parquet) per domain."""
    folder = tmp_path / "ruNaturalScienceVQA"
    configs, first_id = [], 0
    for domain, n in DOMAIN_SIZES.items():
        for split in ("test", "shots"):
            rows = _science_rows(domain, n if split == "test" else 1, first_id)
            first_id += len(rows)
            ds = datasets.Dataset.from_list(rows)
            (folder / domain).mkdir(parents=True, exist_ok=True)
            ds.to_parquet(str(folder / domain / f"{split}.parquet"))
        configs.append(
            f"- config_name: {domain}\n  data_files:\n"
            f"  - split: test\n    path: {domain}/test.parquet\n"
            f"  - split: shots\n    path: {domain}/shots.parquet"
        )
    (folder / "README.md").write_text("---\nconfigs:\n" + "\n".join(configs) + "\n---\n")
    return folder


def test_domain_configs_load_as_one_task_with_meta_domain(science_folder):
    test = load_task("runaturalsciencevqa", source=science_folder, split="test")
    assert len(test) == sum(DOMAIN_SIZES.values())
    domains = [m["domain"] for m in test["meta"]]
    assert {d: domains.count(d) for d in DOMAIN_SIZES} == DOMAIN_SIZES
    assert get_task("runaturalsciencevqa").domains == tuple(DOMAIN_SIZES)


def test_scores_break_down_by_domain_and_weigh_by_size(science_folder, tmp_path):
    test = load_task("runaturalsciencevqa", source=science_folder, split="test")
    right = {"biology", "chemistry"}  # all answers right in these, all wrong elsewhere
    lines = [
        {"id": m["id"], "prediction": gold if m["domain"] in right else "нет ответа"}
        for m, gold in zip(test["meta"], test["outputs"])
    ]
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    out = tmp_path / "r"
    assert (
        main(
            [
                "score",
                "--task",
                "runaturalsciencevqa",
                "--predictions",
                str(preds),
                "--data",
                str(science_folder),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads((out / "results.json").read_text())["tasks"]["runaturalsciencevqa"]
    by_domain = result["breakdown"]["domain"]
    assert {d: r["n_examples"] for d, r in by_domain.items()} == DOMAIN_SIZES
    assert by_domain["biology"]["exact_match"] == 1 and by_domain["physics"]["exact_match"] == 0
    weighted = sum(DOMAIN_SIZES[d] * r["exact_match"] for d, r in by_domain.items()) / len(test)
    assert result["metrics"]["exact_match"] == pytest.approx(weighted) == pytest.approx(8 / 11)
    assert "## runaturalsciencevqa by domain" in (out / "results.md").read_text()


# ---- the official per-domain raw layout: <domain>/test.json, <domain>/shots.json ----

DOMAIN_TASKS = ["runaturalsciencevqa", "schoolsciencevqa", "unisciencevqa"]


def _domain_of(task: str, record: dict) -> str:
    """The domain config a single-folder sample record names (meta.domain or categories.domain)."""
    named = record["meta"].get("domain") or record["meta"]["categories"]["domain"]
    return {domain_key(d): d for d in get_task(task).domains}[domain_key(named)]


def _write(path: Path, doc) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def _per_domain_layout(task: str, root: Path, meta_in_domains: bool = False) -> Path:
    """The bundled single-folder sample rewritten in the layout the upload notebooks read:
    raw_dataset_meta.json at the top (or in each domain folder), one folder per domain with
    its test.json and shots.json, samples/ at the top; records no longer name their domain
    in meta.domain (the folder does)."""
    sample = bundled_sample(task)
    shutil.copytree(sample / "samples", root / "samples")
    for name in ("raw_readme_en.json", "raw_readme_ru.json"):
        shutil.copy(sample / name, root / name)
    meta = json.loads((sample / "raw_dataset_meta.json").read_text(encoding="utf-8"))
    for split in ("test", "shots"):
        doc = json.loads((sample / f"{split}.json").read_text(encoding="utf-8"))
        named = [(_domain_of(task, r), r) for r in doc["data"]]
        for record in doc["data"]:
            record["meta"].pop("domain", None)
        for domain in get_task(task).domains:
            records = [r for d, r in named if d == domain]
            _write(root / domain / f"{split}.json", {**doc, "data": records})
            if meta_in_domains:
                _write(root / domain / "raw_dataset_meta.json", meta)
    if not meta_in_domains:
        _write(root / "raw_dataset_meta.json", meta)
    return root


def _by_id(ds) -> dict:
    return {row["meta"]["id"]: row for row in ds}


@pytest.mark.parametrize("task", DOMAIN_TASKS)
def test_official_per_domain_layout_loads_as_the_single_folder_form(task, tmp_path):
    folder = _per_domain_layout(task, tmp_path / "raw")
    assert source_kind(folder) == "raw" and not (folder / "test.json").exists()
    loaded, single = load_task(task, source=folder), load_task(task, source="sample")
    for split in ("test", "shots"):
        assert loaded[split].features == single[split].features
        ours, theirs = _by_id(loaded[split]), _by_id(single[split])
        assert ours == theirs  # same instructions, images, answers and meta (domain included)
        domains = [m["domain"] for m in loaded[split]["meta"]]
        assert domains == sorted(domains, key=get_task(task).domains.index)  # config by config
    spec = get_task(task)
    assert {e.breakdown["domain"] for e in make_examples(spec, loaded["test"])} == {
        _domain_of(task, r)
        for r in json.loads((bundled_sample(task) / "test.json").read_text())["data"]
    }


def test_per_domain_raw_exports_one_config_per_domain(tmp_path):
    task = "runaturalsciencevqa"
    folder = _per_domain_layout(task, tmp_path / "raw")
    out = tmp_path / "export"
    assert main(["build", task, "--raw", str(folder), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(DOMAIN_SIZES)
    card = yaml.safe_load((out / "README.md").read_text(encoding="utf-8").split("---\n")[1])
    assert [c["config_name"] for c in card["configs"]] == list(get_task(task).domains) + ["all"]
    assert [c.get("default") for c in card["configs"]][-1] is True
    biology = next(c for c in card["configs"] if c["config_name"] == "biology")
    assert biology["data_files"] == [
        {"split": "test", "path": "biology/test-*"},
        {"split": "shots", "path": "biology/shots-*"},
    ]
    # each config loads on its own with datasets, as a Hub copy's does
    physics = datasets.load_dataset(str(out), "physics", cache_dir=str(tmp_path / "hf"))
    assert {m["domain"] for m in physics["test"]["meta"]} == {"physics"}
    assert "Dataset size (metadata, computed): 8;" in (out / "README.md").read_text()
    exported, raw = load_task(task, source=out), load_task(task, source=folder)
    for split in ("test", "shots"):
        assert exported[split].features == raw[split].features
        assert _by_id(exported[split]) == _by_id(raw[split])


def test_domain_folders_may_hold_their_own_metadata_prompts_and_pictures(tmp_path):
    task = "schoolsciencevqa"
    folder = _per_domain_layout(task, tmp_path / "raw", meta_in_domains=True)
    meta = json.loads((folder / "biology" / "raw_dataset_meta.json").read_text())
    meta["prompts"] = [
        "БИОЛОГИЯ <image> {context} {question} A. {option_a} B. {option_b} "
        "C. {option_c} D. {option_d}"
    ]
    _write(folder / "biology" / "raw_dataset_meta.json", meta)
    doc = json.loads((folder / "biology" / "test.json").read_text())
    for record in doc["data"]:
        record["instruction"] = 0  # an index into this domain's own prompt list
    _write(folder / "biology" / "test.json", doc)
    picture = doc["data"][0]["inputs"]["image"]  # biology/<path> is looked up first
    (folder / "biology" / picture).parent.mkdir(parents=True)
    Image.new("RGB", (7, 5), (0, 90, 0)).save(folder / "biology" / picture)
    test = load_task(task, source=folder, split="test")
    for row in test:
        in_biology = row["meta"]["domain"] == "biology"
        assert row["instruction"].startswith("БИОЛОГИЯ") == in_biology
    sizes = {
        row["meta"]["id"]: (row["meta"]["domain"], row["inputs"]["image"].size) for row in test
    }
    assert sizes[doc["data"][0]["meta"]["id"]] == ("biology", (7, 5))
    assert all(size != (7, 5) for domain, size in sizes.values() if domain != "biology")
    doc["data"][0]["instruction"] = 3
    _write(folder / "biology" / "test.json", doc)
    with pytest.raises(DataValidationError) as err:  # the domain's list has one prompt
        load_task(task, source=folder)
    assert "prompt index 3 out of range (the prompt list has 1 prompts)" in str(err.value)


def test_per_domain_layout_problems_name_file_id_and_field(tmp_path):
    task = "runaturalsciencevqa"
    folder = _per_domain_layout(task, tmp_path / "raw")
    (folder / "physics" / "shots.json").unlink()
    biology = json.loads((folder / "biology" / "test.json").read_text())
    biology["data"][0]["meta"]["domain"] = "physics"
    _write(folder / "biology" / "test.json", biology)
    chemistry = json.loads((folder / "chemistry" / "test.json").read_text())
    chemistry["data"][1]["meta"]["id"] = biology["data"][1]["meta"]["id"]
    chemistry["access"] = "private"
    _write(folder / "chemistry" / "test.json", chemistry)
    with pytest.raises(DataValidationError) as err:
        load_task(task, source=folder)
    lines = str(err.value).splitlines()

    def line(*parts):
        hits = [x for x in lines if all(p in x for p in parts)]
        assert hits, "\n".join(lines)
        return hits[0]

    line("physics/shots.json", "missing: every domain folder needs shots.json")
    line(
        "biology/test.json",
        f"id={biology['data'][0]['meta']['id']}",
        "field meta.domain:",
        "'physics' names another domain than its folder biology/",
    )
    line(
        "chemistry/test.json",
        f"id={biology['data'][1]['meta']['id']}",
        "field meta.id:",
        "duplicate id (records #1 of ",
        "biology/test.json and #1)",
    )
    line("chemistry/test.json", "field access:", "every domain folder must say the same")


def test_a_domain_folder_linked_from_outside_is_refused(tmp_path):
    folder = _per_domain_layout("runaturalsciencevqa", tmp_path / "raw")
    outside = tmp_path / "elsewhere"
    (folder / "physics").rename(outside)
    (folder / "physics").symlink_to(outside, target_is_directory=True)
    with pytest.raises(DataValidationError) as err:
        load_task("runaturalsciencevqa", source=folder)
    assert "physics/test.json" in str(err.value) and "leads outside the dataset folder" in str(
        err.value
    )


@pytest.mark.parametrize("task", [t.key for t in TASKS.values() if t.domains])
def test_the_readme_sentence_loads_every_domain_export(task, tmp_path, monkeypatch):
    """README: an exported folder is a plain Hub dataset, `load_dataset("hub/<Name>")`
    reads it -- for a domain-split task too: its default config joins every domain."""
    name = get_task(task).hub_id.split("/")[-1]
    monkeypatch.chdir(tmp_path)
    assert main(["build", task, "--raw", "sample", "--out", f"hub/{name}"]) == 0
    whole = datasets.load_dataset(f"hub/{name}", cache_dir=str(tmp_path / "hf"))
    parts = [
        datasets.load_dataset(f"hub/{name}", d, cache_dir=str(tmp_path / "hf"))
        for d in datasets.get_dataset_config_names(f"hub/{name}")
        if d != "all"
    ]
    for split in whole:
        assert len(whole[split]) == sum(len(p[split]) for p in parts if split in p)
        assert {m["domain"] for m in whole[split]["meta"]} == {
            m["domain"] for p in parts if split in p for m in p[split]["meta"]
        }


def test_the_builder_declares_one_config_per_domain_and_all(tmp_path):
    """BUILDER_CONFIGS as the datasets template has them: ``all`` (the default) and one per
    domain; a domain config builds only its domain's records, with datasets' own writer."""
    from mera_multi_hf.data.builders import builder_class

    task = TASKS["runaturalsciencevqa"]
    cls = builder_class(task)
    assert [c.name for c in cls.BUILDER_CONFIGS] == ["all", *task.domains]
    assert cls.DEFAULT_CONFIG_NAME == "all"
    raw = str(bundled_sample(task.key))
    counts = {}
    for name in ("all", "biology"):
        builder = cls(config_name=name, data_dir=raw, cache_dir=str(tmp_path / "cache"))
        builder.download_and_prepare(
            output_dir=str(tmp_path / name), file_format="parquet", max_shard_size=10**9
        )
        rows = [
            r
            for f in sorted((tmp_path / name).glob("*-test*.parquet"))
            for r in pq.read_table(f, columns=["meta"])["meta"].to_pylist()
        ]
        counts[name] = [r["domain"] for r in rows]
    assert counts["biology"] and set(counts["biology"]) == {"biology"}
    assert counts["biology"] == [d for d in counts["all"] if d == "biology"]
    assert set(counts["all"]) > {"biology"}
