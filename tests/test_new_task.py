"""A made-up 19th task takes a declaration, a builder and a raw folder: the runner, the
scorer, the reports and the submission handle it with no other code change (also with its
sample declared as the task's bundled sample, and with groups made of its own fields)."""
from __future__ import annotations

import dataclasses
import json
import zipfile

import pytest
from PIL import Image

from mera_multi_hf.runner import run_evaluation
from mera_multi_hf.sample_data import bundled_sample, write_sample
from mera_multi_hf.tasks import TASKS, TaskSpec, register_task

BUILDER = '''
import datasets
from mera_multi_hf.builder import MeraBuilder

class ToyColours(MeraBuilder):
    TASK_KEY = "toy_colours"
    META_FEATURES = {"id": datasets.Value("int32"), "shade": datasets.Value("string")}
'''

COLOURS = {"red": (200, 30, 30), "green": (30, 160, 60), "blue": (40, 60, 200)}


def _record(i, colour, outputs):
    return {"instruction": "Посмотри: <image>\nКакой это цвет?\nA. {option_a}\nB. {option_b}\n"
                           "C. {option_c}\nОтвет:",
            "inputs": {"image": f"samples/{colour}{i}.png", "option_a": "красный",
                       "option_b": "зелёный", "option_c": "синий"},
            "outputs": outputs, "meta": {"id": i, "shade": "light" if i % 2 else "dark"}}


@pytest.fixture
def toy_task(tmp_path):
    raw = tmp_path / "ToyColours"
    (raw / "samples").mkdir(parents=True)
    records = []
    for i, colour in enumerate(["red", "green", "blue", "red", "blue", "green", "red"], 1):
        Image.new("RGB", (8, 8), COLOURS[colour]).save(raw / "samples" / f"{colour}{i}.png")
        records.append(_record(i, colour, "ABC"[list(COLOURS).index(colour)]))
    (raw / "test.json").write_text(json.dumps({"access": "public", "data": records[:5]},
                                              ensure_ascii=False), encoding="utf-8")
    (raw / "shots.json").write_text(json.dumps({"data": records[5:]}, ensure_ascii=False),
                                    encoding="utf-8")
    meta = {"dataset_name": "ToyColours", "license": "MIT", "dataset_size": "len(DATA)",
            "description": {"ru": "Цвета.", "en": "Colours."}, "prompts": [],
            "metrics": {"Exact match": {"ru": "Точное совпадение", "en": "Exact match"}},
            "human_benchmark": {"Exact match": 1.0}}
    (raw / "raw_dataset_meta.json").write_text(json.dumps(meta, ensure_ascii=False),
                                               encoding="utf-8")
    builder = tmp_path / "toy_colours.py"
    builder.write_text(BUILDER, encoding="utf-8")
    task = register_task(TaskSpec(
        "toy_colours", "example/ToyColours", "ToyColours", "image", ("image",),
        ("option_a", "option_b", "option_c"), "letter", ("exact_match",), choices=("A", "B", "C"),
        public=True, breakdowns=(("shade", "shade"),), human_baseline={"exact_match": 1.0},
        builder=str(builder)))
    yield task, raw
    TASKS.pop("toy_colours")


def test_a_new_task_runs_scores_reports_and_submits(toy_task, tmp_path):
    task, raw = toy_task
    out = tmp_path / "run"
    result = run_evaluation(tasks="toy_colours", data=str(raw), output_dir=str(out),
                            no_progress=True, max_new_tokens=4)
    scored = result["tasks"][0]
    assert scored["task"] == "toy_colours" and scored["n_examples"] == 5 and scored["scorable"]
    assert set(scored["breakdown"]["shade"]) == {"light", "dark"}
    assert sum(r["n_examples"] for r in scored["breakdown"]["shade"].values()) == 5
    assert scored["human_baseline"] == {"exact_match": 1.0}
    samples = [json.loads(x) for x in (out / "samples_toy_colours_test.jsonl").read_text().splitlines()]
    assert [r["target"] for r in samples] == ["A", "B", "C", "A", "C"]
    assert scored["metrics"]["exact_match"] == pytest.approx(
        sum(r["metrics"]["exact_match"] for r in samples) / 5)
    with zipfile.ZipFile(out / "submission.zip") as zf:
        rows = json.loads(zf.read("ToyColours.json"))["data"]["test"]
    assert sorted(r["meta"]["id"] for r in rows) == [1, 2, 3, 4, 5]
    assert "toy_colours" in (out / "results.md").read_text()


@pytest.fixture
def grouped_toy_with_sample(toy_task):
    """The same task declared again with its folder as its bundled sample, scored by group:
    examples with the same picture form a group (no "question" field, no group ids given)."""
    task, raw = toy_task
    builder = raw.parent / "toy_groups.py"  # its meta keeps the derived group id
    builder.write_text(BUILDER.replace('"toy_colours"', '"toy_groups"').replace(
        '"shade": datasets.Value("string")}',
        '"shade": datasets.Value("string"), "group_id": datasets.Value("int32")}'),
        encoding="utf-8")
    grouped = register_task(dataclasses.replace(
        task, key="toy_groups", metrics=("exact_match", "group_exact_match"),
        group_by=("image",), sample=str(raw), builder=str(builder)))
    yield grouped, raw
    TASKS.pop("toy_groups")


def test_a_new_task_with_a_bundled_sample_and_its_own_groups(grouped_toy_with_sample, tmp_path):
    task, raw = grouped_toy_with_sample
    assert bundled_sample(task.key) == raw
    copy = write_sample(tmp_path / "copy", task.key)
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in raw.iterdir())
    out = tmp_path / "run"
    result = run_evaluation(tasks=task.key, data="sample", output_dir=str(out),
                            no_progress=True, max_new_tokens=4)
    scored = result["tasks"][0]
    # test pictures red1 green2 blue3 red4 blue5: one-colour PNGs, so the two reds and the
    # two blues have the same bytes -> three groups
    assert scored["n_examples"] == 5 and scored["n_groups"] == 3
    samples = [json.loads(x) for x in (out / f"samples_{task.key}_test.jsonl").read_text()
               .splitlines()]
    assert [r["target"] for r in samples] == ["A", "B", "C", "A", "C"]
    assert set(scored["metrics"]) >= {"exact_match", "group_exact_match"}
    with zipfile.ZipFile(out / "submission.zip") as zf:
        assert len(json.loads(zf.read("ToyColours.json"))["data"]["test"]) == 5


def test_group_by_must_name_the_inputs_and_match_the_group_metric():
    from mera_multi_hf.errors import MeraError
    base = dict(choices=("A", "B"))
    for metrics, group_by in ((("exact_match", "group_exact_match"), ()),
                              (("exact_match",), ("image",)),
                              (("exact_match", "group_exact_match"), ("nowhere",))):
        with pytest.raises(MeraError, match="group_by must name its inputs"):
            TaskSpec("bad", "x/Bad", "Bad", "image", ("image",), ("question",), "letter",
                     metrics, group_by=group_by, **base)
