"""The run's bar chart (results.png): written by `evaluate` and `score`, linked from
results.md, listed with its sha256 in results.json, the human baseline drawn."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mera_multi_hf.atomic import sha256_bytes
from mera_multi_hf.charts import HUMAN_COLOR, chart_png, panels


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def _human_pixels(png: bytes) -> int:
    red = np.array([int(HUMAN_COLOR[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(_pixels(png) - red).sum(axis=2) < 40).sum())


def _check_output(out: Path) -> None:
    png = (out / "results.png").read_bytes()
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.width >= 400 and image.height >= 250
    assert _pixels(png).std() > 20  # not blank
    assert _human_pixels(png) > 20  # ruHHH-Image has a human baseline
    assert "](results.png)" in (out / "results.md").read_text(encoding="utf-8")
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["run"]["files"]["results.png"] == sha256_bytes(png)


def test_evaluate_run_writes_the_chart(tmp_path):
    from mera_multi_hf.runner import run_evaluation

    run_evaluation(tasks="ruhhh_image", data="sample", output_dir=str(tmp_path / "run"),
                   batch_size=8, limit=12)
    _check_output(tmp_path / "run")


def test_score_run_writes_the_chart(tmp_path):
    from mera_multi_hf.loading import load_task

    test = load_task("ruhhh_image", source="sample")["test"]
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"id": m["id"], "prediction": "A"}) + "\n"
                             for m in test["meta"]), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mera_multi_hf", "score", "--task", "ruhhh_image",
                           "--predictions", str(preds), "--data", "sample", "--out",
                           str(tmp_path / "scored")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    _check_output(tmp_path / "scored")
    assert "results.png" in proc.stdout


def _result(task, metrics, human, breakdown=None):
    return {"task": task, "split": "test", "n_examples": 10, "scorable": True, "metrics": metrics,
            "task_score": sum(metrics.values()) / len(metrics), "human_baseline": human,
            "breakdown": breakdown or {}}


def test_panels_follow_the_breakdowns():
    domains = {"domain": {"biology": {"exact_match": 0.5, "n_examples": 4},
                          "physics": {"exact_match": 0.25, "n_examples": 6}}}
    shown = panels([_result("runaturalsciencevqa", {"exact_match": 0.35}, {"exact_match": 0.938},
                            domains),
                    _result("ruclevr", {"exact_match": 0.6}, {"exact_match": 0.9608}),
                    _result("weird", {"exact_match": 0.4}, {}),
                    {"task": "realvqa", "scorable": False, "metrics": {}}])
    assert [p["labels"] for p in shown] == [["all", "biology", "physics"], ["ruclevr", "weird"]]
    assert shown[0]["series"] == {"exact_match": [0.35, 0.5, 0.25]}
    assert shown[0]["human"] == {"exact_match": 0.938}
    assert shown[1]["human"] == {"task score": [0.9608, None]}


def test_human_baseline_is_drawn_only_when_known():
    with_human = chart_png([_result("ruclevr", {"exact_match": 0.6}, {"exact_match": 0.9608})])
    without = chart_png([_result("ruclevr", {"exact_match": 0.6}, {})])
    assert _human_pixels(with_human) > 20 and _human_pixels(without) == 0
    assert chart_png([{"task": "realvqa", "scorable": False, "metrics": {}}]) is None


def test_import_does_not_load_matplotlib():
    code = "import sys, mera_multi_hf, mera_multi_hf.reports; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("n_tasks", [1, 12])
def test_chart_size_grows_with_the_labels(n_tasks):
    results = [_result(f"task{i}", {"exact_match": i / 10}, {"exact_match": 0.9}) for i in range(n_tasks)]
    image = Image.open(io.BytesIO(chart_png(results)))
    assert image.width >= 600 and (n_tasks == 1 or image.width > 600)
