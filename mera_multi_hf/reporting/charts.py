"""The picture of a run: one bar chart PNG written next to results.md (results.png).

The first panel is the summary: the task score of every task of the run, under its
official name (a task whose answers are hidden is named there, "not scored"). Then one
panel per task that has a breakdown (ruHHH by category, the science tasks by domain),
its official metrics as bars with an "all" bar first.

Nothing may mislead: every bar carries its value (a zero gets a visible mark, so it
does not read as "no data") and each group its n; a bar over fewer than ``MIN_N``
examples is hatched and grey (too few to compare); an interval is drawn where the task
result carries one (``uncertainty``); the human baseline (dashed red) is drawn only over
bars that exist. matplotlib is imported here only, through its object API (Figure and the
Agg canvas: no display, no pyplot state).
"""

from __future__ import annotations

import io
import threading

from mera_multi_hf.scoring.records import TaskResult
from mera_multi_hf.scoring.registry import display_name
from mera_multi_hf.tasks.table import TASKS

HUMAN_COLOR = "#d62728"  # the human baseline, and nothing else, is drawn in this red
BAR_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f")
FEW_COLOR = "#bbbbbb"
MIN_N = 10  # fewer examples than this: a hatched grey bar
CHART_NAME = "results.png"
_DRAWING = threading.Lock()  # matplotlib's font objects are shared: one chart at a time


def official_name(task_key: str) -> str:
    task = TASKS.get(task_key)
    return task.class_name if task else task_key


def _interval(uncertainty: dict | None, metric: str):
    entry = (uncertainty or {}).get(metric)
    if isinstance(entry, dict) and entry.get("low") is not None and entry.get("high") is not None:
        return float(entry["low"]), float(entry["high"])
    return None


def _breakdown_panel(result: TaskResult) -> dict | None:
    """The first breakdown of a task: groups, one series per official metric, baselines."""
    if not result.breakdown:
        return None
    name, rows = next(iter(result.breakdown.items()))
    metrics = list(result.metrics)
    series = {m: [result.metrics[m]] + [rows[k].get(m) for k in rows] for m in metrics}
    intervals = {
        m: [_interval(result.uncertainty, m)]
        + [_interval(rows[k].get("uncertainty"), m) for k in rows]
        for m in metrics
    }
    human = {m: result.human_baseline.get(m) for m in metrics}
    return {
        "title": f"{official_name(result.task)} by {name} ({result.split})",
        "labels": ["all"] + list(rows),
        "n": [result.n_examples] + [rows[k].get("n_examples") for k in rows],
        "series": series,
        "intervals": intervals,
        "human": human,
    }


def _task_human(result: TaskResult):
    used = result.task_score_metrics or result.metrics
    base = [result.human_baseline.get(m) for m in used]
    return sum(base) / len(base) if base and None not in base else None


def _summary_panel(results: list[TaskResult]) -> dict | None:
    """Every task of the run: its task score (mean of its leaderboard metrics computed)."""
    if not results:
        return None
    scored = [bool(r.scorable and r.metrics) for r in results]
    return {
        "title": "task score per task (mean of the leaderboard metrics computed)",
        "labels": [official_name(r.task) for r in results],
        "n": [r.n_examples for r in results],
        "series": {"task score": [r.task_score if ok else None for r, ok in zip(results, scored)]},
        "intervals": {
            "task score": [_interval({"s": r.task_score_uncertainty}, "s") for r in results]
        },
        "human": {"task score": [_task_human(r) if ok else None for r, ok in zip(results, scored)]},
        "missing": "not scored",
    }


def panels(task_results: list[TaskResult]) -> list[dict]:
    """What the chart shows, as data (one dict per panel): the summary first, then the
    breakdowns; nothing when no task could be scored."""
    scored = [r for r in task_results if r.scorable and r.metrics]
    if not scored:
        return []
    broken = [p for p in map(_breakdown_panel, scored) if p]
    return [_summary_panel(task_results)] + broken


def _bars(ax, panel: dict, j: int, metric: str, values: list, width: float) -> None:
    """One metric's bars: value labels, a mark for zeros, intervals, grey when few."""
    xs = [i - 0.4 + width * (j + 0.5) for i in range(len(values))]
    _draw_bars(ax, panel, j, metric, xs, values, width)
    intervals = panel["intervals"].get(metric) or []
    _draw_intervals(ax, xs, values, intervals)
    _draw_value_labels(ax, panel, metric, xs, values, intervals, width)
    _draw_human_baselines(ax, panel, metric, xs, values, width)


def _draw_bars(ax, panel: dict, j: int, metric: str, xs: list, values: list, width: float):
    """The bars in the metric's colour, faded and hatched where too few; none where missing."""
    few = [n is not None and n < MIN_N for n in panel["n"]]
    color = BAR_COLORS[j % len(BAR_COLORS)]
    heights = [0.0 if v is None else v for v in values]
    bars = ax.bar(
        xs, heights, width * 0.95, color=color, edgecolor="white", label=display_name(metric)
    )
    for bar, f, v in zip(bars.patches, few, values):
        if f:  # too few examples: the metric's colour, faded and hatched grey
            bar.set(alpha=0.45, hatch="///", edgecolor="#666666")
        bar.set_visible(v is not None)


def _draw_intervals(ax, xs: list, values: list, intervals: list) -> None:
    """Each shown bar's interval as an error bar."""
    shown = [
        (x, v, iv) for x, v, iv in zip(xs, values, intervals) if v is not None and iv is not None
    ]
    if shown:  # one call for every bar: errorbar is slow to set up (a tenth of a second each)
        ax.errorbar(
            [x for x, _, _ in shown],
            [v for _, v, _ in shown],
            yerr=[
                [max(0.0, v - iv[0]) for _, v, iv in shown],
                [max(0.0, iv[1] - v) for _, v, iv in shown],
            ],
            fmt="none",
            ecolor="black",
            elinewidth=1,
            capsize=2,
            gid="interval",
        )


def _draw_value_labels(ax, panel, metric, xs, values, intervals, width: float) -> None:
    """Each bar's value above it (and its interval), a mark for a zero, the reason for a
    missing one."""
    for i, (x, v) in enumerate(zip(xs, values)):
        if v is None:
            ax.text(
                x,
                0.02,
                panel.get("missing", "—"),
                rotation=90,
                ha="center",
                va="bottom",
                fontsize=7,
                color="#555555",
                gid="missing",
            )
            continue
        if v == 0:  # a zero is a result, not a missing bar
            ax.plot(
                [x - width * 0.45, x + width * 0.45],
                [0.004, 0.004],
                color="black",
                linewidth=2.5,
                solid_capstyle="butt",
                gid="zero-mark",
            )
        top = intervals[i][1] if i < len(intervals) and intervals[i] else v
        ax.annotate(
            f"{v:.2f}",
            (x, _label_base(top, _level(panel, metric, i))),
            xytext=(0, 3),
            textcoords="offset points",
            rotation=90,
            ha="center",
            va="bottom",
            fontsize=7,
            gid="value",
        )


def _draw_human_baselines(ax, panel: dict, metric: str, xs: list, values: list, width: float):
    """The human baseline as a dashed line over each bar that has one."""
    for i, (x, v) in enumerate(zip(xs, values)):
        level = _level(panel, metric, i)
        if level is not None and v is not None:  # no baseline where there is no bar
            ax.hlines(
                level,
                x - width / 2,
                x + width / 2,
                colors=HUMAN_COLOR,
                linestyles="dashed",
                linewidth=1.6,
                gid="human",
            )


LABEL_SPAN = 0.16  # the height of a rotated value label, in score units (ylim 0-1.18)


def _level(panel: dict, metric: str, i: int) -> float | None:
    """The human baseline drawn over bar ``i`` of ``metric``, if any."""
    human = panel["human"].get(metric)
    return human[i] if isinstance(human, list) else human


def _label_base(top: float, level: float | None) -> float:
    """Where a value label starts: above its bar (and interval), lifted above the human
    baseline when the dashed line would cross it (a zero's label sits low, where the
    baselines and the axis are)."""
    if level is not None and top - 0.01 <= level <= top + LABEL_SPAN:
        return level
    return top


def _draw(ax, panel: dict) -> None:
    labels, series = panel["labels"], panel["series"]
    width = 0.8 / len(series)
    for j, (metric, values) in enumerate(series.items()):
        _bars(ax, panel, j, metric, values, width)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles, names = ax.get_legend_handles_labels()
    if any(c.get_gid() == "human" for c in ax.collections):
        handles.append(Line2D([], [], color=HUMAN_COLOR, linestyle="dashed"))
        names.append("human baseline")
    if any(n is not None and n < MIN_N for n in panel["n"]):
        handles.append(Patch(facecolor=FEW_COLOR, hatch="///", edgecolor="white"))
        names.append(f"n < {MIN_N}: too few examples to compare")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(
        [f"{label}\nn={n}" if n is not None else label for label, n in zip(labels, panel["n"])],
        rotation=90 if len(labels) > 4 else 0,
        ha="center",
        fontsize=8,
    )
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylim(0, 1.18)
    ax.set_ylabel("score")
    ax.set_title(panel["title"], fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(handles, names, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def figure(task_results: list[TaskResult], title: str = ""):
    """The chart as a matplotlib Figure (what tests read); None when nothing is scored."""
    shown = panels(task_results)
    if not shown:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    widest = max(len(p["labels"]) * max(len(p["series"]), 1.6) for p in shown)
    height = 0.8 + 3.4 * len(shown)
    fig = Figure(figsize=(max(7.0, 3.5 + 0.42 * widest), height), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(shown), 1, squeeze=False)[:, 0]
    for ax, panel in zip(axes, shown):
        _draw(ax, panel)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / height))  # room for the title
    return fig


def chart_png(task_results: list[TaskResult], title: str = "") -> bytes | None:
    """The chart as PNG bytes; None when no task could be scored (hidden answers)."""
    with _DRAWING:
        fig = figure(task_results, title)
        if fig is None:
            return None
        buffer = io.BytesIO()
        # print_png draws once; savefig would first draw a second time for the layout
        # engine that tight_layout leaves behind (the layout is already done)
        fig.canvas.print_png(buffer)
        return buffer.getvalue()


def warm_up() -> None:
    """Draw a small chart and drop it: matplotlib's first figure loads its fonts and
    fills its text caches (a few tenths of a second), which a run pays here while it
    only waits for a server's answers."""
    task = next(iter(TASKS.values()))
    result = TaskResult(
        task.key, task.class_name, task.modality, task.public, "test", 1, [], [], {}, {}
    )
    result.scorable, result.metrics, result.task_score = True, {"exact_match": 0.5}, 0.5
    result.task_score_uncertainty = {"low": 0.4, "high": 0.6}
    chart_png([result], "warm-up")
