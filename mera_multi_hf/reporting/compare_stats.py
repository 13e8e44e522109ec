"""compare's statistics, task by task: the two runs' per-example tables paired by id, each
metric's difference A - B with its paired bootstrap interval (the same resamples for both
runs), the exact McNemar p-value for 0/1 metrics, and the verdict drawn from the interval.
"""

from __future__ import annotations

import numpy as np

from mera_multi_hf.scoring.registry import GROUP_OF, METRICS, averaged_over_examples
from mera_multi_hf.scoring.uncertainty import (
    Units,
    describe,
    mean_of,
    replicates,
    rng_for,
    stderr,
    table_units,
)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of the discordant pairs at 1/2."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    # the tail sum of C(n, k), each term from the one before: exact integers as with
    # math.comb, without computing every C(n, k) anew (cubic in n: seconds at n = 7,000)
    tail, term = 0, 1
    for k in range(min(only_a, only_b) + 1):
        tail += term
        term = term * (n - k) // (k + 1)
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
    if "prompt_variant" in ta and "prompt_variant" in tb:  # both runs record variants
        table["prompt_variant"] = [ta["prompt_variant"][k] for k in rows_a]
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
    for field in ("a", "b", "difference"):  # each run's task score over the paired ids
        score[field] = float(np.mean([out["metrics"][m][field] for m in parts]))
    score["verdict"] = verdict(score)
    out["task_score"] = score
    out["prompt_variants"] = by_variant(table, sa, sb, names, official, key)
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


def by_variant(table, sa, sb, names, official, key) -> dict | None:
    """Per prompt variant (run A's, numbered in order of first appearance): each
    per-example metric of its examples in both runs, the difference with its paired
    interval; ``helps``/``hurts``: the variants where A is better / worse by the first
    task-score metric's per-example one. None when a run records no variants (a folder
    written before they were). Group metrics are left out: a group can span variants."""
    if "prompt_variant" not in table:
        return None
    keys = np.asarray(table["prompt_variant"], dtype=object)
    shown = averaged_over_examples(names)
    metric = next((GROUP_OF.get(m, m) for m in official if GROUP_OF.get(m, m) in shown), None)
    rows = {}
    for number, variant in enumerate(dict.fromkeys(keys), start=1):
        idx = np.flatnonzero(keys == variant)
        records = _metric_records(table, sa, sb, shown, idx, (key, "prompt", variant))[0]
        rows[str(variant)] = {"number": number, "n": len(idx), "metrics": records}
    verdicts = {v: r["metrics"][metric]["verdict"] for v, r in rows.items() if metric}
    return {
        "metric": metric,
        "variants": rows,
        "helps": [v for v, said in verdicts.items() if said == "A better"],
        "hurts": [v for v, said in verdicts.items() if said == "B better"],
    }


def variants_note(compared, runs) -> str | None:
    """One line when the runs are compared without their prompt variants: which run
    (``runs``: (name, folder, task -> results.json entry) each) records none in the
    ``compared`` tasks (written before variants were recorded)."""
    missing = [
        f"{name} ({folder})"
        for name, folder, scored in runs
        if any("prompt_variant" not in scored[k]["examples"] for k in compared)
    ]
    if not missing:
        return None
    return (
        f"not compared per prompt variant: run {' and '.join(missing)} records no prompt "
        "variants (written before they were recorded; score it again to have them)"
    )
