"""compare.md: the comparison of two runs as Markdown (the overall verdict, the protocol
differences, and per task its metrics, task score and breakdown rows)."""

from __future__ import annotations

import json

from mera_multi_hf.reporting.compare_stats import MIN_CLUSTERS
from mera_multi_hf.scoring.registry import display_name


def _row(label: str, r: dict) -> str:
    interval = "—" if r["low"] is None else f"[{r['low']:+.4f}, {r['high']:+.4f}]"
    p = "—" if "mcnemar_p" not in r else f"{r['mcnemar_p']:.3g}"
    counts = f"{r['only_a']} / {r['only_b']}" if "only_a" in r else "—"
    return (
        f"| {label} | {r['a']:.4f} | {r['b']:.4f} | {r['difference']:+.4f} | {interval} | "
        f"{p} | {counts} | {r['verdict']} |"
    )


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
        f"| task score | | | {s['difference']:+.4f} | "
        + ("—" if s["low"] is None else f"[{s['low']:+.4f}, {s['high']:+.4f}]")
        + f" | | | {s['verdict']} |"
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
        interval = "—" if o["low"] is None else f"[{o['low']:+.4f}, {o['high']:+.4f}]"
        lines += [
            f"**Mean task score over {o['n_tasks']} shared tasks: A − B = "
            f"{o['difference']:+.4f}, 95% interval {interval}: {o['verdict']}.**",
            "",
        ]
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
