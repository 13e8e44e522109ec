"""`mera-multi compare RUN_A RUN_B`: is the difference between two runs real?

Two run folders (written by `evaluate` or `score`) are paired by task and example id from
the per-example tables in their results.json. Per task, metric and breakdown row it
reports the difference A - B, a paired bootstrap interval resampled by the task's
clusters (the same resamples for both runs), an exact McNemar p-value for 0/1 metrics and
the counts of examples only A / only B got right. Runs whose examples differ (prompt,
gold or meta of a paired id) are refused unless --force; every protocol difference found
in the run records is listed. Writes compare.md, compare.json, compare.png and
compare.html (the two runs' answers side by side, example by example).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mera_multi_hf.core import json_read
from mera_multi_hf.core.arguments import add_command, opt
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.outputs import OVERWRITE_HELP
from mera_multi_hf.scoring.records import Results
from mera_multi_hf.scoring.registry import GROUP_OF, METRICS, display_name
from mera_multi_hf.scoring.uncertainty import (
    Units,
    describe,
    mean_of,
    mean_over_tasks,
    replicates,
    rng_for,
    settings,
    stderr,
    table_units,
)


def read_run(path: str | Path) -> Results:
    """A run's results.json (the folder or the file itself), with its folder."""
    return Results.read(path)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of the discordant pairs at 1/2."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1))
    return min(1.0, 2 * tail / 2**n)


# Below this many clusters a percentile bootstrap is too narrow to judge by (it cannot see
# the variation between clusters it never drew): the interval is shown, no verdict drawn.
MIN_CLUSTERS = 20


def verdict(record: dict, metric: str | None = None) -> str:
    """Which run is better by the interval of A - B (the metric's direction from the
    registry; a task score is higher-is-better)."""
    if record["low"] is None or record["n_clusters"] < MIN_CLUSTERS:
        return f"too few clusters to tell ({record['n_clusters']} < {MIN_CLUSTERS})"
    up = METRICS[metric].higher_is_better if metric in METRICS else True
    if record["low"] > 0:
        return "A better" if up else "B better"
    if record["high"] < 0:
        return "B better" if up else "A better"
    return "no difference"


def _pair_tables(key: str, ta: dict, tb: dict) -> tuple[dict, list, list, list]:
    """A's table cut to the ids both runs scored, the rows of each run, and the paired
    ids whose example differs between the runs."""
    where_b = {i: k for k, i in enumerate(tb["id"])}
    rows_a = [k for k, i in enumerate(ta["id"]) if i in where_b]
    rows_b = [where_b[ta["id"][k]] for k in rows_a]
    differ = [ta["id"][k] for k, j in zip(rows_a, rows_b) if ta["ref"][k] != tb["ref"][j]]
    table = {
        "cluster_by": ta["cluster_by"],
        **{c: [ta[c][k] for k in rows_a] for c in ("id", "group", "cluster")},
        "breakdown": {n: [v[k] for k in rows_a] for n, v in ta["breakdown"].items()},
    }
    return table, rows_a, rows_b, differ


def _outcomes(table: dict, scores: dict, name: str, idx) -> np.ndarray:
    """The per-unit values of a metric (examples, or groups for a group metric)."""
    if name in GROUP_OF:
        values = scores[GROUP_OF[name]][idx]
        _, g_inv = np.unique(np.asarray(table["group"])[idx], return_inverse=True)
        wrong = np.bincount(g_inv, weights=values < 1)
        return (wrong == 0).astype(float)
    return scores[name][idx]


def _metric_records(table, sa, sb, names, idx, key) -> tuple[dict, dict, dict]:
    """Per metric: A, B, the difference with its paired interval, McNemar for 0/1."""
    ua = table_units(table, names, idx, sa)
    ub = table_units(table, names, idx, sb)
    diff = {m: Units(ua[m].num - ub[m].num, ua[m].den, ua[m].n) for m in ua if m in ub}
    reps = replicates(diff, rng_for("compare", *key))
    out = {}
    for m, d in diff.items():
        rec = describe(
            reps[m], stderr(d), cluster=table["cluster_by"], n_clusters=len(d.num), n=d.n
        )
        rec.update(a=ua[m].value, b=ub[m].value, difference=ua[m].value - ub[m].value)
        a, b = _outcomes(table, sa, m, idx), _outcomes(table, sb, m, idx)
        if np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all():
            only_a, only_b = int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))
            rec.update(only_a=only_a, only_b=only_b, mcnemar_p=mcnemar_exact(only_a, only_b))
        rec["verdict"] = verdict(rec, m)
        out[m] = rec
    return out, diff, reps


def _score_names(ra: dict, rb: dict) -> tuple[list, list]:
    """The metrics both runs have (official, judge, unofficial), and the task score's."""
    names = [
        m
        for part in ("metrics", "judge", "unofficial")
        for m in ra.get(part, {})
        if m in rb.get(part, {})
    ]
    official = [m for m in (ra.get("task_score_metrics") or ra["metrics"]) if m in names]
    return names, official


def compare_task(key: str, ra: dict, rb: dict) -> tuple[dict, tuple | None]:
    """One task's comparison, and its task-score difference resamples for the total."""
    table, rows_a, rows_b, differ = _pair_tables(key, ra["examples"], rb["examples"])
    sa = {m: np.asarray(v, dtype=float)[rows_a] for m, v in ra["examples"]["scores"].items()}
    sb = {m: np.asarray(v, dtype=float)[rows_b] for m, v in rb["examples"]["scores"].items()}
    out = {
        "paired": len(rows_a),
        "only_in_a": len(ra["examples"]["id"]) - len(rows_a),
        "only_in_b": len(rb["examples"]["id"]) - len(rows_b),
        "examples_differ": len(differ),
        "differing_ids": differ[:20],
    }
    if not rows_a:
        return out, None
    names, official = _score_names(ra, rb)
    everything = np.arange(len(rows_a))
    out["metrics"], diff, reps = _metric_records(table, sa, sb, names, everything, (key,))
    parts = [m for m in official if m in diff]
    mean_reps, se = mean_of([diff[m] for m in parts], [reps[m] for m in parts])
    score = describe(
        mean_reps,
        se,
        cluster=table["cluster_by"],
        n_clusters=len(diff[parts[0]].num),
        n=len(rows_a),
    )
    score["difference"] = float(np.mean([out["metrics"][m]["difference"] for m in parts]))
    score["verdict"] = verdict(score)
    out["task_score"] = score
    out["breakdown"] = {}
    for bname, keys in table["breakdown"].items():
        keys = np.asarray(keys, dtype=object)
        out["breakdown"][bname] = {
            str(k): _metric_records(
                table, sa, sb, names, np.flatnonzero(keys == k), (key, bname, k)
            )[0]
            for k in sorted({k for k in keys if k is not None})
        }
    return out, (mean_reps, score)


PROTOCOL = (
    "mode",
    "model",
    "revision",
    "backend",
    "dtype",
    "backend_options",
    "generation",
    "prompt_source",
    "metric_modes",
    "judge",
    "dataset_source",
    "split",
    "limit",
    "dataset_fingerprint",
    "seed",
    "bootstrap",
)


def _flat(value, prefix: str = "") -> dict:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def prompt_hashes(folder: str, tasks) -> dict:
    """Task -> sha256 of the prompts its sample log holds, in id order (evaluate runs)."""
    out = {}
    for task in tasks:
        for file in sorted(Path(folder).glob(f"samples_{task}_*.jsonl")):
            rows = [row for _, row in json_read.iter_jsonl(file)]
            prompts = [r.get("prompt") for r in sorted(rows, key=lambda r: r.get("id", 0))]
            out[task] = hashlib.sha256(
                json.dumps(prompts, ensure_ascii=False).encode()
            ).hexdigest()[:16]
    return out


def protocol_differences(a: dict, b: dict, tasks) -> list[dict]:
    """Every recorded setting that differs: generation, model and revision, prompt
    source and hashes, dialogue context, metric modes, the judge, the data source."""
    run_a, run_b = a.run.to_dict(), b.run.to_dict()
    fa = _flat({k: run_a.get(k) for k in PROTOCOL})
    fb = _flat({k: run_b.get(k) for k in PROTOCOL})
    diffs = [
        {"field": k, "a": fa.get(k), "b": fb.get(k)}
        for k in sorted(set(fa) | set(fb))
        if fa.get(k) != fb.get(k)
    ]
    ha, hb = prompt_hashes(a.folder, tasks), prompt_hashes(b.folder, tasks)
    for task in tasks:
        if ha.get(task) != hb.get(task):
            diffs.append(
                {
                    "field": f"prompt_sha256.{task}",
                    "a": ha.get(task, "not logged"),
                    "b": hb.get(task, "not logged"),
                }
            )
    return diffs


def _scored(doc: Results) -> dict:
    """Task -> results.json's entry, of the tasks scored with a per-example table."""
    return {k: r.to_dict() for k, r in doc.tasks.items() if r.scorable and r.examples}


def compare_runs(path_a, path_b, *, force: bool = False) -> dict:
    """The comparison of two runs as data (what compare.json holds)."""
    return compare_docs(read_run(path_a), read_run(path_b), force=force)


def compare_docs(a: Results, b: Results, *, force: bool = False) -> dict:
    """The comparison of two runs' results (as read_run reads them)."""
    ta, tb = _scored(a), _scored(b)
    common = [k for k in ta if k in tb]
    if not common:
        raise MeraError(
            f"{a.folder} and {b.folder} share no task scored with per-example "
            "results (runs scored before this version have none: score them again)"
        )
    tasks, totals = {}, []
    for key in common:
        tasks[key], part = compare_task(key, ta[key], tb[key])
        if part:
            totals.append(part)
    differ = {k: t["differing_ids"] for k, t in tasks.items() if t["examples_differ"]}
    if differ and not force:
        shown = "; ".join(f"{k}: ids {', '.join(map(str, ids[:5]))}" for k, ids in differ.items())
        raise MeraError(
            f"the runs were made on different data ({shown}): the same id holds "
            "another example (prompt, gold or meta); pass --force to compare anyway"
        )
    overall = mean_over_tasks(totals)
    if overall:
        overall["difference"] = float(np.mean([s["difference"] for _, s in totals]))
        overall["verdict"] = verdict(overall)
        overall["n_tasks"] = len(totals)
    about_a, about_b = _about(a), _about(b)
    if about_a["model"] == about_b["model"]:  # one model twice: name the runs by folder
        about_a["label"], about_b["label"] = about_a["folder"], about_b["folder"]
    return {
        "a": about_a,
        "b": about_b,
        "gold_private": gold_private(a, b, common),
        "bootstrap": settings(),
        "forced": bool(differ),
        "protocol_differences": protocol_differences(a, b, common),
        "not_compared": {
            "only_in_a": sorted(set(ta) - set(tb)),
            "only_in_b": sorted(set(tb) - set(ta)),
            "not_scored": sorted((set(a.tasks) | set(b.tasks)) - set(ta) - set(tb)),
        },
        "tasks": tasks,
        "overall": overall,
    }


def gold_private(a: Results, b: Results, tasks) -> dict | None:
    """compare.json's and compare.html's mark: per-example outcomes of a private split
    (who got which example right) give its gold answers back, so the files are local only."""
    from mera_multi_hf.reporting.submission import LOCAL_ONLY, gold_derived

    private = sorted({k for doc in (a, b) for k in tasks if gold_derived(doc.tasks[k])})
    if not private:
        return None
    return {
        "local_only": LOCAL_ONLY,
        "tasks": private,
        "files": ["compare.json", "compare.html"],
        "note": "the per-example outcomes of these tasks derive from a private split's gold "
        "answers: never upload or publish these files",
    }


def _about(doc: Results) -> dict:
    run = doc.run
    return {
        "folder": doc.folder,
        "run_id": run.run_id,
        "model": run.model,
        "mode": run.mode,
        "label": str(run.model),
    }


def _num(x, digits: int = 4) -> str:
    return "—" if x is None else f"{x:+.{digits}f}" if digits == 4 else f"{x:.{digits}g}"


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


def write_report(
    out, stem: str, text: str, png: bytes, doc: dict, *, inputs=(), extra: dict | None = None
) -> None:
    """Write ``<stem>.md/.png/.json`` into ``out``, a folder of reports (outputs.add_files:
    a folder holding anything else is refused; ``inputs``: the run folders read), and
    print the text."""
    from mera_multi_hf.core.outputs import add_files

    files = {
        f"{stem}.md": text,
        f"{stem}.png": png,
        f"{stem}.json": json.dumps(doc, ensure_ascii=False, indent=2) + "\n",
        **(extra or {}),
    }
    written = add_files(out, files, kind="report", inputs=inputs)
    print(text)
    print(f"wrote {', '.join(written)} to {out}")


@dataclass
class CompareOptions:
    """The options of `mera-multi compare`."""

    run_a: str | None = opt(
        None,
        "a run folder (evaluate or score) or its results.json",
        positional=True,
        metavar="RUN_A",
    )
    run_b: str | None = opt(None, "the other run", positional=True, metavar="RUN_B")
    out: str = opt("compare", "folder for compare.md/.json/.png/.html (default: compare)")
    force: bool = opt(
        False, "compare even where the same id holds different examples in the two runs"
    )
    overwrite: bool = opt(False, OVERWRITE_HELP)


def cmd_compare(options: CompareOptions) -> int:
    from mera_multi_hf.reporting.compare_page import PAGE_NAME, compare_page

    a, b = read_run(options.run_a), read_run(options.run_b)
    result = compare_docs(a, b, force=options.force)
    write_report(
        options.out,
        "compare",
        markdown(result),
        chart_png(result),
        result,
        inputs=[options.run_a, options.run_b],
        extra={PAGE_NAME: compare_page(result, a, b)},
    )
    return 0


def add_parser(sub) -> None:
    add_command(
        sub,
        "compare",
        CompareOptions,
        cmd_compare,
        help="is the difference between two runs real? (paired intervals, McNemar, "
        "protocol differences)",
        description=__doc__.split("\n\n")[1].replace("\n", " "),
    )
