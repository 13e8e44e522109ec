"""Uncertainty: the plain stderr against lm-evaluation-harness's, the clustered bootstrap
interval's coverage in simulation (and the naive one's under-coverage with strong
clusters), and the intervals a scored task and its totals carry."""

from __future__ import annotations

import time

import numpy as np
import pytest

from mera_multi_hf.data.examples import make_examples
from mera_multi_hf.data.loading import load_task
from mera_multi_hf.scoring import uncertainty as U
from mera_multi_hf.scoring.score import score_task, summarize
from mera_multi_hf.tasks.table import TASKS, get_task

FIELDS = {"stderr", "low", "high", "level", "cluster", "n_clusters", "n"}


@pytest.mark.parametrize(
    "values",
    [
        [1, 0, 1, 1, 0, 0, 1],
        [0.2, 0.9, 0.4, 0.4, 1.0],
        list(np.random.default_rng(3).integers(0, 2, 500)),
    ],
)
def test_plain_stderr_equals_lm_eval_mean_stderr(values):
    from lm_eval.api.metrics import mean_stderr

    x = np.asarray(values, dtype=float)
    units = U.Units(x, np.ones(len(x)), len(x))  # one example per cluster
    assert U.stderr(units) == pytest.approx(mean_stderr(list(x)), rel=1e-12)


def _coverage(rng, *, n_sets, clusters, size, rate, concentration, resamples=1000):
    """Share of simulated datasets (known rate, clusters of correlated examples) whose
    clustered / naive (example-level) bootstrap interval covers the rate."""
    p = rng.beta(rate * concentration, (1 - rate) * concentration, size=(clusters, n_sets))
    right = rng.binomial(size, p).astype(float)  # per cluster, per dataset
    per_example = (np.arange(size)[None, :, None] < right[:, None, :]).reshape(-1, n_sets)
    covered = {}
    for name, num, den in [
        ("clustered", right, np.full(clusters, float(size))),
        ("naive", per_example.astype(float), np.ones(clusters * size)),
    ]:
        reps = U.replicates({"x": U.Units(num, den, clusters * size)}, rng, resamples)["x"]
        low, high = U.percentile_interval(reps)
        covered[name] = float(np.mean((low <= rate) & (rate <= high)))
    return covered


def test_clustered_interval_covers_and_naive_undercovers_with_strong_clusters():
    started = time.monotonic()
    rng = np.random.default_rng(1)
    # strong clusters: intra-cluster correlation 1/3, six examples per cluster;
    # 25 x 20 = 500 datasets, each chunk of 20 with its own resampling draws
    strong = [
        _coverage(rng, n_sets=20, clusters=150, size=6, rate=0.6, concentration=2.0)
        for _ in range(25)
    ]
    clustered = np.mean([c["clustered"] for c in strong])
    naive = np.mean([c["naive"] for c in strong])
    assert 0.93 <= clustered <= 0.97, clustered
    assert naive < 0.88, naive  # the naive interval ignores the clusters: far too narrow
    # without clusters (independent examples) the naive one is right too
    flat = _coverage(rng, n_sets=500, clusters=300, size=1, rate=0.3, concentration=1e6)
    assert 0.93 <= flat["naive"] <= 0.97, flat
    assert time.monotonic() - started < 60


def _scored(key, answer):
    task = get_task(key)
    examples = make_examples(task, load_task(task, source="sample", split="test"))
    return score_task(task, examples, {e.id: answer(e) for e in examples})


def test_every_metric_breakdown_task_score_and_total_has_an_interval():
    scored = _scored("ruhhh_image", lambda e: "A" if e.id % 3 else "B")
    result = scored.to_dict()  # as results.json holds it
    for metric, value in result["metrics"].items():
        u = result["uncertainty"][metric]
        assert set(u) == FIELDS and u["cluster"] == "group" and u["low"] <= value <= u["high"]
    assert result["uncertainty"]["group_exact_match"]["n"] == result["n_groups"]
    assert set(result["task_score_uncertainty"]) == FIELDS
    for rows in result["breakdown"].values():
        for row in rows.values():
            assert set(row["uncertainty"]) == {m for m in row if m in result["metrics"]}
    summary = summarize([scored])
    for entry in [*summary.modality.values(), summary.overall, summary.official_total]:
        # one task: the total's resamples are that task's score's (resampled consistently)
        assert entry["uncertainty"] == result["task_score_uncertainty"]


def test_example_tasks_give_lm_evals_stderr_and_intervals_are_reproducible():
    from lm_eval.api.metrics import mean_stderr

    first = _scored("weird", lambda e: "A").to_dict()
    again = _scored("weird", lambda e: "A").to_dict()
    u = first["uncertainty"]["exact_match"]
    assert u["cluster"] == "example" and u["n_clusters"] == first["n_examples"]
    values = first["examples"]["scores"]["exact_match"]
    assert u["stderr"] == pytest.approx(mean_stderr(values))
    assert again["uncertainty"] == first["uncertainty"]  # seeded


def test_cluster_keys_come_from_the_declaration():
    assert {t.cluster_by for t in TASKS.values()} <= set(U.CLUSTER_KEYS)
    assert {t.key for t in TASKS.values() if t.cluster_by == "group"} == {
        t.key for t in TASKS.values() if t.has_groups
    }
    assert {t.key for t in TASKS.values() if t.cluster_by == "dialogue"} == {
        t.key for t in TASKS.values() if t.dialogue
    }
    result = _scored("rutie_image", lambda e: "A").to_dict()
    table = result["examples"]
    assert result["uncertainty"]["exact_match"]["cluster"] == "dialogue"
    assert (
        result["uncertainty"]["exact_match"]["n_clusters"]
        == len(set(table["cluster"]))
        < len(table["id"])
    )


def test_model_index_carries_each_standard_error():
    import yaml

    from mera_multi_hf.reporting.reports import model_index

    result = _scored("weird", lambda e: "A")
    block = yaml.safe_load(model_index([result], "m", {"weird": True}))
    metrics = {m["type"]: m["value"] for m in block["model-index"][0]["results"][0]["metrics"]}
    assert metrics["exact_match"] == round(result.metrics["exact_match"], 4)
    assert metrics["exact_match_stderr"] == round(result.uncertainty["exact_match"]["stderr"], 4)


@pytest.mark.parametrize("n", [1, 2, 3, 19, 20, 21, 240, 2000])
@pytest.mark.parametrize("columns", [None, 3])
def test_the_percentile_interval_is_numpys_quantile_to_the_bit(n, columns):
    rng = np.random.default_rng(n)
    shape = (n,) if columns is None else (n, columns)
    for values in (
        rng.random(shape),
        rng.integers(0, 4, shape) / 7,
        np.round(rng.normal(size=shape), 2),
    ):
        alpha = (1 - U.LEVEL) / 2
        want = np.quantile(values, [alpha, 1 - alpha], axis=0)
        got = U.percentile_interval(values)
        assert all(np.array_equal(np.asarray(g), w) for g, w in zip(got, want))


def _float_replicates(units, rng, resamples=U.RESAMPLES):
    """The resamples as the float product of the counts gives them (the method's text),
    a chunk of resamples at a time as :func:`U.replicates` draws them."""
    n_clusters = len(next(iter(units.values())).num)
    step, chunks = max(1, U.CELLS_PER_CHUNK // n_clusters), []
    for start in range(0, resamples, step):
        w = U.cluster_counts(rng, n_clusters, min(step, resamples - start)).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            chunks.append(
                {
                    name: (w @ u.num) / (w @ u.den).reshape((-1,) + (1,) * (u.num.ndim - 1))
                    for name, u in units.items()
                }
            )
    return {name: np.concatenate([c[name] for c in chunks]) for name in units}


@pytest.mark.parametrize("n_clusters", [1, 2, 7, 240, 2001])
def test_whole_counts_resample_to_the_bits_of_the_float_product(n_clusters):
    rng = np.random.default_rng(n_clusters)
    den = rng.integers(0, 5, n_clusters).astype(float)  # a cluster may hold no example
    units = {
        "counts": U.Units(np.minimum(rng.integers(0, 5, n_clusters), den), den, n_clusters),
        "shares": U.Units(den * rng.random(n_clusters), den, n_clusters),  # the float path
        "columns": U.Units(rng.integers(0, 3, (n_clusters, 4)).astype(float), den, 9),
    }
    assert U._whole_sums(units["counts"], n_clusters) is not None
    assert U._whole_sums(units["shares"], n_clusters) is None
    for odd in (np.nan, np.inf):  # not whole numbers: the float product
        assert U._whole_sums(U.Units(np.array([odd, 1.0]), np.ones(2), 2), 2) is None
    got = U.replicates(units, U.rng_for("t", n_clusters))
    want = _float_replicates(units, U.rng_for("t", n_clusters))
    for name in units:
        assert np.array_equal(got[name], want[name], equal_nan=True), name
