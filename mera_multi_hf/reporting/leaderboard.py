"""`mera-multi leaderboard RUN ...`: several runs side by side.

Rows are runs (models), columns the tasks, the modality scores and the total over the
scored tasks, each with its 95% interval (from each run's results.json). It shows the
coverage of each run (tasks and examples scored), marks runs that are not on the whole
official test split, and ranks a run only against runs that scored the same tasks.
Writes leaderboard.md, leaderboard.json and leaderboard.png.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from mera_multi_hf.core.arguments import OVERWRITE_HELP, add_command, opt, output_dir_opt
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.reporting.reports import fmt_interval
from mera_multi_hf.scoring.records import Results
from mera_multi_hf.tasks.table import MODALITIES, TASKS


def _official(doc: Results) -> bool:
    """The whole official test split of every scored task (what evaluate records)."""
    flags = doc.run.details.get("official_test_split") or {}
    scored = [k for k, r in doc.tasks.items() if r.scorable]
    return bool(scored) and all(flags.get(k) for k in scored)


def _row(doc: Results) -> dict:
    run, summary = doc.run, doc.summary
    scored = {k: r for k, r in doc.tasks.items() if r.scorable}
    return {
        "model": str(run.model),
        "run_id": run.run_id,
        "folder": doc.folder,
        "mode": run.mode,
        "split": run.split,
        "official_test_split": _official(doc),
        "tasks": {
            k: {"score": r.task_score, "uncertainty": r.task_score_uncertainty}
            for k, r in scored.items()
        },
        "modality": {
            m: {"score": e["score"], "uncertainty": e.get("uncertainty")}
            for m, e in summary.modality.items()
        },
        "total": {
            "score": summary.overall.get("score"),
            "uncertainty": summary.overall.get("uncertainty"),
        },
        "coverage": {
            "tasks": len(scored),
            "of_tasks": len(TASKS),
            "examples": sum(r.n_examples for r in scored.values()),
            "of_examples": sum(TASKS[k].test_size for k in scored if k in TASKS),
        },
        "not_scorable": sorted(k for k, r in doc.tasks.items() if not r.scorable),
    }


def _rank(rows: list[dict]) -> None:
    """Rank within each set of scored tasks (by the total); set ids in order of size."""
    sets = sorted({tuple(sorted(r["tasks"])) for r in rows}, key=lambda s: (-len(s), s))
    for number, task_set in enumerate(sets, 1):
        members = [r for r in rows if tuple(sorted(r["tasks"])) == task_set]
        totals = [r["total"]["score"] or 0 for r in members]
        for r, total in zip(members, totals):  # equal totals share a place
            r.update(
                task_set=number,
                rank=1 + sum(t > total for t in totals),
                ranked_against=len(members) - 1,
            )


def leaderboard(paths) -> dict:
    if not paths:
        raise MeraError("give at least one run folder")
    from mera_multi_hf.reporting.compare import read_run  # here: --help needs no numpy

    rows = [_row(read_run(p)) for p in paths]
    _rank(rows)
    rows.sort(key=lambda r: (r["task_set"], r["rank"]))
    tasks = [k for k in TASKS if any(k in r["tasks"] for r in rows)]
    modalities = [m for m in MODALITIES if any(m in r["modality"] for r in rows)]
    return {"tasks": tasks, "modalities": modalities, "rows": rows}


def _cell(entry: dict | None) -> str:
    return (
        "—"
        if not entry or entry.get("score") is None
        else fmt_interval(entry["score"], entry.get("uncertainty"))
    )


def markdown(board: dict) -> str:
    tasks, modalities = board["tasks"], board["modalities"]
    header = ["rank", "model", "official test split", "coverage", "total"] + modalities + tasks
    lines = [
        "# MERA Multi leaderboard of local runs",
        "",
        "Each score with ± half its 95% bootstrap interval (resampled by cluster). A run "
        "is ranked only against runs that scored the same tasks (its task set); "
        '"total" is the mean task score over the run\'s scored tasks.',
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for r in board["rows"]:
        c = r["coverage"]
        rank = f"{r['rank']} of {r['ranked_against'] + 1} (set {r['task_set']})"
        cells = [
            rank,
            f"{r['model']} (`{r['folder']}`)",
            "yes" if r["official_test_split"] else "**no**",
            f"{c['tasks']}/{c['of_tasks']} tasks, {c['examples']}/{c['of_examples']} examples",
            _cell(r["total"]),
        ]
        cells += [_cell(r["modality"].get(m)) for m in modalities]
        cells += [_cell(r["tasks"].get(t)) for t in tasks]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Task sets:"]
    for number in sorted({r["task_set"] for r in board["rows"]}):
        first = next(r for r in board["rows"] if r["task_set"] == number)
        lines.append(f"- set {number}: {', '.join(sorted(first['tasks'])) or 'none'}")
    return "\n".join(lines) + "\n"


def chart_png(board: dict) -> bytes:
    """The total of each run with its interval; runs off the official test split hollow."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = [r for r in board["rows"] if r["total"]["score"] is not None]
    fig = Figure(figsize=(8, 1.4 + 0.55 * max(1, len(rows))), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for y, r in enumerate(reversed(rows)):
        total, u = r["total"]["score"], r["total"].get("uncertainty") or {}
        err = [[total - u["low"]], [u["high"] - total]] if u.get("low") is not None else None
        ax.errorbar(
            [total],
            [y],
            xerr=err,
            fmt="o",
            capsize=3,
            color="#1f77b4",
            markerfacecolor="#1f77b4" if r["official_test_split"] else "white",
        )
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(
        [f"{r['model']}\n{Path(r['folder']).name}, set {r['task_set']}" for r in reversed(rows)],
        fontsize=8,
    )
    ax.set_xlim(0, 1)
    ax.set_xlabel(
        "total (mean task score) with its 95% interval; hollow: not the official test split",
        fontsize=8,
    )
    ax.set_title("MERA Multi: local runs", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


@dataclass
class LeaderboardOptions:
    """The options of `mera-multi leaderboard`."""

    runs: list[str] | None = opt(
        None,
        "run folders (evaluate or score) or their results.json",
        positional=True,
        nargs="+",
        metavar="RUN",
        path=True,
    )
    out: str = output_dir_opt(
        "leaderboard",
        "folder for leaderboard.md/.json/.png (default: leaderboard)",
    )
    overwrite: bool = opt(False, OVERWRITE_HELP)


def cmd_leaderboard(options: LeaderboardOptions) -> int:
    board = leaderboard(options.runs)
    from mera_multi_hf.reporting.compare import write_report

    write_report(
        options.out, "leaderboard", markdown(board), chart_png(board), board, inputs=options.runs
    )
    return 0


def add_parser(sub) -> None:
    add_command(
        sub,
        "leaderboard",
        LeaderboardOptions,
        cmd_leaderboard,
        help="several runs side by side, with intervals, coverage and ranks among runs "
        "of the same tasks",
        description=__doc__.split("\n\n")[1].replace("\n", " "),
    )
