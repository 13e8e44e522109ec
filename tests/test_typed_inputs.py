"""Typed inputs: a metric's compute refuses what evaluate would silently reshape (a string
split into its characters, float group ids truncated into one group, columns of
different lengths) with a ValueError sentence."""

from __future__ import annotations

import numpy as np
import pytest

from mera_multi_hf import load_metric
from mera_multi_hf.scoring.metric_groups import group_mean
from mera_multi_hf.scoring.metric_inputs import check_batch


@pytest.fixture(scope="module")
def metrics():
    return {name: load_metric(name) for name in ("exact_match", "group_exact_match", "slot_f1")}


@pytest.mark.parametrize(
    "name, inputs, words",
    [
        (
            "exact_match",
            dict(predictions="AB", references="AA"),
            ["`predictions` must be a list", "'AB'"],
        ),
        ("exact_match", dict(predictions=["A"], references="A"), ["`references` must be a list"]),
        (
            "exact_match",
            dict(predictions=["A", "B"], references=["A"]),
            ["pair up one to one", "predictions 2, references 1"],
        ),
        (
            "group_exact_match",
            dict(predictions=["A", "B"], references=["A", "A"], group_ids=[0.0, 0.5]),
            ["`group_ids[0]` is float 0.0", "must be integers"],
        ),
        (
            "group_exact_match",
            dict(predictions=["A", "B"], references=["A", "A"], group_ids=[0]),
            ["group_ids 1"],
        ),
        (
            "slot_f1",
            dict(predictions='{"intent": "a", "slots": []}', references=['{"intent": "a"}']),
            ["`predictions` must be a list"],
        ),
    ],
)
def test_compute_refuses_misshapen_inputs(metrics, name, inputs, words):
    with pytest.raises(ValueError) as caught:
        metrics[name].compute(**inputs)
    assert all(w in str(caught.value) for w in words), caught.value


def test_well_typed_inputs_keep_their_numbers(metrics):
    assert metrics["exact_match"].compute(predictions=["A", "B"], references=["A", "A"]) == {
        "exact_match": 0.5
    }
    assert (
        metrics["group_exact_match"].compute(
            predictions=["A", "B"], references=["A", "A"], group_ids=np.array([0, 1])
        )["group_exact_match"]
        == 0.5
    )


def test_the_package_functions_check_the_same():
    with pytest.raises(ValueError, match="float64"):
        group_mean([1, 1], np.array([0.0, 0.5]))
    assert group_mean([1, 1], ["x", "x"]) == 1.0  # ids that sort, not numbers to truncate
    with pytest.raises(ValueError, match="bool"):
        check_batch({"group_ids": [1, True]})
    check_batch({"predictions": ("A",), "references": np.array(["A"]), "group_ids": None})
