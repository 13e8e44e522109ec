"""The leaderboard's own metric list (the MERA README's task table) decides the task
score; ruTiE's local number is strict EM, labelled a local estimate."""

from __future__ import annotations

import pytest

from mera_multi_hf.data.examples import Example
from mera_multi_hf.reporting.reports import markdown, metric_rows
from mera_multi_hf.scoring.records import RunRecord
from mera_multi_hf.scoring.score import score_task, summarize, task_score
from mera_multi_hf.tasks.table import TASKS

# The README's table, restated: task -> the metrics the leaderboard ranks it by.
README_TABLE = {
    "ruhhh_image": {"group_exact_match", "group_judge_score"},
    "ruhhh_video": {"group_exact_match", "group_judge_score"},
    "ruslun": {"intent_exact_match", "slot_f1"},
}


@pytest.mark.parametrize("key", sorted(TASKS))
def test_every_task_declares_the_readme_leaderboard_metrics(key):
    expected = README_TABLE.get(key, {"exact_match", "judge_score"})  # "EM, JS"
    assert set(TASKS[key].leaderboard) == expected
    # each is one the package computes (an official metric, or the judge's)
    assert set(TASKS[key].leaderboard) <= set(TASKS[key].metrics) | set(TASKS[key].judge_metrics)


@pytest.mark.parametrize(
    "key, metrics, judge, score, partial",
    [
        ("ruhhh_image", {"exact_match": 0.9, "group_exact_match": 0.6}, {}, 0.6, True),
        (
            "ruhhh_image",
            {"exact_match": 0.9, "group_exact_match": 0.6},
            {"judge_score": 0.1, "group_judge_score": 0.4},
            0.5,
            False,
        ),
        ("ruslun", {"intent_exact_match": 0.8, "slot_f1": 0.4}, {}, 0.6, False),
        ("weird", {"exact_match": 0.7}, {}, 0.7, True),
        ("weird", {"exact_match": 0.7}, {"judge_score": 0.3}, 0.5, False),
    ],
)
def test_task_score_is_the_mean_of_the_leaderboard_metrics_computed(
    key, metrics, judge, score, partial
):
    out = task_score(TASKS[key], {"metrics": metrics, "judge": judge})
    assert out["task_score"] == pytest.approx(score)
    assert out["task_score_partial"] is partial


def _rutie_examples():
    golds = {1: "A", 2: "B", 3: "Б", 501: "C"}
    return [
        Example("rutie_image", i, n, "p", (), g, i, meta={})
        for n, (i, g) in enumerate(golds.items())
    ]


def test_rutie_em_is_strict_and_reported_as_a_local_estimate():
    examples = _rutie_examples()
    # strict: no case folding, punctuation counts; leading whitespace off (the filter)
    predictions = {1: "  A", 2: "b", 3: "Б", 501: "C."}
    result = score_task(TASKS["rutie_image"], examples, predictions)
    assert result.metric_modes["exact_match"] == "strict"
    assert result.metrics["exact_match"] == pytest.approx(2 / 4)
    assert result.local_estimate is True
    labels = [label for label, _, _ in metric_rows(result)]
    assert "Exact match (local estimate)" in labels
    summary = summarize([result])
    text = markdown([result], summary, RunRecord.from_dict({"model": "m", "run_id": "r"}))
    assert "rutie_image: task score 0.5000 = mean of Exact match" in text
    assert "a local estimate (strict EM against the gold letter)" in text


def test_model_index_and_chart_carry_the_leaderboard_task_score():
    from mera_multi_hf.reporting.charts import panels
    from mera_multi_hf.reporting.reports import model_index

    examples = _rutie_examples()
    result = score_task(TASKS["rutie_image"], examples, {1: "A", 2: "B", 3: "x", 501: "y"})
    block = model_index([result], "m", {"rutie_image": True})
    assert "type: task_score" in block and "value: 0.5" in block
    (panel,) = panels([result])
    assert panel["series"]["task score"] == [0.5]
    assert "leaderboard metrics" in panel["title"]
