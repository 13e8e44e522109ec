"""Quiet, honest output: no judge rows for a user who never asked for a judge (one
footnote instead), the judge scores explained where judge rows are, no leaderboard
total for a bundled sample, and --no-progress silences datasets' bars too."""

from __future__ import annotations

import datasets

from mera_multi_hf.cli.main import main
from mera_multi_hf.reporting.reports import JUDGE_LABEL, markdown
from mera_multi_hf.scoring.records import RunRecord, Summary, TaskResult


def test_a_demo_run_says_only_what_applies(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MERA_MULTI_CACHE", str(tmp_path / "fresh-cache"))  # a conversion happens
    shown = datasets.is_progress_bar_enabled()
    try:
        assert (
            main(
                ["evaluate", "--limit", "2", "--output-dir", str(tmp_path / "run"), "--no-progress"]
            )
            == 0
        )
    finally:
        (datasets.enable_progress_bars if shown else datasets.disable_progress_bars)()
    out, err = capsys.readouterr()
    assert "Generating" not in err and "examples/s" not in err and "it/s" not in err, err
    md = (tmp_path / "run" / "results.md").read_text(encoding="utf-8")
    for text in (out, md):
        assert "not computed" not in text and "private tasks" not in text
        assert text.count("need a judge: pass --judge-url") == 1
        assert JUDGE_LABEL not in text  # no judge rows, nothing to explain


def test_judge_rows_come_with_the_explanation_of_the_label():
    result = TaskResult(
        "ruclevr", "ruCLEVR", "image", True, "test", 4, ["exact_match"], ["judge_score"], {}, {}
    )
    result.scorable, result.metrics = True, {"exact_match": 0.5}
    result.judge = {"judge_score": 0.75}
    result.leaderboard_metrics = ["exact_match", "judge_score"]
    summary = Summary.from_dict(
        {
            "modality": {},
            "overall": {"score": 0.5, "n_tasks": 1},
            "official_total": {"score": None, "n_tasks": 0, "of": 11},
            "task_score_definition": "the mean",
        }
    )
    md = markdown([result], summary, RunRecord.from_dict({"model": "m", "run_id": "r"}))
    assert "| Judge score | 0.7500" in md and JUDGE_LABEL in md
    assert "need a judge" not in md and "private tasks" not in md
    run = RunRecord.from_dict({"model": "m", "official_test_split": {"ruclevr": True}})
    official = markdown([result], summary, run)
    assert "private tasks (the leaderboard's set)" in official
