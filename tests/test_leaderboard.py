"""`mera-multi leaderboard`: rows of runs with intervals, coverage, the official-split
mark, and ranks only among runs of the same tasks."""

from __future__ import annotations

import json

import numpy as np

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.outputs import OutputFolder
from mera_multi_hf.data.examples import Example
from mera_multi_hf.reporting.reports import write_outputs
from mera_multi_hf.scoring.records import Results, RunRecord
from mera_multi_hf.scoring.score import score_task, summarize
from mera_multi_hf.tasks.table import get_task


def _result(key: str, n: int, accuracy: float, seed: int):
    task = get_task(key)
    examples = [
        Example(
            task=key,
            id=i,
            index=i,
            prompt=f"q{i}",
            media_fields=(),
            gold="A",
            group=i // 2 if task.has_groups else i,
            meta={"id": i},
            options=("x", "y"),
        )
        for i in range(n)
    ]
    right = np.random.default_rng(seed).random(n) < accuracy
    return score_task(task, examples, {e.id: "A" if ok else "B" for e, ok in zip(examples, right)})


def _run(folder, name, results, official=False):
    info = {
        "run_id": name,
        "mode": "evaluate",
        "model": name,
        "split": "test",
        "official_test_split": {r.task: official for r in results},
    }
    with OutputFolder(folder, kind="run").claim() as out:  # as a run writes it
        tasks = {r.task: r for r in results}
        write_outputs(out, {}, Results(RunRecord.from_dict(info), summarize(results), tasks))
    return str(folder)


def test_leaderboard_ranks_runs_of_the_same_tasks_only(tmp_path, capsys):
    good = _run(
        tmp_path / "good",
        "good",
        [_result("weird", 200, 0.9, 1), _result("ruhhh_image", 100, 0.8, 2)],
        official=True,
    )
    bad = _run(
        tmp_path / "bad",
        "bad",
        [_result("weird", 200, 0.5, 3), _result("ruhhh_image", 100, 0.5, 4)],
    )
    other = _run(tmp_path / "other", "other", [_result("weird", 200, 0.99, 5)])
    out = tmp_path / "board"
    assert main(["leaderboard", bad, other, good, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    board = json.loads((out / "leaderboard.json").read_text())
    rows = {r["model"]: r for r in board["rows"]}
    assert (rows["good"]["rank"], rows["bad"]["rank"]) == (1, 2)
    assert rows["good"]["task_set"] == rows["bad"]["task_set"] != rows["other"]["task_set"]
    assert (rows["other"]["rank"], rows["other"]["ranked_against"]) == (1, 0)
    assert rows["good"]["official_test_split"] and not rows["bad"]["official_test_split"]
    assert rows["good"]["coverage"] == {
        "tasks": 2,
        "of_tasks": 18,
        "examples": 300,
        "of_examples": 814 + 595,
    }
    u = rows["good"]["total"]["uncertainty"]
    assert u["low"] < rows["good"]["total"]["score"] < u["high"]
    assert set(rows["good"]["modality"]) == {"image"} and board["tasks"] == ["ruhhh_image", "weird"]
    assert "| 1 of 2 (set 1) | good" in printed and "**no**" in printed and " ± " in printed
    assert (out / "leaderboard.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "leaderboard.md").read_text() in printed + "\n"
