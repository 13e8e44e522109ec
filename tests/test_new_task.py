"""A made-up 19th task takes a declaration, a builder and a raw folder: the runner, the
scorer, the reports and the submission handle it with no other code change."""
from __future__ import annotations

import json
import zipfile

import pytest
from PIL import Image

from mera_multi_hf.runner import run_evaluation
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
