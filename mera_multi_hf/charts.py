"""The picture of a run: one bar chart PNG written next to results.md (results.png).

One panel per task that has a breakdown (ruHHH by category, the science tasks by
domain), its official metrics as bars with an "all" bar first, and one panel for the
other tasks (their task score per task). The human baseline of each metric (the task
result's ``human_baseline``) is a dashed red line across its bars. matplotlib is
imported here only, and drawn with the Agg canvas (no display, no pyplot state).
"""
from __future__ import annotations

import io

from .reports import METRIC_NAMES

HUMAN_COLOR = "#d62728"  # the human baseline, and nothing else, is drawn in this red
BAR_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f")
CHART_NAME = "results.png"


def _breakdown_panel(result: dict) -> dict | None:
    """The first breakdown of a task: labels, one series per official metric, baselines."""
    breakdown = result.get("breakdown") or {}
    if not breakdown:
        return None
    name, rows = next(iter(breakdown.items()))
    metrics = list(result["metrics"])
    labels = ["all"] + list(rows)
    series = {m: [result["metrics"][m]] + [rows[k].get(m) for k in rows] for m in metrics}
    human = {m: result.get("human_baseline", {}).get(m) for m in metrics}
    return {"title": f"{result['task']} by {name} ({result['split']}, n={result['n_examples']})",
            "labels": labels, "series": series, "human": human}


def _task_panel(results: list[dict]) -> dict | None:
    """Tasks without a breakdown: the task score of each (mean of its leaderboard metrics
    that were computed)."""
    if not results:
        return None
    human = []
    for r in results:
        base = [r.get("human_baseline", {}).get(m) for m in r.get("task_score_metrics",
                                                                  r["metrics"])]
        human.append(sum(base) / len(base) if base and None not in base else None)
    return {"title": "task score per task (mean of the leaderboard metrics computed)",
            "labels": [r["task"] for r in results],
            "series": {"task score": [r["task_score"] for r in results]},
            "human": {"task score": human}}


def panels(task_results: list[dict]) -> list[dict]:
    """What the chart shows, as data (one dict per panel)."""
    scored = [r for r in task_results if r.get("scorable") and r.get("metrics")]
    out, plain = [], []
    for r in scored:
        panel = _breakdown_panel(r)
        if panel:
            out.append(panel)
        else:
            plain.append(r)
    task_panel = _task_panel(plain)
    return out + ([task_panel] if task_panel else [])


def _draw(ax, panel: dict) -> None:
    labels, series = panel["labels"], panel["series"]
    width = 0.8 / len(series)
    for j, (metric, values) in enumerate(series.items()):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(labels))]
        heights = [0.0 if v is None else v for v in values]
        ax.bar(xs, heights, width * 0.95, color=BAR_COLORS[j % len(BAR_COLORS)],
               label=METRIC_NAMES.get(metric, metric))
        human = panel["human"].get(metric)
        for i, x in enumerate(xs):
            level = human[i] if isinstance(human, list) else human
            if level is not None:
                ax.hlines(level, x - width / 2, x + width / 2, colors=HUMAN_COLOR,
                          linestyles="dashed", linewidth=1.6)
    if any(v is not None for h in panel["human"].values()
           for v in (h if isinstance(h, list) else [h])):
        ax.plot([], [], color=HUMAN_COLOR, linestyle="dashed", label="human baseline")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30 if len(labels) > 4 else 0, ha="right" if len(labels) > 4 else "center")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score")
    ax.set_title(panel["title"], fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def chart_png(task_results: list[dict], title: str = "") -> bytes | None:
    """The chart as PNG bytes; None when no task could be scored (hidden answers)."""
    shown = panels(task_results)
    if not shown:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    widest = max(len(p["labels"]) * len(p["series"]) for p in shown)
    height = 0.6 + 3.0 * len(shown)
    fig = Figure(figsize=(max(6.0, 2.5 + 0.45 * widest), height), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(shown), 1, squeeze=False)[:, 0]
    for ax, panel in zip(axes, shown):
        _draw(ax, panel)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / height))  # room for the title
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()
