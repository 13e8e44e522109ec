"""compare.png: the comparison of two runs as a chart (each task's differences with their
intervals and verdicts; under a task of several prompt variants, its first metric's
difference per variant, so that a change that helps one wording and hurts another shows)."""

from __future__ import annotations


def chart_png(result: dict) -> bytes:
    """compare.png: :func:`chart_figure` as PNG bytes."""
    import io

    buffer = io.BytesIO()
    chart_figure(result).savefig(buffer, format="png")
    return buffer.getvalue()


def _rows(result: dict) -> list[tuple[str, dict, bool]]:
    """(label, record, whether it is a prompt variant's) per chart row, top to bottom:
    each task's score, then its metrics by their display names, then per prompt variant
    (where there are several) the metric compare tests them by, labelled as compare.md
    and the page label them."""
    from mera_multi_hf.scoring.registry import display_name

    rows = []
    for key, t in result["tasks"].items():
        if t.get("task_score"):
            rows.append((f"{key}: task score", t["task_score"], False))
            rows += [(f"{key}: {display_name(m)}", r, False) for m, r in t["metrics"].items()]
            rows += _variant_rows(key, t.get("prompt_variants"))
    return rows


def _variant_rows(key: str, table: dict | None) -> list[tuple[str, dict, bool]]:
    """A task's rows per prompt variant (none for a run without variants, or one variant)."""
    from mera_multi_hf.scoring.registry import display_name

    if not table or not table["metric"] or len(table["variants"]) < 2:
        return []
    name = display_name(table["metric"])
    return [
        (f"{key}: {name}, prompt #{row['number']} {variant}", row["metrics"][table["metric"]], True)
        for variant, row in table["variants"].items()
    ]


def chart_figure(result: dict):
    """Per task: the task-score difference and each official metric's, with intervals, then
    (smaller, in orange) the first metric's per prompt variant; zero marked, and each
    row's verdict written beside it on the right axis (compare.md's words: a row with too
    few clusters is greyed and says so). The layout fits the labels on both sides, so the
    plot takes the rest of the canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = list(reversed(_rows(result)))  # matplotlib counts rows from the bottom
    # the plot gets about 5 inches whatever the labels on its two sides take (8 pt text)
    sides = max((len(label) for label, _, _ in rows), default=0) + max(
        (len(r["verdict"]) for _, r, _ in rows), default=0
    )
    fig = Figure(figsize=(5 + 0.065 * sides, 1.2 + 0.35 * len(rows)), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    told = [not r["verdict"].startswith("too few") for _, r, _ in rows]
    for y, ((_label, r, variant), sure) in enumerate(zip(rows, told)):
        d = r["difference"]
        err = [[d - r["low"]], [r["high"] - d]] if r["low"] is not None else None
        color, alpha = (("#ff7f0e" if variant else "#1f77b4"), 1.0) if sure else ("#999999", 0.6)
        size = 4 if variant else 6
        ax.errorbar([d], [y], xerr=err, fmt="o", color=color, capsize=3, alpha=alpha, ms=size)
    ax.axvline(0, color="#d62728", linestyle="dashed", linewidth=1.2)
    verdicts = ax.twinx()
    for axis, labels in (
        (ax, [label for label, _, _ in rows]),
        (verdicts, [r["verdict"] for _, r, _ in rows]),
    ):
        axis.set_ylim(-0.5, len(rows) - 0.5)
        axis.set_yticks(range(len(rows)))
        axis.set_yticklabels(labels, fontsize=8)
    for text, sure in zip(verdicts.get_yticklabels(), told):
        text.set_color("black" if sure else "#666666")
        text.set_gid("verdict")
    verdicts.tick_params(axis="y", length=0)
    per_variant = "; orange: per prompt variant" if any(v for _, _, v in rows) else ""
    ax.set_xlabel(
        f"A − B with its 95% paired bootstrap interval (dashed red: no difference{per_variant})"
    )
    ax.set_title(f"A = {result['a']['label']}  vs  B = {result['b']['label']}", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout(pad=0.4)
    return fig
