"""`mera-multi compare`: McNemar against scipy's binomial test, two runs of one model
compare as no difference, a constructed effect is found, differing data is refused, and
runs from `evaluate` and from `score` of lm-evaluation-harness logs pair up."""

from __future__ import annotations

import io
import json
import os
import re

import numpy as np
import pytest
from scipy.stats import binomtest

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.outputs import OutputFolder
from mera_multi_hf.data.examples import Example
from mera_multi_hf.reporting.compare import compare_runs
from mera_multi_hf.reporting.compare_chart import chart_figure, chart_png
from mera_multi_hf.reporting.compare_stats import mcnemar_exact
from mera_multi_hf.reporting.reports import write_outputs
from mera_multi_hf.scoring.records import Results, RunRecord
from mera_multi_hf.scoring.score import score_task, summarize
from mera_multi_hf.tasks.table import get_task


@pytest.mark.parametrize(
    "only_a,only_b", [(0, 0), (3, 0), (9, 5), (40, 22), (7, 7), (0, 25), (130, 100)]
)
def test_mcnemar_equals_binomtest_on_discordant_counts(only_a, only_b):
    n = only_a + only_b
    expected = binomtest(only_a, n, 0.5).pvalue if n else 1.0
    assert mcnemar_exact(only_a, only_b) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_is_the_exact_binomial_tail_at_test_split_sizes():
    """The tail summed term by term is the sum of C(n, k) exactly (the same float), at
    the discordant counts of a full test split (UniScienceVQA: 7,432 examples)."""
    import math

    for only_a, only_b in [(1000, 1100), (1100, 1000), (0, 2000), (3, 1)]:
        n, low = only_a + only_b, min(only_a, only_b)
        exact = min(1.0, 2 * sum(math.comb(n, k) for k in range(low + 1)) / 2**n)
        assert mcnemar_exact(only_a, only_b) == exact
    assert 0 < mcnemar_exact(3600, 3832) < 0.01


def _examples(task_key: str, n: int, group_size: int = 1, prompt=lambda i: f"q{i}"):
    task = get_task(task_key)
    names = [name for name, _ in task.breakdowns]
    return task, [
        Example(
            task=task.key,
            id=i,
            index=i,
            prompt=prompt(i),
            media_fields=(),
            gold="AB"[(i // 2) % 2],
            group=i // group_size,
            breakdown={name: f"c{(i // group_size) % 3}" for name in names},
            meta={"id": i},
            options=("x", "y"),
        )
        for i in range(n)
    ]


def _run(folder, task, examples, right, name):
    """A run folder written by the real scoring and writer: ``right`` per example."""
    other = {"A": "B", "B": "A"}
    preds = {e.id: e.gold if ok else other[e.gold] for e, ok in zip(examples, right)}
    result = score_task(task, examples, preds)
    info = {"run_id": name, "mode": "score", "model": name}
    with OutputFolder(folder, kind="run").claim() as out:  # as a run writes it
        write_outputs(
            out, {}, Results(RunRecord.from_dict(info), summarize([result]), {result.task: result})
        )
    return folder


def test_known_effect_is_found_and_same_model_is_no_difference(tmp_path):
    task, examples = _examples("weird", 400)
    rng = np.random.default_rng(7)
    strong, weak, again = (rng.random(400) < 0.8, rng.random(400) < 0.6, rng.random(400) < 0.6)
    a = _run(tmp_path / "a", task, examples, strong, "strong")
    b = _run(tmp_path / "b", task, examples, weak, "weak")
    c = _run(tmp_path / "c", task, examples, again, "weak-again")
    found = compare_runs(a, b)["tasks"]["weird"]["metrics"]["exact_match"]
    assert found["verdict"] == "A better" and found["low"] > 0
    assert found["low"] < strong.mean() - weak.mean() < found["high"]
    only_a, only_b = int(np.sum(strong & ~weak)), int(np.sum(~strong & weak))
    assert (found["only_a"], found["only_b"]) == (only_a, only_b)
    assert found["mcnemar_p"] == pytest.approx(binomtest(only_a, only_a + only_b).pvalue)
    same = compare_runs(b, c)
    for record in [same["tasks"]["weird"]["metrics"]["exact_match"], same["overall"]]:
        assert record["verdict"] == "no difference" and record["low"] <= 0 <= record["high"]
    identical = compare_runs(b, b)["tasks"]["weird"]["metrics"]["exact_match"]
    assert identical["difference"] == 0 and identical["mcnemar_p"] == 1.0


def test_group_tasks_compare_by_group_and_breakdown(tmp_path):
    task, examples = _examples("ruhhh_image", 480, group_size=4)
    group_ok = np.random.default_rng(1).random(120) < 0.7
    better = np.repeat(group_ok, 4)  # A gets whole groups right
    worse = better.copy()
    worse[::4] = False  # B misses one pair in every group
    result = compare_runs(
        _run(tmp_path / "a", task, examples, better, "a"),
        _run(tmp_path / "b", task, examples, worse, "b"),
    )["tasks"]["ruhhh_image"]
    group = result["metrics"]["group_exact_match"]
    assert group["cluster"] == "group" and group["n_clusters"] == 120
    assert group["difference"] == pytest.approx(group_ok.mean()) and group["verdict"] == "A better"
    assert group["only_a"] == group_ok.sum() and group["only_b"] == 0
    assert set(result["breakdown"]["category"]) == {"c0", "c1", "c2"}
    assert result["task_score"]["verdict"] == "A better"


def test_different_data_is_refused_unless_forced(tmp_path, capsys):
    task, examples = _examples("weird", 60)
    _, changed = _examples("weird", 60, prompt=lambda i: f"q{i}" if i != 5 else "another")
    right = np.ones(60, dtype=bool)
    a = _run(tmp_path / "a", task, examples, right, "a")
    b = _run(tmp_path / "b", task, changed, right, "b")
    with pytest.raises(MeraError, match=r"different data.*ids 5.*--force"):
        compare_runs(a, b)
    assert compare_runs(a, b, force=True)["forced"]
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 2
    assert "different data" in capsys.readouterr().err
    assert main(["compare", str(a), str(tmp_path / "none"), "--out", str(tmp_path / "cmp")]) == 2
    assert "no results.json" in capsys.readouterr().err


def test_evaluate_run_against_score_of_lm_eval_logs(tmp_path, capsys):
    from mera_multi_hf.pipeline.evaluate import run_evaluation

    run_evaluation(
        tasks="ruhhh_image",
        data="sample",
        output_dir=tmp_path / "run",
        batch_size=8,
        no_progress=True,
    )
    logged = [
        json.loads(line)
        for line in (tmp_path / "run/samples_ruhhh_image_test.jsonl").read_text().splitlines()
    ]
    logs = tmp_path / "lm_eval"
    logs.mkdir()
    rows = [
        {
            "doc_id": n,
            "doc": {"meta": {"id": r["id"]}},
            "target": r["target"],
            "resps": [[r["generation"]]],
            "filtered_resps": [r["generation"]],
        }
        for n, r in enumerate(logged)
    ]
    (logs / "samples_ruhhh_image_2026-01-01T00-00-00.jsonl").write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n"
    )
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(logs),
                "--data",
                "sample",
                "--out",
                str(tmp_path / "scored"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    from mera_multi_hf.scoring.uncertainty import settings

    for folder in ("run", "scored"):  # the bootstrap's seed and resamples are recorded
        assert (
            json.loads((tmp_path / folder / "results.json").read_text())["run"]["bootstrap"]
            == settings()
        )
    out = tmp_path / "cmp"
    assert (
        main(["compare", str(tmp_path / "run"), str(tmp_path / "scored"), "--out", str(out)]) == 0
    )
    printed = capsys.readouterr().out
    assert "A: mera-multi-hf/tiny-random-llava" in printed
    assert re.search(r"^protocol differences: .*\bmode\b", printed, re.M)
    doc = json.loads((out / "compare.json").read_text())
    em = doc["tasks"]["ruhhh_image"]["metrics"]["exact_match"]
    assert doc["tasks"]["ruhhh_image"]["paired"] == len(rows)
    assert em["difference"] == 0 and em["low"] <= 0 <= em["high"] and em["mcnemar_p"] == 1.0
    assert (out / "compare.png").read_bytes()[:4] == b"\x89PNG" and (out / "compare.md").is_file()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "compare.md").write_text("mine")  # a file the tool did not write is never replaced
    assert (
        main(["compare", str(tmp_path / "run"), str(tmp_path / "scored"), "--out", str(mine)]) == 2
    )
    assert (mine / "compare.md").read_text() == "mine" and sorted(os.listdir(mine)) == [
        "compare.md"
    ]


def test_the_chart_fills_its_canvas_and_names_metrics_by_display_name(tmp_path):
    from PIL import Image

    from mera_multi_hf.scoring.registry import display_name

    task, examples = _examples("ruhhh_image", 120, group_size=4)
    rng = np.random.default_rng(3)
    result = compare_runs(
        _run(tmp_path / "a", task, examples, rng.random(120) < 0.8, "a"),
        _run(tmp_path / "b", task, examples, rng.random(120) < 0.5, "b"),
    )
    fig = chart_figure(result)
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    metrics = result["tasks"]["ruhhh_image"]["metrics"]
    assert sorted(labels) == sorted(
        ["ruhhh_image: task score"] + [f"ruhhh_image: {display_name(m)}" for m in metrics]
    )
    assert not any("_match" in label for label in labels)  # no internal names
    verdicts = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    assert verdicts[::-1] == [result["tasks"]["ruhhh_image"]["task_score"]["verdict"]] + [
        r["verdict"] for r in metrics.values()
    ]
    # what is drawn (labels, plot, verdicts) spans the canvas: no empty band on a side
    ink = np.asarray(Image.open(io.BytesIO(chart_png(result))).convert("L")) < 200
    cols, rows = np.flatnonzero(ink.any(axis=0)), np.flatnonzero(ink.any(axis=1))
    assert (cols[-1] - cols[0]) / ink.shape[1] > 0.95
    assert (rows[-1] - rows[0]) / ink.shape[0] > 0.9
