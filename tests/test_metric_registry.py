"""The metric registry: every metric a task declares is in it, once, and what reads it
(scoring, the reports, the cards) gets the same facts."""

from __future__ import annotations

import numpy as np
import pytest

from mera_multi_hf.scoring.metric_groups import group_mean
from mera_multi_hf.scoring.registry import (
    CARD_TEXT,
    GROUP_OF,
    METRICS,
    UNOFFICIAL,
    aggregate,
    display_name,
    per_example_functions,
)
from mera_multi_hf.tasks.table import TASKS


def test_every_declared_metric_is_registered_with_its_kind():
    for task in TASKS.values():
        for name in task.metrics:
            assert name in METRICS and not METRICS[name].judge, (task.key, name)
        for name in task.judge_metrics:
            assert METRICS[name].judge, (task.key, name)
        for name in task.leaderboard:
            assert METRICS[name].leaderboard and METRICS[name].official, (task.key, name)
    assert UNOFFICIAL == ("exact_match_extracted",)
    assert not METRICS["exact_match_extracted"].leaderboard


def test_group_metrics_group_a_registered_per_example_metric():
    assert GROUP_OF == {"group_exact_match": "exact_match", "group_judge_score": "judge_score"}
    assert {m.aggregate.__name__ for m in METRICS.values()} == {"mean_score", "group_mean"}
    assert all((m.aggregate is group_mean) == bool(m.of) for m in METRICS.values())
    # groups 1: [1, 1] all right; 2: [1, 0] not: group mean 1/2, plain mean 3/4
    scores = {"exact_match": np.array([1.0, 1.0, 1.0, 0.0])}
    got = aggregate(scores, [1, 1, 2, 2], ["exact_match", "group_exact_match", "judge_score"])
    assert got == {"exact_match": pytest.approx(0.75), "group_exact_match": pytest.approx(0.5)}


def test_per_example_functions_make_each_metric_once():
    slots = per_example_functions(["intent_exact_match", "slot_f1"])
    assert len(slots) == 1
    made = slots[0](
        ['{"intent": "a", "slots": []}'], ['{"intent": "a", "slots": []}'], "mera", TASKS["ruslun"]
    )
    assert set(made) == {"intent_exact_match", "slot_f1"}
    assert per_example_functions(["group_exact_match", "judge_score"]) == []
    em = per_example_functions(["exact_match"])[0](
        ["A.", "B"], ["a", "Ответ: B"], "mera", TASKS["weird"]
    )
    assert em["exact_match"].tolist() == [1, 0]  # "A." -> "a" (lowercase, no punctuation)
    assert em["exact_match_extracted"].tolist() == [1, 1]  # the extra, made with EM
    assert per_example_functions(["exact_match_extracted"]) == per_example_functions(
        ["exact_match"]
    )
    with pytest.warns(UserWarning, match="mode 'squad' on a letter task"):  # scoring warns too
        per_example_functions(["exact_match"])[0](["A"], ["A"], "squad", TASKS["weird"])


def test_the_diagnostics_show_the_means_over_examples_the_registry_names():
    from mera_multi_hf.scoring.diagnostics import _task_lines
    from mera_multi_hf.scoring.records import TaskResult

    fmt = {"format": {"failures": 1, "n": 4, "rate": 0.25, "rule": "a letter"}}

    def scored(task, metrics):
        return TaskResult(
            task,
            task,
            "image",
            False,
            "test",
            4,
            list(metrics),
            [],
            {},
            {},
            True,
            metrics,
            diagnostics=fmt,
        )

    ruhhh = scored("ruhhh_image", {"exact_match": 0.5, "group_exact_match": 0.25})
    assert _task_lines(ruhhh)[2].endswith("a letter; Exact match 0.5000")
    ruslun = scored("ruslun", {"intent_exact_match": 0.5, "slot_f1": 0.125})
    assert _task_lines(ruslun)[2].endswith("; Intent exact match 0.5000; Slot F1 0.1250")


def test_the_metric_modules_and_their_task_options_come_from_the_registry():
    from mera_multi_hf.spaces.loading import METRICS as MODULES
    from mera_multi_hf.spaces.loading import task_defaults

    assert set(MODULES) == {"exact_match", "group_exact_match", "slot_f1", "judge_score"}
    assert task_defaults("exact_match", "weird") == {
        "mode": "mera",
        "answer_kind": "letter",
        "choices": ["A", "B"],
    }
    assert task_defaults("group_exact_match", "ruhhh_video") == {
        "mode": "strict",
        "answer_kind": "letter",
    }
    assert task_defaults("slot_f1", "ruslun") == {}


def test_display_names_are_read_by_the_reports_and_the_cards():
    from mera_multi_hf.data.export_card import _metric_lines
    from mera_multi_hf.reporting.reports import metric_rows
    from mera_multi_hf.scoring.records import TaskResult

    assert display_name("slot_f1") == "Slot F1" and display_name("made_up") == "made_up"
    result = TaskResult("ruslun", "ruSLUn", "audio", False, "test", 1, ["slot_f1"], [], {}, {})
    result.scorable, result.metrics = True, {"slot_f1": 0.5}
    result.leaderboard_metrics = ["slot_f1"]
    assert metric_rows(result)[0][0] == "Slot F1"
    lines = _metric_lines({"metrics": {"Judge score": "default"}}, "en")
    assert lines == [f"- `Judge score`: {CARD_TEXT['Judge score'][0]}"]


def test_compare_reads_the_direction_of_a_metric(monkeypatch):
    from dataclasses import replace

    from mera_multi_hf.reporting import compare_stats

    record = {"low": 0.1, "high": 0.3, "n_clusters": 50}
    assert compare_stats.verdict(record, "exact_match") == "A better"
    lower = replace(METRICS["exact_match"], name="errors", higher_is_better=False)
    monkeypatch.setitem(compare_stats.METRICS, "errors", lower)  # a lower-is-better metric
    assert compare_stats.verdict(record, "errors") == "B better"


def test_every_card_description_is_a_registered_metric_s():
    described = [m for m in METRICS.values() if m.card]
    assert {m.name for m in described} == {"exact_match", "group_exact_match", "judge_score"}
    assert CARD_TEXT == {m.card[0]: m.card[1:] for m in described}
    assert all(en and ru for en, ru in CARD_TEXT.values())


def test_every_mean_a_metric_reports_refuses_no_examples_alike():
    """One mean, one empty-input rule: the registry's aggregation, the metric modules' and
    the group mean all refuse an empty batch in one sentence, never a silent 0."""
    from mera_multi_hf.core.errors import MeraError
    from mera_multi_hf.scoring.metric_inputs import mean_score

    assert mean_score([1, 0, 1, 1]) == 0.75
    empty = {"exact_match": np.array([])}
    for attempt in (
        lambda: mean_score([]),
        lambda: aggregate(empty, [], ["exact_match"]),
        lambda: aggregate(empty, [], ["group_exact_match"]),
        lambda: aggregate({"unregistered": np.array([])}, [], ["unregistered"]),
    ):
        with pytest.raises(MeraError, match="no examples to score"):
            attempt()
