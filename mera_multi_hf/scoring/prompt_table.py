"""A task's prompt table (results.json's ``prompts``): each prompt variant's examples and
scores with their intervals, whether its template asks for reasoning before the answer
marker, and whether the score depends on the wording (a permutation test that shuffles
variants within the declared strata, clusters kept together:
:mod:`~mera_multi_hf.scoring.prompt_effect`).

Where templates ask for the answer after the marker, the whole-answer EM of a model that
follows them is about 0: those variants' share of the task and their EM beside the
extracted EM say how much of a gap the wording explains.
"""

from __future__ import annotations

import numpy as np

from mera_multi_hf.scoring.prompt_effect import _codes, permutation_test
from mera_multi_hf.scoring.registry import GROUP_OF, averaged_over_examples
from mera_multi_hf.scoring.uncertainty import (
    SEED,
    normal_interval,
    normal_record,
    table_units,
)
from mera_multi_hf.tasks.variants import asks_reasoning_before_marker

# The metrics shown beside each other for variants that ask for the answer after a marker.
MARKER_METRICS = ("exact_match", "exact_match_extracted")


def prompt_table(task, examples, result) -> dict:
    """The prompt table of a scored TaskResult (``result``, with its examples table) over
    ``examples`` (the split's, in the table's order)."""
    # means over examples only: a group (ruHHH's pairs) is asked in several variants
    names = averaged_over_examples([*result.metrics, *result.judge, *result.unofficial])
    table = _as_arrays(result.examples)
    codes, firsts = _first_appearance(table["prompt_variant"])
    scores = _by_variant(table, names, codes, len(firsts))
    # the strata numbered once, for the count of variants in each and for the test
    strata = _first_appearance(table["prompt_stratum"]) if task.prompt_block else None
    n_examples, metrics = scores["n_examples"], scores["metrics"]
    rows = []
    for k, first in enumerate(firsts):
        example = examples[first]
        rows.append(
            {
                "variant": str(table["prompt_variant"][first]),
                "number": example.prompt_variant_number,
                "n_examples": n_examples[k],
                "asks_reasoning_before_marker": asks_reasoning_before_marker(example.instruction),
                "metrics": {m: s["value"][k] for m, s in metrics.items()},
                "uncertainty": {
                    m: normal_record(
                        s["value"][k],
                        s["se"][k],
                        table["cluster_by"],
                        s["clusters"][k],
                        n_examples[k],
                    )
                    for m, s in metrics.items()
                },
            }
        )
    return {
        "n_variants": len(rows),
        "strata": task.prompt_block or None,
        "variants_per_stratum": _per_stratum(table, strata, codes) if strata else None,
        "variants": rows,
        "marker": _marker_share(rows, table, names),
        "effect": _effect(result, table, codes, strata[0] if strata else None),
    }


def _as_arrays(table: dict) -> dict:
    """The examples table with the columns read here as arrays, converted once; the
    clusters numbered 0, 1, ... (only which rows share one counts)."""
    n = len(table["cluster"])
    return {
        **table,
        "cluster": _codes(np.fromiter(table["cluster"], int, n))[0],
        "scores": {m: np.fromiter(v, float, n) for m, v in table["scores"].items()},
    }


class _Numbering(dict):
    """Value -> its number in order of first appearance: a missing value is numbered as it
    is met, so one pass of dict look-ups (C loops, no Python code per row) numbers a
    column."""

    def __missing__(self, value) -> int:
        self[value] = number = len(self)
        return number


def _first_appearance(values: list) -> tuple[np.ndarray, list[int]]:
    """Each value's number (0-based, in order of first appearance; a dict, not a sort of
    the texts), and each number's first row."""
    number = _Numbering()
    codes = np.fromiter(map(number.__getitem__, values), int, len(values))
    return codes, [values.index(value) for value in number]


def _by_variant(table: dict, names, codes: np.ndarray, n_variants: int) -> dict:
    """Each variant's examples, and each metric's value, cluster-robust standard error and
    clusters per variant, all variants at once: the units are the (variant, cluster)
    cells, as :func:`~mera_multi_hf.scoring.uncertainty.table_units` makes them for one
    variant's rows (a cluster split between variants counts in each)."""
    cluster, scores = table["cluster"], table["scores"]
    span = int(cluster.max(initial=0)) + 1
    cell_of, cells = _codes(codes * span + cluster)
    cell = {"variant": cells // span, "size": np.bincount(cell_of, minlength=len(cells))}
    cell["examples"] = np.bincount(cell["variant"], weights=cell["size"], minlength=n_variants)
    cell["clusters"] = c = np.bincount(cell["variant"], minlength=n_variants)
    cell["correction"] = c / np.maximum(c - 1, 1)  # c / (c - 1), the same for every metric
    clusters = c.tolist()
    out = {}
    for name in names:  # means over examples: no group metric comes here
        if name in scores:
            value, se = _ratio(
                np.bincount(cell_of, weights=scores[name], minlength=len(cells)), cell
            )
            out[name] = {
                "value": value.tolist(),
                "se": [x if k > 1 else None for x, k in zip(se.tolist(), clusters)],
                "clusters": clusters,
            }
    return {"n_examples": cell["examples"].astype(int).tolist(), "metrics": out}


def _ratio(num, cell: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per variant: the ratio of its cells' sums (``num``: each cell's sum of scores), and
    its cluster-robust standard error (:func:`~mera_multi_hf.scoring.uncertainty.stderr`;
    a variant's clusters are its cells)."""
    variant, examples, n_variants = cell["variant"], cell["examples"], len(cell["clusters"])
    value = np.bincount(variant, weights=num, minlength=n_variants) / examples
    resid = num - value[variant] * cell["size"]
    squares = np.bincount(variant, weights=resid**2, minlength=n_variants)
    return value, np.sqrt(cell["correction"] * squares) / examples


def _per_stratum(table: dict, strata: tuple, codes: np.ndarray) -> dict[str, int]:
    """Stratum -> its number of distinct variants (``strata``: the strata's numbers and
    first rows; ``codes``: the variants' numbers)."""
    stratum, firsts = strata
    span = int(codes.max()) + 1
    pairs = np.bincount(stratum * span + codes, minlength=len(firsts) * span) > 0
    counts = pairs.reshape(len(firsts), span).sum(axis=1)
    names = [str(table["prompt_stratum"][first]) for first in firsts]
    return dict(sorted(zip(names, counts.tolist())))


def _intervals(units: dict, table: dict) -> dict:
    """Each score's interval: the normal one on the cluster-robust standard error (a
    bootstrap per variant would cost a task's scoring about a third more)."""
    return {m: normal_interval(u, table["cluster_by"]) for m, u in units.items()}


def _marker_share(rows: list[dict], table: dict, names) -> dict | None:
    """The variants that ask for the answer after the marker: their share of the task's
    examples, and over them EM beside the extracted EM (None: no such variant)."""
    marked = [r["variant"] for r in rows if r["asks_reasoning_before_marker"]]
    if not marked:
        return None
    idx = np.flatnonzero([v in marked for v in table["prompt_variant"]])  # (np.isin: numpy.ma)
    shown = [m for m in MARKER_METRICS if m in names]
    units = table_units(table, shown, idx, table["scores"])
    return {
        "variants": marked,
        "n_examples": len(idx),
        "share": len(idx) / len(table["prompt_variant"]),
        "metrics": {m: units[m].value for m in shown if m in units},
        "uncertainty": _intervals(units, table),
    }


def _tested_metric(result, scores: dict) -> str | None:
    """The per-example score the test is run on: the first of the task score's metrics
    (a group metric's per-example one)."""
    for name in result.task_score_metrics or list(result.metrics):
        source = GROUP_OF.get(name, name)
        if source in scores:
            return source
    return None


def _effect(result, table: dict, codes: np.ndarray, strata) -> dict | None:
    """Whether the score depends on the variant (None: no per-example score to test);
    the variants, strata and clusters go in as the numbers made here (0, 1, ..., none
    unused: not numbered again), the variants named as the table shows them (``codes`` +
    1)."""
    metric = _tested_metric(result, table["scores"])
    if metric is None:
        return None
    effect = permutation_test(
        table["scores"][metric],
        codes,
        strata,
        table["cluster"],
        names=range(1, int(codes.max(initial=-1)) + 2),
        seed=SEED,
    )
    return {"metric": metric, **effect.to_dict(), "seed": SEED, "sentence": effect.sentence()}
