"""The picture of a run: one bar chart PNG written next to results.md (results.png).

The first panel is the summary: the task score of every task of the run, under its
official name (a task whose answers are hidden is named there, "not scored"). Then one
panel per task that has a breakdown (ruHHH by category, the science tasks by domain),
its official metrics as bars with an "all" bar first.

Nothing may mislead: every bar carries its value (a zero gets a visible mark, so it
does not read as "no data") and each group its n; a bar over fewer than ``MIN_N``
examples is hatched and grey (too few to compare); an interval is drawn where the task
result carries one (``uncertainty``); the human baseline (dashed red) is drawn only over
bars that exist. The layout is computed here, in pixels, as marks (rectangles, lines,
texts: what tests read); :mod:`.chart_canvas` turns them into the PNG with Pillow.
"""

from __future__ import annotations

import threading

from mera_multi_hf.reporting.chart_canvas import (
    HATCH_COLOR,
    Drawing,
    Mark,
    png,
    text_mark,
    text_size,
)
from mera_multi_hf.scoring.records import TaskResult
from mera_multi_hf.scoring.registry import display_name
from mera_multi_hf.tasks.table import TASKS

HUMAN_COLOR = "#d62728"  # the human baseline, and nothing else, is drawn in this red
BAR_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f")
FEW_COLOR = "#bbbbbb"
MIN_N = 10  # fewer examples than this: a hatched grey bar
CHART_NAME = "results.png"
_DRAWING = threading.Lock()  # the font objects are shared: one chart at a time


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


LABEL_SPAN = 0.16  # the height of a rotated value label, in score units (ylim 0-1.18)
Y_TOP = 1.18  # the score axis runs from 0 to here: room for the labels above a 1.0
DPI = 100  # pixels per inch of the sizes below (as the chart's first, matplotlib, version)
PANEL_HEIGHT = 340
HEADER = 80  # above the first panel: the chart's title
LEFT = 70  # the score axis, its tick labels and its name
SMALL, MEDIUM, LARGE = 10, 11, 14  # font sizes in pixels: value labels, ticks, titles


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


class _Plot:
    """A panel's plot area, and its data to pixels: x in bar slots, y in score units."""

    def __init__(self, box: tuple, n_labels: int):
        self.box, self.n = box, n_labels

    def x(self, value: float) -> float:
        x0, _, x1, _ = self.box
        return x0 + (value + 0.6) / (self.n + 0.2) * (x1 - x0)  # slots -0.6 .. n - 0.4

    def y(self, value: float) -> float:
        _, y0, _, y1 = self.box
        return y1 - value / Y_TOP * (y1 - y0)

    def span(self, width: float) -> float:
        return self.x(width) - self.x(0)


def _bars(plot: _Plot, panel: dict, j: int, metric: str, values: list, width: float) -> list:
    """One metric's marks: bars, value labels, a mark for zeros, intervals, baselines."""
    xs = [i - 0.4 + width * (j + 0.5) for i in range(len(values))]
    intervals = panel["intervals"].get(metric) or []
    return (
        _draw_bars(plot, panel, j, xs, values, width)
        + _draw_intervals(plot, xs, values, intervals)
        + _draw_value_labels(plot, panel, metric, xs, values, intervals, width)
        + _draw_human_baselines(plot, panel, metric, xs, values, width)
    )


def _draw_bars(plot: _Plot, panel: dict, j: int, xs: list, values: list, width: float) -> list:
    """The bars in the metric's colour, faded and hatched where too few; none where missing."""
    color, half = BAR_COLORS[j % len(BAR_COLORS)], plot.span(width * 0.95) / 2
    marks = []
    for x, v, n in zip(xs, values, panel["n"]):
        if v is None:
            continue
        few = n is not None and n < MIN_N  # too few examples: faded, hatched grey
        box = (plot.x(x) - half, plot.y(v), plot.x(x) + half, plot.y(0))
        marks.append(
            Mark("rect", "bar", box, color, outline=HATCH_COLOR if few else "white", value=v)
        )
        marks[-1].hatched = marks[-1].faded = few
    return marks


def _draw_intervals(plot: _Plot, xs: list, values: list, intervals: list) -> list:
    """Each shown bar's interval as an error bar with caps."""
    marks = []
    for x, v, iv in zip(xs, values, intervals):
        if v is None or iv is None:
            continue
        px, low, high = plot.x(x), plot.y(iv[0]), plot.y(iv[1])
        marks.append(Mark("line", "interval", (px, high, px, low), value=iv))
        marks += [Mark("line", "interval-cap", (px - 3, y, px + 3, y)) for y in (low, high)]
    return marks


def _draw_value_labels(plot: _Plot, panel, metric, xs, values, intervals, width: float) -> list:
    """Each bar's value above it (and its interval), a mark for a zero, the reason for a
    missing one."""
    marks = []
    for i, (x, v) in enumerate(zip(xs, values)):
        if v is None:
            marks.append(
                text_mark(
                    "missing",
                    panel.get("missing", "—"),
                    SMALL,
                    (plot.x(x), plot.y(0.02)),
                    "above",
                    rotated=True,
                    color="#555555",
                )
            )
            continue
        if v == 0:  # a zero is a result, not a missing bar
            half, floor = plot.span(width * 0.9) / 2, plot.y(0) - 2
            marks.append(
                Mark("line", "zero-mark", (plot.x(x) - half, floor, plot.x(x) + half, floor))
            )
            marks[-1].width = 3
        top = intervals[i][1] if i < len(intervals) and intervals[i] else v
        base = plot.y(_label_base(top, _level(panel, metric, i))) - 4
        marks.append(
            text_mark("value", f"{v:.2f}", SMALL, (plot.x(x), base), "above", rotated=True)
        )
    return marks


def _draw_human_baselines(plot: _Plot, panel, metric, xs, values, width: float) -> list:
    """The human baseline as a dashed line over each bar that has one."""
    marks = []
    for i, (x, v) in enumerate(zip(xs, values)):
        level = _level(panel, metric, i)
        if level is not None and v is not None:  # no baseline where there is no bar
            half, y = plot.span(width) / 2, plot.y(level)
            mark = Mark("line", "human", (plot.x(x) - half, y, plot.x(x) + half, y), HUMAN_COLOR)
            mark.width, mark.dashed = 2, True
            marks.append(mark)
    return marks


def _legend(panel: dict, marks: list, x: float, y: float) -> list:
    """The legend, left-aligned at (x, y): each metric's colour, then the human baseline
    and the hatching where they are drawn."""
    entries = [
        ("swatch", BAR_COLORS[j % len(BAR_COLORS)], display_name(m))
        for j, m in enumerate(panel["series"])
    ]
    if any(m.gid == "human" for m in marks):
        entries.append(("dashed", HUMAN_COLOR, "human baseline"))
    if any(n is not None and n < MIN_N for n in panel["n"]):
        entries.append(("hatched", FEW_COLOR, f"n < {MIN_N}: too few examples to compare"))
    out, row = [], 18
    for k, (kind, color, name) in enumerate(entries):
        top = y + 6 + k * row
        if kind == "dashed":
            key = Mark("line", "legend-key", (x + 8, top + 6, x + 30, top + 6), color, 2)
            key.dashed = True
        else:
            key = Mark("rect", "legend-key", (x + 8, top + 1, x + 30, top + 11), color)
            key.hatched = key.faded = kind == "hatched"
        out += [key, text_mark("legend", name, MEDIUM, (x + 36, top + 6), "right")]
    right = max([m.box[2] for m in out], default=x) + 8
    frame = Mark("rect", "legend-frame", (x, y, right, y + 10 + len(entries) * row), "white")
    frame.outline = "#cccccc"
    return [frame] + out


def legend_width(panel: dict) -> float:
    """The width a panel's legend takes (its longest entry)."""
    names = [display_name(m) for m in panel["series"]] + [
        "human baseline",
        f"n < {MIN_N}: too few examples to compare",
    ]
    shown = names if any(n is not None and n < MIN_N for n in panel["n"]) else names[:-1]
    return 50 + max(text_size(name, MEDIUM)[0] for name in shown)


def _tick_labels(panel: dict) -> tuple[list[str], bool]:
    labels = [
        f"{label}\nn={n}" if n is not None else label
        for label, n in zip(panel["labels"], panel["n"])
    ]
    return labels, len(labels) > 4  # many labels: read bottom to top


def _frame(plot: _Plot, panel: dict, ticks: list[str], rotated: bool) -> list:
    """The axes: the score grid and its labels, the tick labels, the titles."""
    x0, y0, x1, y1 = plot.box
    marks = []
    for k in range(6):
        y = plot.y(k / 5)
        marks.append(Mark("line", "grid", (x0, y, x1, y), "#e2e2e2"))
        marks.append(text_mark("ytick", f"{k / 5:.1f}", MEDIUM, (x0 - 5, y), "left"))
    for i, text in enumerate(ticks):
        marks.append(text_mark("tick", text, MEDIUM, (plot.x(i), y1 + 4), "below", rotated=rotated))
    marks.append(
        text_mark("ylabel", "score", LARGE, (x0 - 40, (y0 + y1) / 2), "left", rotated=True)
    )
    marks.append(text_mark("title", panel["title"], LARGE, ((x0 + x1) / 2, y0 - 6), "above"))
    return marks


def _panel(panel: dict, area: tuple, legend_space: float) -> dict:
    """One panel in ``area`` (x0, y0, x1, y1): its plot box and its marks."""
    ticks, rotated = _tick_labels(panel)
    tick_height = max(text_size(t, MEDIUM, rotated)[1] for t in ticks)
    top = area[1] + LARGE + 16  # the panel's title above the plot
    bottom = max(top + 100, area[3] - tick_height - 12)
    plot = _Plot((LEFT, top, area[2] - legend_space - 12, bottom), len(ticks))
    marks = _frame(plot, panel, ticks, rotated)
    series = panel["series"]
    width = 0.8 / len(series)
    for j, (metric, values) in enumerate(series.items()):
        marks += _bars(plot, panel, j, metric, values, width)
    marks.append(Mark("rect", "axis", plot.box, "none", outline="#000000"))  # over the bars
    marks += _legend(panel, marks, plot.box[2] + 6, plot.box[1])
    return {"box": plot.box, "marks": marks}


def drawing(task_results: list[TaskResult], title: str = "") -> Drawing | None:
    """The chart as marks in pixels (what tests read); None when nothing is scored."""
    shown = panels(task_results)
    if not shown:
        return None
    widest = max(len(p["labels"]) * max(len(p["series"]), 1.6) for p in shown)
    legend_space = max(legend_width(p) for p in shown)
    width = round(max(7.0 * DPI, (3.5 + 0.42 * widest) * DPI, LEFT + legend_space + 320))
    chart = Drawing(width, HEADER + PANEL_HEIGHT * len(shown))
    if title:
        chart.marks.append(text_mark("suptitle", title, MEDIUM + 4, (width / 2, 20), "below"))
    for k, panel in enumerate(shown):
        top = HEADER + PANEL_HEIGHT * k
        chart.panels.append(_panel(panel, (0, top, width, top + PANEL_HEIGHT), legend_space))
    return chart


def chart_png(task_results: list[TaskResult], title: str = "") -> bytes | None:
    """The chart as PNG bytes; None when no task could be scored (hidden answers)."""
    with _DRAWING:
        chart = drawing(task_results, title)
        return None if chart is None else png(chart)


def warm_up() -> None:
    """Load the fonts (a few hundredths of a second), while a run only waits for a
    server's answers."""
    for size in (SMALL, MEDIUM, LARGE, MEDIUM + 4):
        text_size("0.00", size)
