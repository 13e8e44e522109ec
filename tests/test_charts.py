"""The run's bar chart (results.png): written by `evaluate` and `score`, linked from
results.md, listed with its sha256 in results.json, the human baseline drawn."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mera_multi_hf.core.hashing import sha256_bytes
from mera_multi_hf.reporting.charts import HUMAN_COLOR, chart_png, panels
from mera_multi_hf.scoring.records import TaskResult


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def _human_pixels(png: bytes) -> int:
    red = np.array([int(HUMAN_COLOR[i : i + 2], 16) for i in (1, 3, 5)])
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
    from mera_multi_hf.pipeline.evaluate import run_evaluation

    run_evaluation(
        tasks="ruhhh_image", data="sample", output_dir=str(tmp_path / "run"), batch_size=8, limit=12
    )
    _check_output(tmp_path / "run")


def test_score_run_writes_the_chart(tmp_path):
    from mera_multi_hf.data.loading import load_task

    test = load_task("ruhhh_image", source="sample")["test"]
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(json.dumps({"id": m["id"], "prediction": "A"}) + "\n" for m in test["meta"]),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mera_multi_hf",
            "score",
            "--task",
            "ruhhh_image",
            "--predictions",
            str(preds),
            "--data",
            "sample",
            "--out",
            str(tmp_path / "scored"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    _check_output(tmp_path / "scored")
    assert "results.png" in proc.stdout


def _unscored(task, n_examples=10):
    """A task whose gold answers are hidden: named in the summary, not scored."""
    return TaskResult(task, task, "image", False, "test", n_examples, [], [], {}, {})


def _result(task, metrics, human, breakdown=None):
    return dataclasses.replace(
        _unscored(task),
        official_metrics=list(metrics),
        human_baseline=human,
        scorable=True,
        metrics=metrics,
        task_score=sum(metrics.values()) / len(metrics),
        breakdown=breakdown or {},
    )


def test_panels_follow_the_breakdowns():
    domains = {
        "domain": {
            "biology": {"exact_match": 0.5, "n_examples": 4},
            "physics": {"exact_match": 0.25, "n_examples": 6},
        }
    }
    shown = panels(
        [
            _result("runaturalsciencevqa", {"exact_match": 0.35}, {"exact_match": 0.938}, domains),
            _result("ruclevr", {"exact_match": 0.6}, {"exact_match": 0.9608}),
            _result("weird", {"exact_match": 0.4}, {}),
            _unscored("realvqa"),
        ]
    )
    # the summary names every task of the run (official names), the breakdowns follow
    assert [p["labels"] for p in shown] == [
        ["ruNaturalScienceVQA", "ruCLEVR", "WEIRD", "RealVQA"],
        ["all", "biology", "physics"],
    ]
    assert shown[1]["series"] == {"exact_match": [0.35, 0.5, 0.25]} and shown[1]["n"] == [10, 4, 6]
    assert shown[1]["human"] == {"exact_match": 0.938}
    assert shown[0]["human"] == {"task score": [0.938, 0.9608, None, None]}
    assert shown[0]["series"] == {"task score": [0.35, 0.6, 0.4, None]}


def test_human_baseline_is_drawn_only_when_known():
    with_human = chart_png([_result("ruclevr", {"exact_match": 0.6}, {"exact_match": 0.9608})])
    without = chart_png([_result("ruclevr", {"exact_match": 0.6}, {})])
    assert _human_pixels(with_human) > 20 and _human_pixels(without) == 0
    assert chart_png([_unscored("realvqa")]) is None


def test_drawing_the_chart_does_not_load_matplotlib():
    # matplotlib's import and layout cost a run more CPU than all its requests
    code = (
        "import sys\n"
        "from mera_multi_hf.reporting.charts import chart_png\n"
        "from mera_multi_hf.scoring.records import TaskResult\n"
        "r = TaskResult('ruclevr', 'ruCLEVR', 'image', True, 'test', 10, [], [], {}, {})\n"
        "r.scorable, r.metrics, r.task_score = True, {'exact_match': 0.5}, 0.5\n"
        "assert chart_png([r], 'm').startswith(bytes([137]) + b'PNG')\n"
        "print('matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("n_tasks", [1, 12])
def test_chart_size_grows_with_the_labels(n_tasks):
    results = [
        _result(f"task{i}", {"exact_match": i / 10}, {"exact_match": 0.9}) for i in range(n_tasks)
    ]
    image = Image.open(io.BytesIO(chart_png(results)))
    assert image.width >= 600 and (n_tasks == 1 or image.width > 600)


# What is drawn, read from the chart's marks (not from pixels): boxes in pixels, y down.


def _axes(results):
    from mera_multi_hf.reporting.charts import drawing

    chart = drawing(results, title="MERA Multi: m")
    return chart, chart.panels


def _marks(panel, gid):
    return [m for m in panel["marks"] if m.gid == gid]


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_a_zero_has_a_mark_and_a_value_label():
    chart, panels_ = _axes(
        [
            _result("ruclevr", {"exact_match": 0.0}, {"exact_match": 0.96}),
            _result("weird", {"exact_match": 0.5}, {}),
        ]
    )
    summary = panels_[0]
    assert [t.text for t in _marks(summary, "value")] == ["0.00", "0.50"]
    marks = _marks(summary, "zero-mark")
    assert len(marks) == 1 and marks[0].width >= 2


def test_every_task_is_in_the_summary_with_its_official_name_and_n():
    from mera_multi_hf.tasks.table import TASKS

    results = []
    for key, task in TASKS.items():
        breakdown = (
            {
                "category": {
                    "a": {"exact_match": 0.5, "n_examples": 3},
                    "b": {"exact_match": 0.0, "n_examples": 40},
                }
            }
            if task.breakdowns
            else None
        )
        results.append(_result(key, {"exact_match": 0.25}, {"exact_match": 0.9}, breakdown))
    results[7] = _unscored("realvqa", n_examples=5)
    chart, panels_ = _axes(results)
    ticks = [t.text for t in _marks(panels_[0], "tick")]
    assert ticks == [f"{t.class_name}\nn={5 if t.key == 'realvqa' else 10}" for t in TASKS.values()]
    assert len(_marks(panels_[0], "bar")) == 17  # the hidden-answer task: named, no bar
    assert [t.text for t in _marks(panels_[0], "missing")] == ["not scored"]
    assert len(panels_) == 1 + sum(bool(t.breakdowns) for t in TASKS.values())
    # no label collides with another: tick labels and value labels of each panel
    for panel in panels_:
        for gid in ("tick", "value"):
            boxes = [t.box for t in _marks(panel, gid)]
            for i, a in enumerate(boxes):
                assert not any(_overlap(a, b) for b in boxes[i + 1 :]), gid
        # and every mark of a panel stays on the chart
        assert all(0 <= m.box[0] and m.box[2] <= chart.width for m in panel["marks"])
        assert all(m.box[3] <= chart.height for m in panel["marks"])


def test_few_examples_are_hatched_and_the_baseline_only_over_bars():
    breakdown = {
        "category": {
            "one": {"exact_match": 1.0, "n_examples": 1},
            "many": {"exact_match": 0.5, "n_examples": 50},
            "none": {"exact_match": None, "n_examples": 0},
        }
    }
    result = _result("ruhhh_image", {"exact_match": 0.55}, {"exact_match": 0.95}, breakdown)
    result.n_examples = 51
    chart, panels_ = _axes([result])
    panel = panels_[1]
    bars = _marks(panel, "bar")
    assert [round(b.value, 2) for b in bars] == [0.55, 1.0, 0.5]
    assert [b.hatched for b in bars] == [False, True, False]
    assert len(_marks(panel, "human")) == 3  # over the three bars, not over "none"
    assert any("too few" in t.text for t in _marks(panel, "legend"))


def test_intervals_are_drawn_when_the_result_carries_them():
    plain = _result("ruclevr", {"exact_match": 0.6}, {})
    with_ci = dataclasses.replace(
        plain,
        uncertainty={
            "exact_match": {"low": 0.4, "high": 0.8, "stderr": 0.1, "level": 0.95, "n": 10}
        },
        task_score_uncertainty={"low": 0.4, "high": 0.8},
    )

    def intervals(result):
        chart, panels_ = _axes([result])
        return [m for m in chart.all_marks() if m.gid == "interval"]

    assert not intervals(plain)
    drawn = intervals(with_ci)
    assert drawn and all(m.value == (0.4, 0.8) for m in drawn)
    assert all(m.box[1] < m.box[3] for m in drawn)  # from the high end down to the low


def test_zero_labels_in_domain_panels_clear_the_axis_and_the_baselines():
    zero = {
        "exact_match": 0.0,
        "n_examples": 12,
        "uncertainty": {"exact_match": {"low": 0.0, "high": 0.0}},
    }
    domains = {
        "domain": {
            d: dict(zero)
            for d in (
                "Applied_Sciences",
                "Business",
                "Cultural_Studies",
                "Fundamental_Sciences",
                "Social_Sciences",
            )
        }
    }
    chart, panels_ = _axes(
        [_result("unisciencevqa", {"exact_match": 0.0}, {"exact_match": 0.12}, domains)]
    )
    panel = panels_[-1]
    x0, top, x1, bottom = panel["box"]
    labels = _marks(panel, "value")
    assert len(labels) == 6 and {t.text for t in labels} == {"0.00"}
    baselines = {m.box[1] for m in _marks(panel, "human")}
    ticks = [t.box for t in _marks(panel, "tick")]
    for label in labels:
        box = label.box
        assert box[3] < bottom - 2  # above the axis line and the zero mark
        assert not any(box[1] <= y <= box[3] for y in baselines)  # no baseline crosses it
        assert not any(_overlap(box, t) for t in ticks)
        assert box[1] > top  # inside the panel
