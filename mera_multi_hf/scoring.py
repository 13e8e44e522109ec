"""Score a task's predictions and write the reports: results.json, results.md, model-index.

The formulas live in :mod:`mera_multi_hf.metric_fns`; this module decides which official
metrics a task gets, the breakdowns (category, subcategory, domain), the task score and
the totals over tasks (per modality, overall, official = private tasks only).
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from statistics import fmean

import numpy as np

from . import metric_fns
from .errors import MeraError
from .tasks import TASKS, TaskSpec

METRIC_NAMES = {
    "exact_match": "Exact match",
    "group_exact_match": "Group exact match",
    "judge_score": "Judge score",
    "group_judge_score": "Group judge score",
    "intent_exact_match": "Intent exact match",
    "slot_f1": "Slot F1",
    "exact_match_extracted": "Exact match after answer extraction (not official)",
}
UNOFFICIAL = ("exact_match_extracted",)


def _golds(task: TaskSpec, outputs: str):
    """Free-answer tasks may store a JSON list of acceptable answers."""
    if task.answer_kind == "free" and outputs.startswith("["):
        try:
            answers = json.loads(outputs)
        except json.JSONDecodeError:
            return outputs
        if isinstance(answers, list) and all(isinstance(a, str) for a in answers):
            return answers
    return outputs


def _groups_of(task: TaskSpec, metas: list[dict]) -> dict[str, list]:
    """Breakdown name -> the key of each example (ruHHH categories, science domains)."""
    out = {}
    if metas and isinstance(metas[0].get("categories"), dict):
        cats = [m["categories"] for m in metas]
        out["category"] = [c.get("category") for c in cats]
        if all(c.get("subcategory") is not None for c in cats):
            out["subcategory"] = [f"{c.get('category')}/{c.get('subcategory')}" for c in cats]
    if metas and metas[0].get("domain") is not None:
        out["domain"] = [m.get("domain") for m in metas]
    return out


def _per_example_metrics(task, golds, preds, em_mode, judge_labels):
    """Metric name -> per-example scores (group metrics are aggregated from these)."""
    scores = {}
    if task.answer_kind == "json":
        intent, slots = metric_fns.slot_f1_scores(preds, golds)
        return {"intent_exact_match": intent, "slot_f1": slots}
    scores["exact_match"] = metric_fns.exact_match_scores(preds, golds, mode=em_mode)
    if judge_labels is not None:
        scores["judge_score"] = np.asarray(judge_labels, dtype=float)
    extracted = [metric_fns.extract_answer(p, task.choices or None) for p in preds]
    scores["exact_match_extracted"] = metric_fns.exact_match_scores(extracted, golds, mode=em_mode)
    return scores


def per_example_scores(task: TaskSpec, references: list[dict], predictions: dict[int, str],
                       em_mode: str | None = None) -> dict[str, np.ndarray]:
    """Metric name -> per-example scores (no judge, no aggregation), in reference order;
    empty when the gold answers are hidden. The runner logs these with every sample."""
    if not references or any(not r["outputs"] for r in references):
        return {}
    golds = [_golds(task, r["outputs"]) for r in references]
    preds = [predictions[r["id"]] for r in references]
    return _per_example_metrics(task, golds, preds, em_mode or task.em_mode, None)


def _aggregate(task, scores, group_ids) -> dict[str, float]:
    out = {name: float(np.mean(s)) if len(s) else 0.0 for name, s in scores.items()}
    if task.has_groups:
        for name, group_name in (("exact_match", "group_exact_match"),
                                 ("judge_score", "group_judge_score")):
            if name in scores:
                out[group_name] = metric_fns.group_mean(scores[name], group_ids)
    return out


def score_task(task: TaskSpec, references: list[dict], predictions: dict[int, str], *,
               em_mode: str | None = None, judge=None, judge_url: str | None = None,
               split: str = "test") -> dict:
    """The official metrics of one task (plus breakdowns) for predictions keyed by id.

    ``references``: one dict per example with ``id``, ``outputs`` (gold, "" when hidden),
    ``meta`` and ``prompt`` (the text the model saw; the judge reads it). Judge metrics
    are computed only when a judge is given; otherwise they are listed as not computed.
    """
    em_mode = em_mode or task.em_mode
    ids = [r["id"] for r in references]
    missing = [i for i in ids if i not in predictions]
    if missing:
        shown = ", ".join(map(str, missing[:20]))
        raise MeraError(f"{task.key}/{split}: no prediction for {len(missing)} of {len(ids)} "
                        f"examples (ids {shown}{', ...' if len(missing) > 20 else ''})")
    result = {"task": task.key, "class_name": task.class_name, "modality": task.modality,
              "public": task.public, "split": split, "n_examples": len(ids),
              "metric_modes": {"exact_match": em_mode}}
    metas = [r.get("meta") or {} for r in references]
    group_ids = [m.get("group_id", m.get("id")) for m in metas]
    if task.has_groups:
        result["n_groups"] = len(set(group_ids))
    if not ids or any(not r["outputs"] for r in references):
        result.update(scorable=False, metrics={},
                      note="gold answers are hidden in this split: submit the ZIP to the "
                           "MERA site for scores")
        return result
    if task.answer_kind != "json":
        metric_fns.warn_if_squad_on_letters(em_mode, task.answer_kind)
    golds = [_golds(task, r["outputs"]) for r in references]
    preds = [predictions[i] for i in ids]
    judge_labels = None
    wants_judge = any(m.startswith("judge") or m.endswith("judge_score") for m in task.metrics)
    if wants_judge and (judge or judge_url):
        from .judge import judge_example_scores
        judge_labels = judge_example_scores(
            [r.get("prompt", "") for r in references],
            [r["outputs"] for r in references], preds, judge=judge, judge_url=judge_url)
        result["metric_modes"]["judge"] = judge_url or str(judge)
    scores = _per_example_metrics(task, golds, preds, em_mode, judge_labels)
    metrics = _aggregate(task, scores, group_ids)
    result["metrics"] = {m: metrics[m] for m in task.metrics if m in metrics}
    result["unofficial"] = {m: metrics[m] for m in UNOFFICIAL if m in metrics}
    result["not_computed"] = [m for m in task.metrics if m not in metrics]
    result["task_score"] = fmean(result["metrics"].values())
    result["scorable"] = True
    result["breakdown"] = {}
    for name, keys in _groups_of(task, metas).items():
        result["breakdown"][name] = _breakdown(task, keys, scores, group_ids)
    result["per_example"] = {m: dict(zip(ids, map(float, scores[m]))) for m in scores}
    return result


def _breakdown(task, keys, scores, group_ids) -> dict:
    rows = defaultdict(list)
    for position, key in enumerate(keys):
        rows[key].append(position)
    out = {}
    for key in sorted(rows, key=str):
        idx = np.asarray(rows[key])
        sub = {name: s[idx] for name, s in scores.items() if name not in UNOFFICIAL}
        agg = _aggregate(task, sub, [group_ids[i] for i in idx])
        agg["n_examples"] = len(idx)
        out[str(key)] = agg
    return out


def summarize(task_results: list[dict]) -> dict:
    """Task scores averaged per modality, overall, and over private tasks (the official total)."""
    scored = [r for r in task_results if r.get("scorable")]
    by_modality = defaultdict(list)
    for r in scored:
        by_modality[r["modality"]].append(r["task_score"])
    private = [r["task_score"] for r in scored if not r["public"]]
    return {
        "tasks": {r["task"]: r["task_score"] for r in scored},
        "modality": {m: fmean(v) for m, v in sorted(by_modality.items())},
        "overall": fmean(r["task_score"] for r in scored) if scored else None,
        "official_total": fmean(private) if private else None,
        "official_total_note": "mean task score over private tasks only, as on the leaderboard; "
                               f"{len(private)} of {sum(not t.public for t in TASKS.values())} "
                               "private tasks scored here",
        "not_scorable": [r["task"] for r in task_results if not r.get("scorable")],
    }


def _fmt(value) -> str:
    return "—" if value is None else f"{value:.4f}"


def markdown(task_results: list[dict], summary: dict, run_info: dict) -> str:
    lines = [f"# MERA Multi results: {run_info.get('model', 'predictions')}", ""]
    lines += ["| task | split | n | metric | score |", "|---|---|---|---|---|"]
    for r in task_results:
        if not r.get("scorable"):
            lines.append(f"| {r['task']} | {r['split']} | {r['n_examples']} | — | "
                         "not scorable: gold answers hidden |")
            continue
        for name, value in {**r["metrics"], **r.get("unofficial", {})}.items():
            lines.append(f"| {r['task']} | {r['split']} | {r['n_examples']} | "
                         f"{METRIC_NAMES.get(name, name)} | {_fmt(value)} |")
        for name in r.get("not_computed", []):
            lines.append(f"| {r['task']} | {r['split']} | {r['n_examples']} | "
                         f"{METRIC_NAMES.get(name, name)} | not computed (no judge given) |")
    lines += ["", "| total | score |", "|---|---|"]
    for modality, value in summary["modality"].items():
        lines.append(f"| {modality} | {_fmt(value)} |")
    lines.append(f"| overall | {_fmt(summary['overall'])} |")
    lines.append(f"| official total (private tasks) | {_fmt(summary['official_total'])} |")
    for r in task_results:
        for name, rows in r.get("breakdown", {}).items():
            metric_names = [m for m in r["metrics"]]
            lines += ["", f"## {r['task']} by {name}", "",
                      "| " + " | ".join([name, "n"] + [METRIC_NAMES.get(m, m) for m in metric_names])
                      + " |", "|" + "---|" * (len(metric_names) + 2)]
            for key, agg in rows.items():
                lines.append("| " + " | ".join([key, str(agg["n_examples"])]
                                               + [_fmt(agg.get(m)) for m in metric_names]) + " |")
    lines += ["", "Settings: " + ", ".join(f"{k}={v}" for k, v in run_info.items()
                                          if isinstance(v, (str, int, float)) and v != "")]
    return "\n".join(lines) + "\n"


def model_index(task_results: list[dict], model_name: str) -> str:
    """The `model-index` YAML block of a Hub model card for the scored tasks."""
    import yaml

    results = []
    for r in task_results:
        if not r.get("scorable"):
            continue
        task = TASKS[r["task"]]
        results.append({
            "task": {"type": "visual-question-answering" if task.modality == "image"
                     else f"{task.modality}-text-to-text", "name": f"MERA Multi {task.class_name}"},
            "dataset": {"name": task.hub_id.split("/")[-1], "type": task.hub_id,
                        "split": r["split"]},
            "metrics": [{"type": name, "value": round(value, 4),
                         "name": METRIC_NAMES.get(name, name)}
                        for name, value in r["metrics"].items()],
            "source": {"name": "mera-multi-hf", "url": "https://mera.a-ai.ru/"},
        })
    block = {"model-index": [{"name": model_name, "results": results}]}
    return yaml.safe_dump(block, allow_unicode=True, sort_keys=False)


def write_reports(out_dir: str | Path, task_results: list[dict], run_info: dict) -> dict:
    """results.json, results.md and model-index.yaml in ``out_dir``; returns the summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(task_results)
    doc = {"run": run_info, "summary": summary,
           "tasks": {r["task"]: {k: v for k, v in r.items() if k != "per_example"}
                     for r in task_results}}
    (out / "results.json").write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n",
                                      encoding="utf-8")
    (out / "results.md").write_text(markdown(task_results, summary, run_info), encoding="utf-8")
    (out / "model-index.yaml").write_text(
        model_index(task_results, str(run_info.get("model", "model"))), encoding="utf-8")
    return summary
