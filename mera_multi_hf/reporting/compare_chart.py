"""compare.png: the comparison of two runs as a chart (each task's differences with their
intervals and verdicts)."""

from __future__ import annotations


def chart_png(result: dict) -> bytes:
    """compare.png: :func:`chart_figure` as PNG bytes."""
    import io

    buffer = io.BytesIO()
    chart_figure(result).savefig(buffer, format="png")
    return buffer.getvalue()


def chart_figure(result: dict):
    """Per task: the task-score difference and each official metric's, with intervals,
    zero marked, and each row's verdict written beside it (compare.md's words: a row
    with too few clusters is greyed and says so)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = []
    for key, t in result["tasks"].items():
        if t.get("task_score"):
            rows.append((f"{key}: task score", t["task_score"]))
            rows += [(f"{key}: {m}", r) for m, r in t["metrics"].items()]
    fig = Figure(figsize=(10, 1.2 + 0.35 * len(rows)), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for y, (_label, r) in enumerate(reversed(rows)):
        d = r["difference"]
        err = [[d - r["low"]], [r["high"] - d]] if r["low"] is not None else None
        told = not r["verdict"].startswith("too few")
        ax.errorbar(
            [d],
            [y],
            xerr=err,
            fmt="o",
            color="#1f77b4" if told else "#999999",
            capsize=3,
            alpha=1.0 if told else 0.6,
        )
        ax.annotate(
            r["verdict"],
            (1.01, y),
            xycoords=("axes fraction", "data"),
            fontsize=7,
            va="center",
            color="black" if told else "#666666",
            gid="verdict",
        )
    ax.axvline(0, color="#d62728", linestyle="dashed", linewidth=1.2, label="no difference")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in reversed(rows)], fontsize=8)
    ax.set_xlabel("A − B with its 95% paired bootstrap interval")
    ax.set_title(f"A = {result['a']['label']}  vs  B = {result['b']['label']}", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout(rect=(0, 0, 0.78, 1))  # room for the verdicts on the right
    return fig
