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

from mera_multi_hf.scoring.prompt_effect import permutation_test
from mera_multi_hf.scoring.registry import GROUP_OF, averaged_over_examples
from mera_multi_hf.scoring.uncertainty import SEED, normal_interval, table_units
from mera_multi_hf.tasks.variants import asks_reasoning_before_marker

# The metrics shown beside each other for variants that ask for the answer after a marker.
MARKER_METRICS = ("exact_match", "exact_match_extracted")


def prompt_table(task, examples, result) -> dict:
    """The prompt table of a scored TaskResult (``result``, with its examples table) over
    ``examples`` (the split's, in the table's order)."""
    # means over examples only: a group (ruHHH's pairs) is asked in several variants
    names = averaged_over_examples([*result.metrics, *result.judge, *result.unofficial])
    table = _as_arrays(result.examples, names)
    positions, numbers = _positions(table["prompt_variant"])
    rows = []
    for variant, idx in positions.items():
        example = examples[idx[0]]  # its first
        units = table_units(table, names, idx, table["scores"])
        rows.append(
            {
                "variant": variant,
                "number": example.prompt_variant_number,
                "n_examples": len(idx),
                "asks_reasoning_before_marker": asks_reasoning_before_marker(example.instruction),
                "metrics": {m: units[m].value for m in names if m in units},
                "uncertainty": _intervals(units, table),
            }
        )
    return {
        "n_variants": len(rows),
        "strata": task.prompt_block or None,
        "variants_per_stratum": _per_stratum(table) if task.prompt_block else None,
        "variants": rows,
        "marker": _marker_share(rows, table, names),
        "effect": _effect(task, result, table, numbers),
    }


def _as_arrays(table: dict, names) -> dict:
    """The examples table with the columns read here as arrays, converted once."""
    return {
        **table,
        "cluster": np.asarray(table["cluster"]),
        "group": np.asarray(table["group"]),
        "scores": {m: np.asarray(v, dtype=float) for m, v in table["scores"].items()},
    }


def _positions(variants: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each variant's rows (ascending), the variants in order of first appearance; and
    each row's variant number (1-based, in that order)."""
    names, first, inverse = np.unique(variants, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(first)
    by_code = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=len(names)))
    rows = np.split(by_code, bounds[:-1])
    number = np.empty(len(names), dtype=int)
    number[order] = np.arange(1, len(names) + 1)
    return {str(names[k]): rows[k] for k in order}, number[inverse]


def _per_stratum(table: dict) -> dict[str, int]:
    """Stratum -> its number of distinct variants."""
    pairs = set(zip(table["prompt_stratum"], table["prompt_variant"]))
    counts: dict[str, int] = {}
    for stratum, _ in pairs:
        counts[str(stratum)] = counts.get(str(stratum), 0) + 1
    return dict(sorted(counts.items()))


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
    idx = np.flatnonzero(np.isin(np.asarray(table["prompt_variant"]), marked))
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


def _effect(task, result, table: dict, numbers: np.ndarray) -> dict | None:
    """Whether the score depends on the variant (None: no per-example score to test);
    the variants go in as their numbers (integers: cheap to compare), as the table shows
    them."""
    metric = _tested_metric(result, table["scores"])
    if metric is None:
        return None
    strata = table["prompt_stratum"] if task.prompt_block else None
    effect = permutation_test(
        table["scores"][metric],
        numbers,
        strata,
        table["cluster"],
        seed=SEED,
    )
    return {"metric": metric, **effect.to_dict(), "seed": SEED, "sentence": effect.sentence()}
