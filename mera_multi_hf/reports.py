"""The reports of a run or a scoring: results.json, results.md, model-index.yaml, and
writing a run's outputs as one consistent set.

Scores come from :mod:`mera_multi_hf.scoring`; this module only renders and writes.
Every file names the run it belongs to (``run_id``); results.json is written last and
lists the sha256 of every other file of its run, so a reader can tell a stale file.
"""
from __future__ import annotations

import json
from pathlib import Path

from .atomic import sha256_bytes
from .tasks import TASKS

METRIC_NAMES = {
    "exact_match": "Exact match",
    "group_exact_match": "Group exact match",
    "judge_score": "Judge score",
    "group_judge_score": "Group judge score",
    "intent_exact_match": "Intent exact match",
    "slot_f1": "Slot F1",
    "exact_match_extracted": "Exact match after answer extraction (not official)",
}
RESULTS = "results.json"


def _fmt(value) -> str:
    return "—" if value is None else f"{value:.4f}"


def _human(result: dict, metric: str) -> str:
    return _fmt(result.get("human_baseline", {}).get(metric))


def metric_rows(result: dict) -> list[tuple[str, str, str]]:
    """(metric label, score, human baseline) of one task, official metrics first; what
    results.md and the CLI table show."""
    if not result.get("scorable"):
        return [("—", "not scorable: gold answers hidden", "")]
    rows = [(METRIC_NAMES.get(m, m), _fmt(v), _human(result, m))
            for m, v in result["metrics"].items()]
    rows += [(METRIC_NAMES.get(m, m) + " (judge)", _fmt(v), "")
             for m, v in result.get("judge", {}).items()]
    rows += [(METRIC_NAMES.get(m, m), "not computed (no judge given)", "")
             for m in result.get("judge_not_computed", [])]
    rows += [(METRIC_NAMES.get(m, m), _fmt(v), "") for m, v in result.get("unofficial", {}).items()]
    return rows


def _totals(summary: dict) -> list[str]:
    lines = ["| total | score | over |", "|---|---|---|"]
    for modality, agg in summary["modality"].items():
        lines.append(f"| {modality} | {_fmt(agg['score'])} | {agg['n_tasks']} tasks |")
    overall, official = summary["overall"], summary["official_total"]
    lines.append(f"| all scored tasks | {_fmt(overall['score'])} | {overall['n_tasks']} tasks |")
    lines.append(f"| private tasks (the leaderboard's set) | {_fmt(official['score'])} | "
                 f"{official['n_tasks']} of {official['of']} private tasks |")
    return lines + ["", f"Task score: {summary['task_score_definition']}."]


def _breakdown_tables(result: dict) -> list[str]:
    lines = []
    names = list(result.get("metrics", {})) + list(result.get("judge", {}))
    for name, rows in result.get("breakdown", {}).items():
        lines += ["", f"## {result['task']} by {name}", "",
                  "| " + " | ".join([name, "n"] + [METRIC_NAMES.get(m, m) for m in names]) + " |",
                  "|" + "---|" * (len(names) + 2)]
        for key, agg in rows.items():
            lines.append("| " + " | ".join([key, str(agg["n_examples"])]
                                           + [_fmt(agg.get(m)) for m in names]) + " |")
    return lines


def markdown(task_results: list[dict], summary: dict, run_info: dict,
             chart: str | None = None) -> str:
    """results.md; ``chart``: the file name of the run's bar chart, linked under the title."""
    lines = [f"# MERA Multi results: {run_info.get('model', 'predictions')}", "",
             f"Run `{run_info.get('run_id')}`; the settings are in results.json.", ""]
    if chart:
        lines += [f"![Scores by task and breakdown, human baseline dashed]({chart})", ""]
    lines += ["| task | split | n | metric | score | human |", "|---|---|---|---|---|---|"]
    for r in task_results:
        for label, score, human in metric_rows(r):
            lines.append(f"| {r['task']} | {r['split']} | {r['n_examples']} | {label} | "
                         f"{score} | {human} |")
    lines += [""] + _totals(summary)
    for r in task_results:
        lines += _breakdown_tables(r)
    return "\n".join(lines) + "\n"


def model_index(task_results: list[dict], model_name: str, official: dict[str, bool]) -> str | None:
    """The `model-index` block of a Hub model card, for the tasks scored on the whole
    official test split only (``official``: task -> whether it was); None when none was."""
    from huggingface_hub import EvalResult, ModelCardData

    results = []
    for r in task_results:
        if not r.get("scorable") or not official.get(r["task"]):
            continue
        task = TASKS[r["task"]]
        for name, value in r["metrics"].items():
            results.append(EvalResult(
                task_type=task.hf_task_categories[0], task_name=f"MERA Multi {task.class_name}",
                dataset_type=task.hub_id, dataset_name=task.hub_id.split("/")[-1],
                dataset_split=r["split"], metric_type=name, metric_name=METRIC_NAMES.get(name, name),
                metric_value=round(value, 4), source_name="mera-multi-hf",
                source_url="https://mera.a-ai.ru/"))
    if not results:
        return None
    return ModelCardData(model_name=model_name, eval_results=results).to_yaml() + "\n"


def results_doc(task_results: list[dict], summary: dict, run_info: dict) -> dict:
    return {"run": run_info, "summary": summary,
            "tasks": {r["task"]: {k: v for k, v in r.items() if k != "per_example"}
                      for r in task_results}}


def write_outputs(folder, files: dict[str, bytes | str], doc: dict) -> dict[str, Path]:
    """Write a run's files as one set into ``folder`` (a claimed
    :class:`~mera_multi_hf.outputs.OutputFolder`): results.json, with every other file's
    sha256, comes last, and no results.json is ever beside a half-replaced set."""
    doc["run"]["files"] = {name: sha256_bytes(data) for name, data in files.items()}
    text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    return folder.write_set({**files, RESULTS: text}, index=RESULTS)


def report_files(task_results, summary, run_info, official) -> dict[str, str | bytes]:
    """results.md, the bar chart results.png (when a task could be scored) and (when there
    is one) model-index.yaml."""
    from .charts import CHART_NAME, chart_png

    png = chart_png(task_results, title=f"MERA Multi: {run_info.get('model', 'predictions')}")
    files = {"results.md": markdown(task_results, summary, run_info,
                                    chart=CHART_NAME if png else None)}
    if png:
        files[CHART_NAME] = png
    block = model_index(task_results, str(run_info.get("model", "model")), official)
    if block:
        files["model-index.yaml"] = block
    return files
