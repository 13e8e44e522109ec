"""compare.md: the comparison of two runs as Markdown (the overall verdict, the protocol
differences, and per task its metrics, task score and breakdown rows)."""

from __future__ import annotations

import json

from mera_multi_hf.reporting.compare_stats import MIN_CLUSTERS
from mera_multi_hf.scoring.registry import display_name


def interval(r: dict) -> str:
    """A difference's 95% interval, ``[low, high]`` (— where it has none)."""
    return "—" if r["low"] is None else f"[{r['low']:+.4f}, {r['high']:+.4f}]"


def _row(label: str, r: dict) -> str:
    p = "—" if "mcnemar_p" not in r else f"{r['mcnemar_p']:.3g}"
    counts = f"{r['only_a']} / {r['only_b']}" if "only_a" in r else "—"
    return (
        f"| {label} | {r['a']:.4f} | {r['b']:.4f} | {r['difference']:+.4f} | {interval(r)} | "
        f"{p} | {counts} | {r['verdict']} |"
    )


SCORE_HEAD = ("task", "metric", "A", "B", "A − B", "95% interval", "verdict")


def _cells(task: str, label: str, r: dict) -> tuple[str, ...]:
    a, b = (f"{r[k]:.4f}" if r.get(k) is not None else "—" for k in ("a", "b"))
    return (task, label, a, b, f"{r['difference']:+.4f}", interval(r), r["verdict"])


def score_rows(result: dict) -> list[tuple[str, ...]]:
    """The short table of a comparison (the console's and compare.html's, under
    SCORE_HEAD): per shared task its task score and each metric, both runs, A − B with
    its interval and the verdict; last, the mean task score over the tasks."""
    rows = []
    for key, t in result["tasks"].items():
        if t.get("metrics"):
            rows.append(_cells(key, "task score", t["task_score"]))
            rows += [_cells(key, display_name(m), r) for m, r in t["metrics"].items()]
    o = result["overall"]
    if o:
        rows.append(_cells("all shared tasks", f"mean task score of {o['n_tasks']}", o))
    return rows


HEADER = [
    "| metric | A | B | A − B | 95% interval | McNemar p | only A / only B right | verdict |",
    "|---|---|---|---|---|---|---|---|",
]


def _task_md(key: str, t: dict) -> list[str]:
    lines = [
        "",
        f"## {key}",
        "",
        f"{t['paired']} examples paired"
        + (
            f" in {t['task_score']['n_clusters']} clusters ({t['task_score']['cluster']})"
            if t.get("task_score")
            else ""
        )
        + f" (only in A: {t['only_in_a']}, only in B: {t['only_in_b']})"
        + (
            f"; {t['examples_differ']} paired ids hold different examples (--force)"
            if t["examples_differ"]
            else ""
        ),
        "",
    ]
    if not t.get("metrics"):
        return lines
    lines += HEADER + [_row(display_name(m), r) for m, r in t["metrics"].items()]
    s = t["task_score"]
    lines.append(
        f"| task score | {s['a']:.4f} | {s['b']:.4f} | {s['difference']:+.4f} | "
        f"{interval(s)} | | | {s['verdict']} |"
    )
    for bname, rows in t["breakdown"].items():
        lines += [
            "",
            f"By {bname}:",
            "",
            HEADER[0].replace("| metric", f"| {bname}: metric"),
            HEADER[1],
        ]
        lines += [
            _row(f"{k}: {display_name(m)}", r) for k, row in rows.items() for m, r in row.items()
        ]
    return lines


def overall_line(o: dict) -> str:
    """The comparison in one sentence: the mean task score's difference and verdict."""
    tasks = f"{o['n_tasks']} shared task" + ("" if o["n_tasks"] == 1 else "s")
    return (
        f"Mean task score over {tasks}: A − B = {o['difference']:+.4f}, "
        f"95% interval {interval(o)}: {o['verdict']}."
    )


def console(result: dict, out) -> str:
    """What `compare` prints: the short table, the verdict and where the rest is."""
    from mera_multi_hf.core.arguments import text_table

    a, b = result["a"], result["b"]
    lines = [f"A: {a['model']}, {a['folder']}; B: {b['model']}, {b['folder']}"]
    lines.append(text_table([SCORE_HEAD, *score_rows(result)]))
    fields = [d["field"] for d in result["protocol_differences"]]
    if fields:
        lines.append(f"protocol differences: {', '.join(fields)}")
    lines.append(
        f"breakdowns, McNemar and the protocol in {out}/compare.md; "
        f"every answer side by side in {out}/compare.html"
    )
    return "\n".join(lines)


def markdown(result: dict) -> str:
    a, b, o = result["a"], result["b"], result["overall"]
    lines = [
        f"# MERA Multi compare: A = {a['label']} vs B = {b['label']}",
        "",
        f"A: {a['model']}, `{a['folder']}` (run {a['run_id']}, {a['mode']}); "
        f"B: {b['model']}, `{b['folder']}` (run {b['run_id']}, {b['mode']}).",
        "",
    ]
    if o:
        lines += [f"**{overall_line(o)}**", ""]
    lines += [
        "Paired bootstrap over the same resamples of each task's clusters "
        f"(seed {result['bootstrap']['seed']}, {result['bootstrap']['resamples']} "
        'resamples); "no difference" when the 95% interval holds 0, no verdict with '
        f"fewer than {MIN_CLUSTERS} clusters. McNemar's exact test counts the examples "
        "(or groups) only one run got right, as independent.",
        "",
        "### Protocol differences",
        "",
    ]
    diffs = result["protocol_differences"]
    lines += [
        f"- `{d['field']}`: A {json.dumps(d['a'], ensure_ascii=False)}, "
        f"B {json.dumps(d['b'], ensure_ascii=False)}"
        for d in diffs
    ] or ["- none found"]
    nc = result["not_compared"]
    if nc["only_in_a"] or nc["only_in_b"] or nc["not_scored"]:
        lines += [
            "",
            f"Not compared: only in A {nc['only_in_a']}, only in B "
            f"{nc['only_in_b']}, without gold answers or per-example scores "
            f"{nc['not_scored']}.",
        ]
    for key, t in result["tasks"].items():
        lines += _task_md(key, t)
    return "\n".join(lines) + "\n"
