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
from mera_multi_hf.scoring.uncertainty import SEED, as_arrays, rows_normal
from mera_multi_hf.tasks.variants import asks_reasoning_before_marker

# The metrics shown beside each other for variants that ask for the answer after a marker.
MARKER_METRICS = ("exact_match", "exact_match_extracted")


def prompt_table(task, examples, result) -> dict:
    """The prompt table of a scored TaskResult (``result``, with its examples table) over
    ``examples`` (the split's, in the table's order)."""
    table = as_arrays(result.examples)  # converted once for all the variants' rows
    # means over examples only: a group (ruHHH's pairs) is asked in several variants
    names = averaged_over_examples([*result.metrics, *result.judge, *result.unofficial])
    keys = np.asarray(table["prompt_variant"], dtype=str)  # compared in C, not as objects
    first: dict = {}
    for example in examples:
        first.setdefault(example.prompt_variant, example)
    rows = []
    for variant, example in first.items():  # in order of first appearance
        # a normal interval: a bootstrap per variant would cost as much as the task's own
        idx = np.flatnonzero(keys == variant)
        units, records = rows_normal(table, names, idx)
        rows.append(
            {
                "variant": variant,
                "number": example.prompt_variant_number,
                "n_examples": len(idx),
                "asks_reasoning_before_marker": asks_reasoning_before_marker(example.instruction),
                "metrics": {m: units[m].value for m in names if m in units},
                "uncertainty": records,
            }
        )
    return {
        "n_variants": len(rows),
        "strata": task.prompt_block or None,
        "variants_per_stratum": _per_stratum(examples) if task.prompt_block else None,
        "variants": rows,
        "marker": _marker_share(rows, table, names),
        "effect": _effect(task, result, table),
    }


def _per_stratum(examples) -> dict[str, int]:
    """Stratum -> its number of distinct variants."""
    seen: dict[str, set] = {}
    for example in examples:
        seen.setdefault(str(example.prompt_stratum), set()).add(example.prompt_variant)
    return {stratum: len(variants) for stratum, variants in sorted(seen.items())}


def _marker_share(rows: list[dict], table: dict, names) -> dict | None:
    """The variants that ask for the answer after the marker: their share of the task's
    examples, and over them EM beside the extracted EM (None: no such variant)."""
    marked = [r["variant"] for r in rows if r["asks_reasoning_before_marker"]]
    if not marked:
        return None
    keys = np.asarray(table["prompt_variant"], dtype=str)
    idx = np.flatnonzero(np.isin(keys, marked))
    shown = [m for m in MARKER_METRICS if m in names]
    units, records = rows_normal(table, shown, idx)
    return {
        "variants": marked,
        "n_examples": len(idx),
        "share": len(idx) / len(keys),
        "metrics": {m: units[m].value for m in shown if m in units},
        "uncertainty": records,
    }


def _tested_metric(result, scores: dict) -> str | None:
    """The per-example score the test is run on: the first of the task score's metrics
    (a group metric's per-example one)."""
    for name in result.task_score_metrics or list(result.metrics):
        source = GROUP_OF.get(name, name)
        if source in scores:
            return source
    return None


def _effect(task, result, table: dict) -> dict | None:
    """Whether the score depends on the variant (None: no per-example score to test)."""
    metric = _tested_metric(result, table["scores"])
    if metric is None:
        return None
    strata = table["prompt_stratum"] if task.prompt_block else None
    effect = permutation_test(
        np.asarray(table["scores"][metric], dtype=float),
        table["prompt_variant"],
        strata,
        table["cluster"],
        seed=SEED,
    )
    return {"metric": metric, **effect.to_dict(), "seed": SEED, "sentence": effect.sentence()}
