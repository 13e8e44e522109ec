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


def score_rows(result: dict, variants: bool = False) -> list[tuple[str, ...]]:
    """The short table of a comparison (the console's and compare.html's, under
    SCORE_HEAD): per shared task its task score and each metric, both runs, A − B with
    its interval and the verdict (``variants``: then the tested metric per prompt
    variant); last, the mean task score over the tasks."""
    rows = []
    for key, t in result["tasks"].items():
        if t.get("metrics"):
            rows.append(_cells(key, "task score", t["task_score"]))
            rows += [_cells(key, display_name(m), r) for m, r in t["metrics"].items()]
            rows += _variant_cells(key, t.get("prompt_variants")) if variants else []
    o = result["overall"]
    if o:
        rows.append(_cells("all shared tasks", f"mean task score of {o['n_tasks']}", o))
    return rows


def _variant_cells(key: str, pv: dict | None) -> list[tuple[str, ...]]:
    """The tested metric of each prompt variant, where a task has several."""
    if not pv or len(pv["variants"]) < 2 or not pv["metric"]:
        return []
    name = display_name(pv["metric"])
    return [
        _cells(key, f"{name}, prompt {_variant_label(v, row)}", row["metrics"][pv["metric"]])
        for v, row in pv["variants"].items()
    ]


def _variant_label(variant: str, row: dict) -> str:
    return f"#{row['number']} {variant}"


def variants_line(key: str, pv: dict | None) -> str | None:
    """A task's per-variant differences in one line (None with fewer than two variants):
    their range, and where A or B is better."""
    if not pv or len(pv["variants"]) < 2 or not pv["metric"]:
        return None
    rows = pv["variants"]
    diffs = {v: r["metrics"][pv["metric"]]["difference"] for v, r in rows.items()}
    low, high = min(diffs, key=diffs.get), max(diffs, key=diffs.get)
    said = [
        f"{who} better on {', '.join(_variant_label(v, rows[v]) for v in pv[part])}"
        for who, part in (("A", "helps"), ("B", "hurts"))
        if pv[part]
    ]
    return (
        f"{key}: A − B in {display_name(pv['metric'])} per prompt variant from "
        f"{diffs[low]:+.4f} ({_variant_label(low, rows[low])}) to {diffs[high]:+.4f} "
        f"({_variant_label(high, rows[high])})"
        + (f"; {'; '.join(said)}" if said else "; no variant's interval excludes 0")
        + ("; the change helps one wording and hurts another" if len(said) == 2 else "")
    )


def _variants_md(t: dict) -> list[str]:
    """A task's section of compare.md per prompt variant."""
    pv = t.get("prompt_variants")
    if not pv:
        return []
    if len(pv["variants"]) < 2:
        return ["", f"One prompt variant ({', '.join(pv['variants']) or 'none'}): as the task."]
    lines = ["", "By prompt variant (run A's, numbered in order of first appearance):", ""]
    lines += [HEADER[0].replace("| metric", "| prompt variant (n): metric"), HEADER[1]]
    lines += [
        _row(f"{_variant_label(v, row)} ({row['n']}): {display_name(m)}", r)
        for v, row in pv["variants"].items()
        for m, r in row["metrics"].items()
    ]
    return lines


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
    lines += _variants_md(t)
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
    lines += [
        line
        for key, t in result["tasks"].items()
        if (line := variants_line(key, t.get("prompt_variants")))
    ]
    if result.get("prompt_variants_note"):
        lines.append(result["prompt_variants_note"])
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
    if result.get("prompt_variants_note"):
        lines += ["", result["prompt_variants_note"] + "."]
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
