"""The uncertainty of every score: a standard error and a seeded 95% bootstrap interval,
resampled by cluster.

Examples of one cluster are not independent (the pairs of one ruHHH image-question, the
questions of one ruTiE dialogue), so they are resampled together; the cluster key is the
task declaration's ``cluster_by``. Every score here is a ratio of per-cluster sums
(a mean metric: the sum of the values over the number of examples; a group metric: the
groups all right over the number of groups), so one resampling of the clusters, a matrix
of counts W, gives every metric at once: ``(W @ num) / (W @ den)``. The same W serves all
metrics of a task (its task score is their mean, resample by resample), and the totals
over tasks average the tasks' resamples index by index (tasks are independent samples).

The standard error is the cluster-robust one of a ratio; with one example per cluster it
is the plain standard error of a mean, sd(ddof=1)/sqrt(n), as lm-evaluation-harness
reports it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import cache

import numpy as np

from mera_multi_hf.scoring.registry import GROUP_OF

SEED = 20250601  # the bootstrap's seed, recorded in results.json
RESAMPLES = 2000  # resamples per interval
LEVEL = 0.95
CELLS_PER_CHUNK = 4_000_000  # resample-by-cluster counts held at once (memory bound)


def settings() -> dict:
    """How the intervals were made: recorded with every run."""
    return {
        "method": "percentile bootstrap over clusters (the task's cluster_by)",
        "seed": SEED,
        "resamples": RESAMPLES,
        "level": LEVEL,
        "stderr": "cluster-robust standard error of the ratio (plain sd/sqrt(n) for "
        "one example per cluster)",
    }


def rng_for(*keys) -> np.random.Generator:
    """A generator fixed by the seed and the names of what is resampled (a task, a
    breakdown row): the same scores always get the same interval."""
    return np.random.default_rng([SEED] + [zlib.crc32(str(k).encode("utf-8")) for k in keys])


@dataclass
class Units:
    """One score as per-cluster sums: value = sum(num) / sum(den)."""

    num: np.ndarray
    den: np.ndarray
    n: int  # examples (or groups, for a group metric) behind it

    @property
    def value(self) -> float:
        total = self.den.sum()
        return float(self.num.sum() / total) if total else float("nan")


def stderr(units: Units) -> float | None:
    """Cluster-robust standard error of the ratio; None with fewer than two clusters."""
    c = len(units.num)
    if c < 2 or not units.den.sum():
        return None
    r = units.num.sum() / units.den.sum()
    resid = units.num - r * units.den
    return float(np.sqrt(c / (c - 1) * np.sum(resid**2)) / units.den.sum())


def cluster_counts(rng: np.random.Generator, n_clusters: int, size: int) -> np.ndarray:
    """(size, n_clusters): how often each cluster is drawn in each resample."""
    draws = rng.integers(0, n_clusters, size=(size, n_clusters))
    draws += np.arange(size)[:, None] * n_clusters
    return np.bincount(draws.ravel(), minlength=size * n_clusters).reshape(size, n_clusters)


def replicates(
    units: dict[str, Units], rng: np.random.Generator, resamples: int = RESAMPLES
) -> dict[str, np.ndarray]:
    """Each score over the same resamples of the clusters (all units share the clusters)."""
    if not units:
        return {}
    n_clusters = len(next(iter(units.values())).num)
    # num may be (clusters, k): k datasets of the same clusters at once (the simulations)
    out = {name: np.full((resamples,) + u.num.shape[1:], np.nan) for name, u in units.items()}
    if n_clusters == 0:
        return out
    whole = {name: _whole_sums(u, n_clusters) for name, u in units.items()}
    step = max(1, CELLS_PER_CHUNK // n_clusters)
    for start in range(0, resamples, step):
        counts = cluster_counts(rng, n_clusters, min(step, resamples - start))
        w = None if all(whole.values()) else counts.astype(np.float64)
        made: dict = {}  # each distinct vector summed once (a task's scores share den)
        with np.errstate(invalid="ignore", divide="ignore"):
            for name, u in units.items():
                weights, (num, den) = (counts, whole[name]) if whole[name] else (w, (u.num, u.den))
                den = _summed(weights, den, made).reshape((-1,) + (1,) * (u.num.ndim - 1))
                out[name][start : start + len(counts)] = _summed(weights, num, made) / den
    return out


def _summed(weights: np.ndarray, values: np.ndarray, made: dict) -> np.ndarray:
    """``weights @ values``, once for equal values (``made``: the products so far)."""
    key = (values.dtype.str, values.shape, values.tobytes())
    if key not in made:
        made[key] = weights @ values
    return made[key]


def _whole_sums(units: Units, n_clusters: int) -> tuple | None:
    """num and den as integers when every value is a whole number (counts of right
    answers, of examples, of groups: the usual case), else None (the float product).
    Their resampled sums are then exact (each under n_clusters times the largest value,
    itself under 2**53), so the very bits of the float product, which is exact too but
    goes through the BLAS: its worker threads spin for a while after each product, a
    tenth of a second of CPU for a run's intervals."""
    parts = (units.num, units.den)
    if not all((p == np.round(p)).all() for p in parts):  # (NaN too; inf: just below)
        return None
    if max(float(np.abs(p).max(initial=0)) for p in parts) * n_clusters >= 2**53:
        return None
    return tuple(p.astype(np.int64) for p in parts)


def percentile_interval(reps: np.ndarray) -> tuple:
    """The LEVEL percentile interval of resamples (along the first axis)."""
    alpha = (1 - LEVEL) / 2
    ordered = np.sort(reps, axis=0)
    return tuple(_linear_quantile(ordered, q) for q in (alpha, 1 - alpha))


def _linear_quantile(ordered: np.ndarray, q: float):
    """``np.quantile(values, q, axis=0)`` of sorted values, its default ("linear") method
    step for step, so the same bits: np.quantile itself imports numpy.ma (a tenth of a
    second) for the ``np.unique`` of its partition."""
    n = ordered.shape[0]
    virtual = (n - 1) * np.float64(q)
    below = int(np.floor(virtual))
    if virtual >= n - 1:  # (numpy's bounds: the last value, or the first)
        below = above = n - 1
    elif virtual < 0:
        below = above = 0
    else:
        above = below + 1
    gamma = virtual - np.float64(below)
    low, high = ordered[below], ordered[above]
    step = high - low
    return high - step * (1 - gamma) if gamma >= 0.5 else low + step * gamma


def describe(reps: np.ndarray, se: float | None, *, cluster: str, n_clusters: int, n: int) -> dict:
    """The uncertainty record of one score (the shape results.json, the chart and compare
    read)."""
    finite = reps[np.isfinite(reps)]
    low, high = (
        percentile_interval(finite)
        if finite.size and n_clusters > 1
        else (float("nan"), float("nan"))
    )  # one cluster: nothing to resample
    return {
        "stderr": _num(se),
        "low": _num(low),
        "high": _num(high),
        "level": LEVEL,
        "cluster": cluster,
        "n_clusters": int(n_clusters),
        "n": int(n),
    }


def _num(x) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def combined_stderr(parts: list[float | None]) -> float | None:
    """Stderr of the mean of independent scores."""
    if not parts or any(p is None for p in parts):
        return None
    return float(np.sqrt(np.sum(np.square(parts))) / len(parts))


# ----------------------------------------------------------------------------------
# Per-example tables: what every interval (and `mera-multi compare`) is computed from.

CLUSTER_KEYS = ("example", "group", "dialogue")


def cluster_keys(task, examples) -> list[int]:
    """Each example's cluster, by the declaration's ``cluster_by``."""
    if task.cluster_by == "group":
        return [e.group for e in examples]
    if task.cluster_by == "dialogue":
        from mera_multi_hf.tasks.dialogue import positions

        where = positions(task, examples)
        return [where[e.id][0] for e in examples]
    if task.cluster_by != "example":
        from mera_multi_hf.core.errors import MeraError

        raise MeraError(
            f"{task.key}: cluster_by {task.cluster_by!r} is not one of {', '.join(CLUSTER_KEYS)}"
        )
    return [e.id for e in examples]


def reference_hash(example) -> str:
    """What the example is (prompt, gold, meta): two runs pair an id only where it matches."""
    import hashlib
    import json

    payload = json.dumps(
        [example.id, example.prompt, example.gold, example.meta],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def example_table(task, examples, scores: dict) -> dict:
    """The per-example scores of one task with ids, groups, clusters, breakdown keys and
    prompt variants, as columns (results.json keeps it; compare pairs two runs by its ids)."""
    return {
        "cluster_by": task.cluster_by,
        "id": [e.id for e in examples],
        "group": [e.group for e in examples],
        "cluster": cluster_keys(task, examples),
        "breakdown": {
            name: [e.breakdown.get(name) for e in examples] for name, _ in task.breakdowns
        },
        "ref": [reference_hash(e) for e in examples],
        # the prompt variant of each example and the stratum it is counted within
        "prompt_variant": [e.prompt_variant for e in examples],
        "prompt_stratum": [e.prompt_stratum for e in examples],
        "scores": {m: np.asarray(s).tolist() for m, s in scores.items()},
    }


def table_units(table: dict, names, idx=None, scores=None) -> dict[str, Units]:
    """Each named score of the rows ``idx`` (all rows by default) as per-cluster sums.
    ``scores``: per-example arrays to use instead of the table's (another run's, paired)."""
    cluster = np.asarray(table["cluster"])
    idx = np.arange(len(cluster)) if idx is None else np.asarray(idx, dtype=int)
    _, inv = np.unique(cluster[idx], return_inverse=True)
    n_clusters = int(inv.max()) + 1 if len(inv) else 0
    scores = (
        scores
        if scores is not None
        else {m: np.asarray(v, dtype=float) for m, v in table["scores"].items()}
    )
    out = {}
    for name in names:
        of = GROUP_OF.get(name)
        if of and of in scores:
            out[name] = _group_units(
                scores[of][idx], np.asarray(table["group"])[idx], inv, n_clusters
            )
        elif name in scores:
            out[name] = Units(
                np.bincount(inv, weights=scores[name][idx], minlength=n_clusters),
                np.bincount(inv, minlength=n_clusters).astype(float),
                len(idx),
            )
    return out


def _group_units(values, groups, inv, n_clusters) -> Units:
    """A group metric: a group counts 1 when every example of it is right."""
    keys, g_inv = np.unique(groups, return_inverse=True)
    g_cluster = np.empty(len(keys), dtype=int)
    g_cluster[g_inv] = inv  # groups lie inside clusters (cluster_by is group or coarser)
    wrong = np.bincount(g_inv, weights=np.asarray(values) < 1, minlength=len(keys))
    per_group = (wrong == 0).astype(float)
    return Units(
        np.bincount(g_cluster, weights=per_group, minlength=n_clusters),
        np.bincount(g_cluster, minlength=n_clusters).astype(float),
        len(keys),
    )


# ----------------------------------------------------------------------------------
# A task result's intervals, and the totals over tasks.


def score_names(result) -> list[str]:
    """The metrics whose mean is the task score (``result``: a TaskResult)."""
    return list(result.task_score_metrics or result.metrics or {})


def _record(u: Units, reps: np.ndarray, cluster: str) -> dict:
    return describe(reps, stderr(u), cluster=cluster, n_clusters=len(u.num), n=u.n)


def mean_of(units: list[Units], reps: list[np.ndarray]) -> tuple[np.ndarray, float | None]:
    """The mean of several scores of the same clusters: its resamples and its
    cluster-robust standard error (linearised)."""
    influence = sum((u.num - u.value * u.den) / u.den.sum() for u in units) / len(units)
    c = len(influence)
    se = float(np.sqrt(c / (c - 1) * np.sum(influence**2))) if c > 1 else None
    return np.mean(reps, axis=0), se


# Resamples made for a task, by its name and the digest of its table: the summary's
# totals reuse the task score's resamples instead of drawing them again (same seed, same
# result either way).
_MADE: dict[tuple, tuple] = {}


def _digest(task: str, table: dict, names) -> tuple:
    import hashlib

    h = hashlib.sha1()
    for column in (table["cluster"], table["group"], *(table["scores"].get(m, ()) for m in names)):
        h.update(np.asarray(column, dtype=float).tobytes() + b"|")
    return (task, tuple(names), h.hexdigest())


def _task_reps(result, names) -> tuple[dict, dict]:
    key = _digest(result.task, result.examples, names)
    if key not in _MADE:
        units = table_units(result.examples, names)
        if len(_MADE) > 64:
            _MADE.clear()
        _MADE[key] = (units, replicates(units, rng_for(result.task)))
    return _MADE[key]


def _every_metric(result) -> list[str]:
    return [*result.metrics, *result.judge, *result.unofficial]


def task_score_replicates(result) -> tuple[float, np.ndarray, dict]:
    """The task score's resamples (the same ones every time for the same scores), and
    its uncertainty record (``result``: a scored TaskResult with its examples table)."""
    table, names = result.examples, score_names(result)
    units, reps = _task_reps(result, _every_metric(result) or names)
    parts = [m for m in names if m in units]
    value = float(np.mean([units[m].value for m in parts]))
    mean_reps, se = mean_of([units[m] for m in parts], [reps[m] for m in parts])
    first = units[parts[0]]
    record = describe(
        mean_reps, se, cluster=table["cluster_by"], n_clusters=len(first.num), n=len(table["id"])
    )
    return value, mean_reps, record


def add_task_uncertainty(result) -> None:
    """Give a scored TaskResult (with its ``examples`` table) the ``uncertainty`` of
    every metric, the ``task_score_uncertainty`` and each breakdown row's."""
    table, cluster = result.examples, result.examples["cluster_by"]
    names = _every_metric(result)
    units, reps = _task_reps(result, names)
    result.uncertainty = {m: _record(units[m], reps[m], cluster) for m in names if m in units}
    result.task_score_uncertainty = task_score_replicates(result)[2]
    scores = {m: np.asarray(v, dtype=float) for m, v in table["scores"].items()}  # once
    for bname, rows in result.breakdown.items():
        keys = np.asarray(table["breakdown"][bname], dtype=object)
        for key, agg in rows.items():
            # only the metrics the row shows get an interval: none is resampled in vain
            shown = [m for m in names if m in agg]
            u = table_units(table, shown, np.flatnonzero(keys == key), scores)
            r = replicates(u, rng_for(result.task, bname, key))
            agg["uncertainty"] = {m: _record(u[m], r[m], cluster) for m in u}


def normal_interval(units: Units, cluster: str) -> dict:
    """A score's interval without resampling, for the many small tables (a task's prompt
    variants): value ± z * the cluster-robust standard error, kept within [0, 1] (every
    score is a share); the same record as the bootstrap's, ``method`` "normal"."""
    return normal_record(units.value, stderr(units), cluster, len(units.num), units.n)


@cache
def _normal_z() -> float:
    """The normal quantile of the LEVEL interval (1.96 at 0.95); statistics loads on first
    use, not at import."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + LEVEL / 2)


def normal_record(value: float, se: float | None, cluster: str, n_clusters: int, n: int) -> dict:
    """:func:`normal_interval`'s record from a score's value and standard error."""
    half = None if se is None else _normal_z() * se
    return {
        "stderr": _num(se),
        "low": None if half is None else max(0.0, value - half),
        "high": None if half is None else min(1.0, value + half),
        "level": LEVEL,
        "cluster": cluster,
        "n_clusters": int(n_clusters),
        "n": int(n),
        "method": "normal",
    }


def mean_over_tasks(parts: list[tuple[np.ndarray, dict]]) -> dict | None:
    """The uncertainty of a mean of task scores: the tasks' resamples averaged index by
    index (independent samples), the stderrs combined."""
    if not parts:
        return None
    value_reps = np.mean([reps for reps, _ in parts], axis=0)
    records = [rec for _, rec in parts]
    clusters = sorted({rec["cluster"] for rec in records})
    return describe(
        value_reps,
        combined_stderr([r["stderr"] for r in records]),
        cluster="+".join(clusters),
        n_clusters=sum(r["n_clusters"] for r in records),
        n=sum(r["n"] for r in records),
    )


def add_summary_uncertainty(summary, scored: list) -> None:
    """``uncertainty`` on the summary's (a Summary) modality, overall and official_total
    entries; ``scored``: the scored TaskResults."""
    parts = {r.task: task_score_replicates(r)[1:] for r in scored if r.examples}
    by = {"overall": list(scored), "official_total": [r for r in scored if not r.public]}
    for modality, entry in summary.modality.items():
        picked = [parts[r.task] for r in scored if r.modality == modality and r.task in parts]
        entry["uncertainty"] = mean_over_tasks(picked)
    for name, chosen in by.items():
        getattr(summary, name)["uncertainty"] = mean_over_tasks(
            [parts[r.task] for r in chosen if r.task in parts]
        )
