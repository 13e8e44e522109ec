"""Scores from the task declarations: per-example metrics, group metrics, breakdowns,
and the summaries over tasks. Writing the reports is :mod:`mera_multi_hf.reporting.reports`.

The formulas live in the metric_* modules; which metrics a task has, its EM
mode, its filters and its breakdowns come from its :class:`~mera_multi_hf.tasks.spec.TaskSpec`.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean
from typing import TYPE_CHECKING

import numpy as np

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.scoring.records import Summary, TaskResult, example_results
from mera_multi_hf.scoring.registry import JUDGED, UNOFFICIAL, aggregate, per_example_functions
from mera_multi_hf.tasks.spec import TaskSpec
from mera_multi_hf.tasks.table import TASKS

if TYPE_CHECKING:  # scoring reads an example's id, gold, group and prompt
    from mera_multi_hf.data.examples import Example


def per_example_scores(
    task: TaskSpec, golds: list, preds: list[str], em_mode: str | None = None
) -> dict[str, np.ndarray]:
    """Metric name -> per-example scores of the official metrics (group metrics and the
    judge aside) and the unofficial extracted EM, for examples whose gold is known;
    ``preds``: the answers after the task's filters (ExampleResult.filtered)."""
    em_mode = em_mode or task.em_mode
    scores: dict[str, np.ndarray] = {}
    for make in per_example_functions(task.metrics):
        scores.update(make(golds, preds, em_mode, task))
    return scores


def _check_complete(task: TaskSpec, examples: list[Example], predictions: dict, split: str):
    missing = [e.id for e in examples if e.id not in predictions]
    if missing:
        shown = ", ".join(map(str, missing[:20]))
        raise MeraError(
            f"{task.key}/{split}: no prediction for {len(missing)} of "
            f"{len(examples)} examples (ids {shown}{', ...' if len(missing) > 20 else ''})"
        )


def score_task(
    task: TaskSpec,
    examples: list[Example],
    predictions: dict[int, str],
    *,
    em_mode: str | None = None,
    judge=None,
    split: str = "test",
    model: str | None = None,
    private: bool | None = None,
) -> TaskResult:
    """The metrics of one task for predictions keyed by id.

    ``judge``: a ready judge (:func:`mera_multi_hf.judge.choose.get_judge`) or None. Judge metrics
    are computed only with one; the task score averages them with EM where the leaderboard
    ranks the task by both (``task_score_metrics``). Every answer is filtered once here
    (``TaskResult.answers``): the scores, the logs and the submission read that value.
    ``private``: whether the split's answers are private, as its loading decided (None:
    the task's default).
    """
    em_mode = em_mode or task.em_mode
    _check_complete(task, examples, predictions, split)
    answers = example_results(task, examples, predictions)
    groups = [e.group for e in examples]
    result = _unscored_result(task, examples, answers, em_mode=em_mode, split=split, model=model)
    result.private = (split == "test" and not task.public) if private is None else private
    if not examples or any(e.gold is None for e in examples):
        result.note = (
            "gold answers are hidden in this split: submit the ZIP to the MERA site for scores"
        )
        return result
    golds = [e.gold for e in examples]
    preds = [a.filtered for a in answers]
    scores = per_example_scores(task, golds, preds, em_mode)
    if judge is not None and task.judge_metrics:
        _add_judge_scores(judge, examples, golds, preds, scores, result)
    _aggregate_into(task, scores, groups, result)
    result.breakdown = _breakdowns(task, examples, scores, groups)
    for position, answer in enumerate(answers):
        answer.scores = {m: float(s[position]) for m, s in scores.items()}
    _add_uncertainty(task, examples, scores, result, preds, em_mode)
    return result


def _unscored_result(task: TaskSpec, examples, answers, *, em_mode, split, model) -> TaskResult:
    """The task's result before any score: what it is, how it is scored, its answers."""
    groups = [e.group for e in examples]
    return TaskResult(
        task=task.key,
        class_name=task.class_name,
        modality=task.modality,
        public=task.public,
        split=split,
        n_examples=len(examples),
        official_metrics=list(task.metrics),
        judge_metrics=list(task.judge_metrics),
        metric_modes={"exact_match": em_mode, "filters": list(task.score_filters)},
        human_baseline=dict(task.human_baseline),
        answers=answers,
        model=model,
        n_groups=len(set(groups)) if task.has_groups else None,
    )


def _add_judge_scores(judge, examples, golds, preds, scores: dict, result: TaskResult) -> None:
    """The judge's per-example scores (under JUDGED) and its description in the modes."""
    from mera_multi_hf.judge.judges import judge_scores

    scores[JUDGED] = np.asarray(  # the judge sees what the metrics see
        judge_scores(judge, preds, golds, [e.prompt for e in examples]), dtype=float
    )
    result.metric_modes["judge"] = judge.describe()


def _aggregate_into(task: TaskSpec, scores: dict, groups: list, result: TaskResult) -> None:
    """The official, judge and unofficial metrics and the task score, set on ``result``."""
    result.metrics = aggregate(scores, groups, task.metrics)
    result.judge = aggregate(scores, groups, task.judge_metrics)
    result.judge_not_computed = [m for m in task.judge_metrics if m not in result.judge]
    result.unofficial = aggregate(scores, groups, UNOFFICIAL)
    for name, value in task_score(task, {"metrics": result.metrics, "judge": result.judge}).items():
        setattr(result, name, value)
    result.scorable = True


def task_score(task: TaskSpec, result: dict) -> dict:
    """The leaderboard's task score: the mean of the task's leaderboard metrics
    (``TaskSpec.leaderboard``) that were computed; ``task_score_partial`` when some were
    not (no judge given). The other metrics are supplementary."""
    computed = {**result["metrics"], **result.get("judge", {})}
    used = [m for m in task.leaderboard if m in computed] or list(result["metrics"])
    return {
        "leaderboard_metrics": list(task.leaderboard),
        "task_score_metrics": used,
        "task_score": fmean(computed[m] for m in used),
        "task_score_partial": any(m not in computed for m in task.leaderboard),
        "local_estimate": task.local_estimate,
    }


def _add_uncertainty(task, examples, scores, result: TaskResult, preds, em_mode) -> None:
    """The per-example table (kept in results.json: compare reads it), every score's
    interval, and the answer diagnostics."""
    from mera_multi_hf.scoring.diagnostics import diagnostics
    from mera_multi_hf.scoring.uncertainty import add_task_uncertainty, example_table

    result.examples = example_table(task, examples, scores)
    add_task_uncertainty(result)  # each metric's, the task score's, each breakdown row's
    result.diagnostics = diagnostics(task, examples, preds, em_mode)
    from mera_multi_hf.scoring.prompt_table import prompt_table

    result.prompts = prompt_table(task, examples, result)


def _breakdowns(task: TaskSpec, examples: list[Example], scores, groups) -> dict:
    out = {}
    names = task.metrics + task.judge_metrics
    for name, _ in task.breakdowns:
        rows = defaultdict(list)
        for position, example in enumerate(examples):
            if name in example.breakdown:
                rows[example.breakdown[name]].append(position)
        table = {}
        for key in sorted(rows):
            idx = np.asarray(rows[key])
            sub = {m: s[idx] for m, s in scores.items()}
            table[key] = {**aggregate(sub, [groups[i] for i in idx], names), "n_examples": len(idx)}
        if table:
            out[name] = table
    return out


def summarize(task_results: list[TaskResult]) -> Summary:
    """Task scores (the mean of each task's leaderboard metrics) averaged per modality, over
    all scored tasks, and over the private tasks (the leaderboard's set)."""
    scored = [r for r in task_results if r.scorable]
    by_modality = defaultdict(list)
    for r in scored:
        by_modality[r.modality].append(r.task_score)
    private = [r.task_score for r in scored if not r.public]
    n_private = sum(not t.public for t in TASKS.values())
    summary = Summary(
        task_score_definition="the mean of the task's leaderboard metrics (the MERA "
        "README's task table) that were computed; the other metrics "
        "are supplementary",
        tasks={r.task: r.task_score for r in scored},
        modality={
            m: {"score": fmean(v), "n_tasks": len(v)} for m, v in sorted(by_modality.items())
        },
        overall={
            "score": fmean(r.task_score for r in scored) if scored else None,
            "n_tasks": len(scored),
        },
        official_total={
            "score": fmean(private) if private else None,
            "n_tasks": len(private),
            "of": n_private,
            "complete": len(private) == n_private,
        },
        not_scorable=[r.task for r in task_results if not r.scorable],
        # tasks whose score misses a leaderboard metric (the judge's JS was not computed)
        partial_task_scores=[r.task for r in scored if r.task_score_partial],
    )
    from mera_multi_hf.scoring.uncertainty import add_summary_uncertainty

    add_summary_uncertainty(summary, scored)
    return summary
