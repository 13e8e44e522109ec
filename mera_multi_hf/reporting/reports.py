"""The reports of a run or a scoring: results.json, results.md, model-index.yaml, and
writing a run's outputs as one consistent set.

Scores come from :mod:`mera_multi_hf.scoring.score`; this module only renders and writes.
Every file names the run it belongs to (``run_id``); results.json is written last and
lists the sha256 of every other file of its run, so a reader can tell a stale file.
"""

from __future__ import annotations

import json
from pathlib import Path

from mera_multi_hf.core.hashing import sha256_bytes
from mera_multi_hf.core.masking import mask_secrets
from mera_multi_hf.reporting.table_text import fmt_interval
from mera_multi_hf.reporting.table_text import fmt_score as _fmt
from mera_multi_hf.reporting.table_text import md_table as _md_table
from mera_multi_hf.scoring.records import Results, RunRecord, Summary, TaskResult
from mera_multi_hf.scoring.registry import display_name
from mera_multi_hf.tasks.table import TASKS

RESULTS = "results.json"


INTERVAL_NOTE = (
    "± is half the width of the 95% bootstrap interval, resampled by the "
    "task's cluster (its group, its dialogue, or the example); a score of a single "
    "cluster (a breakdown row of one group, say) has no interval and says so. "
    "results.json has the bounds, the standard errors, the seed and the number of "
    "resamples."
)


def count(n: int, noun: str) -> str:
    """``1 task``, ``2 tasks``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _human(result: TaskResult, metric: str) -> str:
    return _fmt(result.human_baseline.get(metric))


def _label(result: TaskResult, metric: str) -> str:
    """A metric's name, marked "supplementary" when the leaderboard does not rank the
    task by it, and "local estimate" where the site computes the official number."""
    label = display_name(metric)
    if metric not in result.leaderboard_metrics:
        label += " (supplementary)"
    elif result.local_estimate:
        label += " (local estimate)"
    return label


def metric_rows(result: TaskResult) -> list[tuple[str, str, str]]:
    """(metric label, score, human baseline) of one task, official metrics first; what
    results.md and the CLI table show."""
    if not result.scorable:
        return [("—", "not scorable: gold answers hidden", "")]
    unc = result.uncertainty
    rows = [
        (_label(result, m), fmt_interval(v, unc.get(m)), _human(result, m))
        for m, v in result.metrics.items()
    ]
    rows += [(_label(result, m), fmt_interval(v, unc.get(m)), "") for m, v in result.judge.items()]
    rows += [
        (display_name(m), fmt_interval(v, unc.get(m)), "") for m, v in result.unofficial.items()
    ]
    return rows


JUDGE_LABEL = (
    "Judge scores are given by the judge model (a classifier that reads the "
    "question, the gold and the answer); the task score, what the leaderboard "
    "ranks by, is the mean of the exact-match and judge metrics where both are "
    "the task's leaderboard metrics"
)


def _judge_notes(task_results: list[TaskResult]) -> list[str]:
    """What each judge said of itself (its describe()'s note: the tiny judge's random
    weights), once per judge."""
    said = {}
    for r in task_results:
        judge = r.metric_modes.get("judge") if r.judge else None
        if isinstance(judge, dict) and judge.get("note"):
            said.setdefault(judge.get("model"), judge["note"])
    return [f"The judge {model}: {note}." for model, note in said.items()]


def footnotes(task_results: list[TaskResult]) -> list[str]:
    """Said once under the tables: what the judge scores are where judge rows are shown
    (and what the judge says of itself), and which judge metrics a judge would add where
    none was given."""
    notes = []
    if any(r.judge for r in task_results):
        notes.append(JUDGE_LABEL + ".")
        notes += _judge_notes(task_results)
    missing = sorted({m for r in task_results if r.scorable for m in r.judge_not_computed})
    if missing:
        notes.append(
            f"Judge metrics ({', '.join(display_name(m) for m in missing)}) "
            "need a judge: pass --judge-url (a served judge) or --judge (a model)."
        )
    return notes


# The tables results.md and results.html share, each a head and rows of cells, made here
# once from the scored records (tests/test_results_page.py compares them cell by cell).
SUMMARY_HEAD = ("task", "split", "n", "metric", "score", "human")
TOTALS_HEAD = ("total", "score", "over")


def summary_rows(task_results: list[TaskResult]) -> list[tuple[str, ...]]:
    """One row per metric of each task: task, split, n, metric label, score ± interval,
    human baseline."""
    return [
        (r.task, r.split, str(r.n_examples), *row) for r in task_results for row in metric_rows(r)
    ]


def totals_rows(summary: Summary, leaderboard: bool = True) -> list[tuple[str, str, str]]:
    """The modality scores and the totals; ``leaderboard``: a run on official test splits,
    the only kind with a leaderboard-like total."""
    rows = [
        (
            modality,
            fmt_interval(agg["score"], agg.get("uncertainty")),
            count(agg["n_tasks"], "task"),
        )
        for modality, agg in summary.modality.items()
    ]
    overall, official = summary.overall, summary.official_total
    rows.append(
        (
            "all scored tasks",
            fmt_interval(overall["score"], overall.get("uncertainty")),
            count(overall["n_tasks"], "task"),
        )
    )
    if leaderboard:
        rows.append(
            (
                "private tasks (the leaderboard's set)",
                fmt_interval(official["score"], official.get("uncertainty")),
                f"{official['n_tasks']} of {count(official['of'], 'private task')}",
            )
        )
    return rows


def breakdown_tables(result: TaskResult) -> list[tuple[str, tuple, list[tuple]]]:
    """(breakdown name, head, rows) of each breakdown of one task: key, n, each metric."""
    names = list(result.metrics) + list(result.judge)
    tables = []
    for name, rows in result.breakdown.items():
        head = (name, "n", *(display_name(m) for m in names))
        tables.append(
            (
                name,
                head,
                [
                    (
                        key,
                        str(agg["n_examples"]),
                        *(
                            fmt_interval(agg.get(m), agg.get("uncertainty", {}).get(m))
                            for m in names
                        ),
                    )
                    for key, agg in rows.items()
                ],
            )
        )
    return tables


def _totals(summary: Summary, leaderboard: bool = True) -> list[str]:
    return _md_table(TOTALS_HEAD, totals_rows(summary, leaderboard)) + [
        "",
        f"Task score: {summary.task_score_definition}.",
    ]


def task_score_lines(task_results: list[TaskResult]) -> list[str]:
    """One line per scored task: its task score and which leaderboard metrics it covers."""
    lines = []
    for r in (r for r in task_results if r.scorable):
        used = ", ".join(display_name(m) for m in r.task_score_metrics)
        line = f"- {r.task}: task score {_fmt(r.task_score)} = mean of {used}"
        missing = [display_name(m) for m in r.leaderboard_metrics if m not in r.task_score_metrics]
        if missing:
            line += (
                f"; covers only part of the leaderboard metrics (without "
                f"{', '.join(missing)}: see the judge note below)"
            )
        if r.local_estimate:
            line += (
                "; a local estimate (strict EM against the gold letter): the official "
                "score is computed by the MERA site"
            )
        lines.append(line)
    return ["", "## Task scores", ""] + lines if lines else []


def _breakdown_tables(result: TaskResult) -> list[str]:
    lines = []
    for name, head, rows in breakdown_tables(result):
        lines += ["", f"## {result.task} by {name}", "", *_md_table(head, rows)]
    return lines


def answered_by(task_results: list[TaskResult], run: RunRecord) -> str:
    """The model(s) that answered, as titles name them: each task's, in order (a run of
    an audio task alone is the audio model's), else the run's."""
    named = list(dict.fromkeys(r.model for r in task_results if r.model))
    return ", ".join(named) or run.model or "predictions"


def markdown(
    task_results: list[TaskResult],
    summary: Summary,
    run: RunRecord,
    chart: str | None = None,
    page: str | None = None,
) -> str:
    """results.md; ``chart``: the file name of the run's bar chart, linked under the title;
    ``page``: the file name of the page of every example (results.html)."""
    details = run.details
    lines = [
        f"# MERA Multi results: {answered_by(task_results, run)}",
        "",
        f"Run `{run.run_id}`; the settings are in results.json.",
        "",
    ]
    if chart:
        lines += [f"![Scores by task and breakdown, human baseline dashed]({chart})", ""]
    cut = {k: n for k, n in (details.get("truncated_prompts") or {}).items() if n}
    if cut:
        lines += [
            "Prompts longer than the model's context, cut from the left as the official "
            "harness does: " + ", ".join(f"{k} {n}" for k, n in cut.items()) + ".",
            "",
        ]
    if page:
        lines += [
            f"Every example with its media, prompt, answer and scores: [{page}]({page}) "
            "(filters by task, category, domain and right/wrong).",
            "",
        ]
    lines += _md_table(SUMMARY_HEAD, summary_rows(task_results))
    lines += task_score_lines(task_results)
    lines += ["", INTERVAL_NOTE, ""]
    lines += _totals(summary, any((details.get("official_test_split") or {}).values()))
    lines += [""] + footnotes(task_results) if footnotes(task_results) else []
    for r in task_results:
        lines += _breakdown_tables(r)
    from mera_multi_hf.scoring.diagnostics import markdown_section

    lines += markdown_section(task_results)
    from mera_multi_hf.reporting.prompt_report import markdown_section as prompt_section

    lines += prompt_section(task_results)
    return "\n".join(lines) + "\n"


def model_index(
    task_results: list[TaskResult], model_name: str, official: dict[str, bool]
) -> str | None:
    """The `model-index` block of a Hub model card, for the tasks that ``model_name``
    answered and that were scored on the whole official test split only (``official``:
    task -> whether it was); None when none was."""
    shown = [
        r
        for r in task_results
        if r.scorable and official.get(r.task) and r.model in (None, model_name)
    ]
    if not shown:  # (huggingface_hub's card classes, imported, cost a tenth of a second)
        return None
    from huggingface_hub import EvalResult, ModelCardData

    results = []
    for r in shown:
        task = TASKS[r.task]
        scores = dict(r.metrics, task_score=r.task_score)  # leaderboard metrics' mean
        for name, value in scores.items():
            results.append(
                EvalResult(
                    task_type=task.hf_task_categories[0],
                    task_name=f"MERA Multi {task.class_name}",
                    dataset_type=task.hub_id,
                    dataset_name=task.hub_id.split("/")[-1],
                    dataset_split=r.split,
                    metric_type=name,
                    metric_name=display_name(name),
                    metric_value=round(value, 4),
                    source_name="mera-multi-hf",
                    source_url="https://mera.a-ai.ru/",
                )
            )
            results += _stderr_entries(results[-1], r.uncertainty.get(name))
    if not results:
        return None
    return ModelCardData(model_name=model_name, eval_results=results).to_yaml() + "\n"


def _stderr_entries(entry, uncertainty: dict | None) -> list:
    """The model-index schema has no field for an error: the standard error goes in as
    its own metric, ``<metric>_stderr`` (lm-evaluation-harness's naming)."""
    from dataclasses import replace

    if not uncertainty or uncertainty.get("stderr") is None:
        return []
    return [
        replace(
            entry,
            metric_type=f"{entry.metric_type}_stderr",
            metric_name=f"{entry.metric_name} standard error (clustered by "
            f"{uncertainty['cluster']})",
            metric_value=round(uncertainty["stderr"], 4),
        )
    ]


def write_outputs(
    folder, files: dict[str, bytes | str], results: Results, stamp: str | None = None
) -> dict[str, Path]:
    """Write a run's files as one set into ``folder`` (a claimed
    :class:`~mera_multi_hf.core.outputs.OutputFolder`): results.json, serialised here from
    the records with every other file's sha256, comes last, and no results.json is ever
    beside a half-replaced set. Every text file is masked here, as it is serialised
    (bytes: the sample logs, the ZIP and the chart, are data). ``stamp``: the fingerprint
    of what they are made from, recorded in the folder's marker with every file's sha256
    (what a rerun compares: :mod:`mera_multi_hf.pipeline.fingerprint`)."""
    from mera_multi_hf.core.outputs import as_written

    files = {name: as_written(data) for name, data in files.items()}  # masked once, here
    doc = results.to_dict()
    doc["run"]["files"] = {name: sha256_bytes(data) for name, data in files.items()}
    text = as_written(json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
    private = (doc["run"].get("gold_private") or {}).get("files", [])  # kept 0600
    made = {"fingerprint": stamp, "files": {**doc["run"]["files"], RESULTS: sha256_bytes(text)}}
    info = {**folder.info(), "outputs": {**made, "private": private}}
    return folder.write_set({**files, RESULTS: text}, index=RESULTS, private=private, info=info)


def report_files(results: Results) -> dict[str, str | bytes]:
    """results.md, the bar chart results.png (when a task could be scored) and (when there
    is one) model-index.yaml."""
    from mera_multi_hf.reporting.charts import CHART_NAME, chart_png

    task_results, run = list(results.tasks.values()), results.run
    # the title is drawn as pixels, where no text masking reaches afterwards
    png = chart_png(
        task_results, title=mask_secrets(f"MERA Multi: {answered_by(task_results, run)}")
    )
    files = {
        "results.md": markdown(
            task_results,
            results.summary,
            run,
            chart=CHART_NAME if png else None,
            page="results.html",
        )
    }
    if png:
        files[CHART_NAME] = png
    official = run.details.get("official_test_split") or {}
    block = model_index(task_results, str(run.model or "model"), official)
    if block:
        files["model-index.yaml"] = block
    return files
